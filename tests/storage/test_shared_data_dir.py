"""The embedded default with two real servers on one KUMITATE_DATA_DIR (no database server, no LB):
one idempotency key still executes once, because the SQLite claim decides across processes."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import httpx
import pytest

from tests.conftest import start_server, stop_server

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

INGEST = {"uri": "file:data/yana/images/label_0001.png", "brand_name": "獺祭"}


async def post_as_a_client(http: httpx.AsyncClient, url: str, headers: dict[str, str]) -> httpx.Response:
    """POST as a client that honours IN_PROGRESS: a repeat that finds the first call still running is told
    to come back after Retry-After (it waits 0.5 s for it first, which a loaded machine can outlast)."""
    for _ in range(20):
        response = await http.post(url, json=INGEST, headers=headers)
        if response.status_code != 409 or response.json()["error"]["code"] != "IN_PROGRESS":
            return response
        await asyncio.sleep(float(response.headers["Retry-After"]))
    return response


async def test_two_processes_on_one_sqlite_file_execute_a_key_once(tmp_path: Path, seeded_data_dir: Path) -> None:
    first = start_server(tmp_path / "var", tmp_path / "one.log", seeded=seeded_data_dir)
    second = start_server(tmp_path / "var", tmp_path / "two.log")
    try:
        headers = {"Idempotency-Key": "shared-dir"}
        async with httpx.AsyncClient(timeout=60) as http:
            responses = await asyncio.gather(
                *(post_as_a_client(http, f"{(first if i % 2 else second).url}/v1/ingest", headers) for i in range(20))
            )
    finally:
        stop_server(first, second)
    assert [r.status_code for r in responses] == [200] * 20
    assert Counter(r.headers.get("Idempotent-Replayed", "false") for r in responses) == {"true": 19, "false": 1}
    stored = [{k: v for k, v in r.json().items() if k not in ("run_id", "trace_id")} for r in responses]
    assert all(body == stored[0] for body in stored)  # one execution; each replay carries its own ids
    assert all(r.json()["run_id"] == r.headers["x-run-id"] for r in responses)
