"""Ids of 2^63 and more on the wire: a client error naming the field, never a 500 (issue 20)."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import LiveServer

pytestmark = pytest.mark.slow

CALLS = [
    ("get_duplicate_candidate_detail", {"check_id": 2**63}),
    ("confirm_duplicate", {"check_id": 2**63, "decision": "skip"}),
    ("restore_duplicate", {"transaction_id": 2**64}),
    ("detect_duplicates", {"transaction_ids": [2**63]}),
]


@pytest.mark.parametrize(("tool", "arguments"), CALLS, ids=[c[0] for c in CALLS])
def test_huge_ids_are_client_errors(live_server: LiveServer, tool: str, arguments: dict[str, object]) -> None:
    response = httpx.post(f"{live_server.url}/v1/household/{tool}", json=arguments, timeout=60)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "BAD_REQUEST"  # the pipeline's code for a schema failure


def test_the_largest_id_is_simply_not_found(live_server: LiveServer) -> None:
    response = httpx.post(
        f"{live_server.url}/v1/household/get_duplicate_candidate_detail", json={"check_id": 2**63 - 1}, timeout=60
    )
    assert response.status_code == 404 and response.json()["error"]["code"] == "NOT_FOUND"
