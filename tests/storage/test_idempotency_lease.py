"""The lease of a keyed call to a tool without `timeout_ms` (issue 45, leftovers): a claim is held in renewed
pieces of KUMITATE_IDEMPOTENCY_LEASE_MS, so the key of an instance that died mid-call is free again within
that setting (it used to stay IN_PROGRESS for 305 s), while a call that is still running keeps its key for
as long as it runs (up to its whole lease), on both engines."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kumitate.errors import ToolError
from kumitate.policies.idempotency import Stored, lease_s
from kumitate.policies.idempotency_store import IdempotencyStore
from kumitate.serving.deploy import DeploySettings
from kumitate.storage import open_database

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
IDENT = ("t", "p", "k")
RENEWED_S = 2.0

HOLDER = """
import asyncio, sys
from pathlib import Path
from kumitate.serving.deploy import DeploySettings
from kumitate.policies.idempotency import lease_s
from kumitate.policies.idempotency_store import IdempotencyStore
from kumitate.storage import open_database

async def execute():
    print("running", flush=True)
    await asyncio.sleep(600)

deploy = DeploySettings.model_validate({"database_url": sys.argv[2] or None})
store = IdempotencyStore(open_database(Path(sys.argv[1]), deploy), renewed_lease_s=float(sys.argv[3]))
asyncio.run(store.run(("t", "p", "k"), {"n": 1}, 60, execute, lease=lease_s(None)))
"""


class Counter:
    def __init__(self, delay: float = 0.05) -> None:
        self.runs, self.delay = 0, delay

    async def __call__(self) -> tuple[Stored, bool]:
        self.runs += 1
        await asyncio.sleep(self.delay)
        return Stored(200, {"run": self.runs}), True


def store(database_url: str | None, tmp_path: Path) -> IdempotencyStore:
    """A store on its own engine (as another instance has), with a short renewed lease."""
    deploy = DeploySettings.model_validate({"database_url": database_url})
    return IdempotencyStore(open_database(tmp_path, deploy), renewed_lease_s=RENEWED_S)


async def until_free(s: IdempotencyStore, counter: Counter, within_s: float) -> tuple[Any, float]:
    """A client's retry loop (IN_PROGRESS: come back after its Retry-After) until the call runs or replays."""
    started = time.monotonic()
    while time.monotonic() - started < within_s:
        try:
            return await s.run(IDENT, {"n": 1}, 60, counter, lease=lease_s(None)), time.monotonic() - started
        except ToolError as error:
            assert error.code == "IN_PROGRESS", error
            await asyncio.sleep(error.details["retry_after_ms"] / 1000)
    raise AssertionError(f"the key was still IN_PROGRESS after {within_s} s")


async def test_a_dead_instance_frees_the_key_of_a_call_without_a_deadline_within_the_renewed_lease(
    database_url: str | None, tmp_path: Path
) -> None:
    """A process claims a key for a tool without a timeout (lease_s(None), 305 s) and is killed mid-call
    after a few renewals: the key is IN_PROGRESS for about the renewed lease, not 305 s, then runs once."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path), database_url or "", str(RENEWED_S)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "running"
        await asyncio.sleep(2 * RENEWED_S)  # renewed twice meanwhile: the claim is still held
        s = store(database_url, tmp_path)
        with pytest.raises(ToolError) as exc:
            await s.run(IDENT, {"n": 1}, 60, Counter(), lease=lease_s(None))
        assert exc.value.code == "IN_PROGRESS"
    finally:
        holder.kill()
        holder.wait()
    counter = Counter()
    (stored, replayed), waited = await until_free(s, counter, within_s=RENEWED_S + 5)
    print(f"\nthe dead holder's key ran again {waited:.2f} s after it was killed (renewed lease {RENEWED_S} s)")
    assert counter.runs == 1 and not replayed and stored.body == {"run": 1}
    assert lease_s(None) > 300  # what the key was held for before the lease was renewed


async def test_a_running_call_keeps_its_key_past_the_renewed_lease(database_url: str | None, tmp_path: Path) -> None:
    """A call that runs three renewed leases long is never taken over: a retry on another instance is
    IN_PROGRESS throughout, then replays the one result."""
    first, other = store(database_url, tmp_path), store(database_url, tmp_path)
    long = Counter(delay=3 * RENEWED_S)
    running = asyncio.create_task(first.run(IDENT, {"n": 1}, 60, long, lease=lease_s(None)))
    await asyncio.sleep(0.2)
    retry = Counter()
    started = time.monotonic()
    while not running.done():
        try:
            await other.run(IDENT, {"n": 1}, 60, retry, lease=lease_s(None))
        except ToolError as error:
            assert error.code == "IN_PROGRESS", error
        if not running.done():
            assert retry.runs == 0, f"taken over after {time.monotonic() - started:.2f} s"
        await asyncio.sleep(0.25)
    assert (await running)[0].body == {"run": 1}
    stored, replayed = await other.run(IDENT, {"n": 1}, 60, retry, lease=lease_s(None))
    assert replayed and stored.body == {"run": 1} and long.runs == 1 and retry.runs == 0
