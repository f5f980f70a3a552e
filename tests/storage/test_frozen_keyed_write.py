"""A keyed write against a frozen PostgreSQL (issue 45, item 2): its idempotency claim is bounded too.

The claim runs outside the call's context (so outside its commit gate), where no storage bound used to
apply: `save_attendance_rule` with an `Idempotency-Key` waited out the whole freeze (40 s, 58 s) while the
same call without a key answered 503 at the bound. Here PostgreSQL (this module's own cluster) stays frozen
for longer than the bound; the keyed write must answer what the unkeyed one answers, as soon, and once
thawed the same key must run the save exactly once (and replay it after).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import LiveServer, start_server, stop_server
from tests.storage.test_frozen_database import SAVE, frozen, own_postgres

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

__all__ = ["own_postgres"]  # the fixture: this module's own PostgreSQL cluster, frozen only here

DB_TIMEOUT_MS = 3000
GRACE_MS = 1000
FROZEN_S = 10.0
"""How long PostgreSQL stays frozen: well past the bound (3 s, plus the 1 s grace before the connection is cut)."""
THREAD = "frozen-keyed"


@pytest.fixture(scope="module")
def server(own_postgres: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    url, _ = own_postgres
    root = tmp_path_factory.mktemp("frozen-keyed-app")
    live = start_server(
        root / "var",
        root / "server.log",
        KUMITATE_DATABASE_URL=url,
        KUMITATE_DB_TIMEOUT_MS=str(DB_TIMEOUT_MS),
        KUMITATE_COMMIT_GRACE_MS=str(GRACE_MS),
        KUMITATE_SERVICES="attendance",
    )
    yield live
    stop_server(live)


def save(
    url: str, key: str | None, thread: str = THREAD, timeout: float = 30
) -> tuple[int, dict[str, Any], float, httpx.Headers]:
    body = {**SAVE[1], "thread_id": thread}
    headers = {"Idempotency-Key": key} if key else {}
    started = time.monotonic()
    r = httpx.post(url + SAVE[0], json=body, headers=headers, timeout=timeout)
    return r.status_code, r.json(), time.monotonic() - started, r.headers


def history(url: str) -> list[Any]:
    r = httpx.post(
        url + "/v1/attendance/get_attendance_rule", json={"thread_id": THREAD, "include_history": True}, timeout=30
    )
    assert r.status_code == 200, r.text
    return list(r.json()["history"])


def test_a_keyed_write_answers_503_within_the_bound_and_its_key_runs_once_after(
    server: LiveServer, own_postgres: tuple[str, Path]
) -> None:
    _, directory = own_postgres
    with ThreadPoolExecutor(8) as pool:  # warm: pooled connections exist (a new one would fail at connect_timeout)
        warm = [pool.submit(save, server.url, f"warm-{i}" if i % 2 else None, "frozen-warm") for i in range(8)]
        assert [f.result()[0] for f in warm] == [200] * 8
    with frozen(directory), ThreadPoolExecutor(2) as pool:
        frozen_at = time.monotonic()
        keyed = pool.submit(save, server.url, "k-frozen", THREAD, FROZEN_S + 5)
        unkeyed = pool.submit(save, server.url, None, "frozen-unkeyed", FROZEN_S + 5)
        answers = {"keyed": keyed.result(), "unkeyed": unkeyed.result()}
        answered_s = time.monotonic() - frozen_at
        time.sleep(max(0.0, FROZEN_S - answered_s))  # still frozen: both were answered before the database was back
    print("\n" + "; ".join(f"{n}: {a[0]} {a[1]['error']['code']} in {a[2]:.2f} s" for n, a in answers.items()))
    assert answered_s < FROZEN_S, answered_s
    bound_s = (DB_TIMEOUT_MS + GRACE_MS) / 1000
    for name, (status, body, seconds, headers) in answers.items():
        assert status == 503 and body["error"]["code"] == "STORAGE_UNAVAILABLE", (name, status, body)
        assert body["error"]["retryable"] is True and headers["retry-after"], (name, body)
        assert seconds < bound_s + 1.5, (name, seconds)
    # thawed: the same key runs the save (the cut connections are replaced: a retry may meet one more 503)
    thawed = time.monotonic() + 60
    while (first := save(server.url, "k-frozen"))[0] != 200:
        assert first[0] == 503 and first[1]["error"]["code"] == "STORAGE_UNAVAILABLE", first
        assert time.monotonic() < thawed
        time.sleep(0.5)
    assert "idempotent-replayed" not in first[3]
    again = save(server.url, "k-frozen")
    assert again[0] == 200 and again[3]["idempotent-replayed"] == "true"
    assert again[1]["version"] == first[1]["version"]
    assert len(history(server.url)) == 1  # saved once: the frozen attempt left nothing, the replay added nothing
