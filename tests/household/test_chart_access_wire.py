"""Charts on a real server with tokens: only the creator (or an admin) downloads a chart (issue 21)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import LiveServer, start_server, stop_server

pytestmark = pytest.mark.slow

TOKENS = {
    "alice-token": {"principal": "alice", "scopes": ["household"]},
    "bob-token": {"principal": "bob", "scopes": ["household"]},
    "boss-token": {"principal": "boss", "scopes": ["household", "admin"]},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    root: Path = tmp_path_factory.mktemp("charts")
    live = start_server(root / "var", root / "server.log", KUMITATE_TOKENS=json.dumps(TOKENS))
    yield live
    stop_server(live)


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_only_the_creator_and_admin_read_a_chart(server: LiveServer) -> None:
    args = {"year": 2025, "month": 6, "output_format": "image", "image_size": "640x480"}
    with httpx.Client(base_url=server.url, timeout=60) as http:
        made = http.post("/v1/household/get_monthly_household", json=args, headers=_auth("alice-token"))
        assert made.status_code == 200, made.text
        path = f"/api/charts/{made.json()['chart']['chart_id']}"
        assert http.get(path, headers=_auth("alice-token")).status_code == 200
        assert http.get(path, headers=_auth("boss-token")).status_code == 200
        other = http.get(path, headers=_auth("bob-token"))
        assert other.status_code == 404 and other.json()["error"]["code"] == "CHART_NOT_FOUND"
        assert http.get(path).status_code == 401
