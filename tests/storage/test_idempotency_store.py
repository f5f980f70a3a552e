"""The idempotency store on both engines: exactly once per key, also across separate stores (instances)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kumitate.deploy import DeploySettings
from kumitate.errors import ToolError
from kumitate.policies.idempotency import IdempotencyStore, Stored, fingerprint
from kumitate.storage import Database, open_database
from kumitate.storage import engine as engines

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class Counter:
    """An `execute` that counts its runs and takes a little while, as a handler does."""

    def __init__(self, status: int = 200, keep: bool = True, delay: float = 0.05) -> None:
        self.runs, self.status, self.keep, self.delay = 0, status, keep, delay

    async def __call__(self) -> tuple[Stored, bool]:
        self.runs += 1
        await asyncio.sleep(self.delay)
        return Stored(self.status, {"run": self.runs}), self.keep


def instances(database_url: str | None, tmp_path: Path, n: int, clock: Clock | None = None) -> list[IdempotencyStore]:
    """`n` stores, each on its own engine (its own pool, as separate processes have), one database."""
    deploy = DeploySettings.model_validate({"database_url": database_url})
    dbs: list[Database] = [open_database(tmp_path, deploy) for _ in range(n)]
    return [IdempotencyStore(db, clock=clock or Clock()) for db in dbs]


async def test_twenty_concurrent_calls_across_two_instances_execute_once(
    database_url: str | None, tmp_path: Path
) -> None:
    a, b = instances(database_url, tmp_path, 2)
    counter = Counter(delay=0.2)
    ident = ("svc.tool", "anonymous", "same")
    results = await asyncio.gather(*((a if i % 2 else b).run(ident, {"n": 1}, 60, counter) for i in range(20)))
    assert counter.runs == 1
    assert all(stored.body == {"run": 1} for stored, _ in results)
    assert sorted(replayed for _, replayed in results) == [False] + [True] * 19


async def test_a_stored_result_survives_a_restart(database_url: str | None, tmp_path: Path) -> None:
    (first,) = instances(database_url, tmp_path, 1)
    counter = Counter()
    await first.run(("t", "p", "k"), {"n": 1}, 60, counter)
    first._db.close()
    (restarted,) = instances(database_url, tmp_path, 1)
    stored, replayed = await restarted.run(("t", "p", "k"), {"n": 1}, 60, counter)
    assert replayed and stored.body == {"run": 1} and counter.runs == 1


async def test_another_request_with_the_key_is_a_conflict_even_while_the_first_runs(
    database_url: str | None, tmp_path: Path
) -> None:
    a, b = instances(database_url, tmp_path, 2)
    slow = Counter(delay=0.5)
    first = asyncio.create_task(a.run(("t", "p", "k"), {"n": 1}, 60, slow))
    await asyncio.sleep(0.2)
    with pytest.raises(ToolError) as exc:
        await b.run(("t", "p", "k"), {"n": 2}, 60, Counter())
    assert exc.value.code == "CONFLICT"
    assert (await first)[1] is False


async def test_retryable_failures_are_not_kept_and_expired_keys_run_again(
    database_url: str | None, tmp_path: Path
) -> None:
    clock = Clock()
    (store,) = instances(database_url, tmp_path, 1, clock)
    failing = Counter(status=503, keep=False)
    await store.run(("t", "p", "k"), {"n": 1}, 60, failing)
    await store.run(("t", "p", "k"), {"n": 1}, 60, failing)
    assert failing.runs == 2
    ok = Counter()
    await store.run(("t", "p", "k2"), {"n": 1}, 60, ok)
    clock.now += 61
    _, replayed = await store.run(("t", "p", "k2"), {"n": 1}, 60, ok)
    assert not replayed and ok.runs == 2


async def test_a_claim_left_by_a_dead_instance_is_taken_over_after_its_lease(
    database_url: str | None, tmp_path: Path
) -> None:
    clock = Clock()
    dead, alive = instances(database_url, tmp_path, 2, clock)
    assert (await dead._db.run(dead._claim, ("t", "p", "k"), fingerprint({"n": 1}))).owned  # then the instance dies
    waiter = asyncio.create_task(alive.run(("t", "p", "k"), {"n": 1}, 60, Counter()))
    await asyncio.sleep(0.3)
    assert not waiter.done()
    clock.now += alive._lease_s + 1
    stored, replayed = await asyncio.wait_for(waiter, 10)
    assert not replayed and stored.body == {"run": 1}


@pytest.mark.postgres
async def test_a_claim_that_cannot_be_written_runs_nothing(postgres_url: str, tmp_path: Path) -> None:
    (store,) = instances(postgres_url, tmp_path, 1)
    store._db.engine.dispose()
    store._db.engine = engines.create("postgresql+psycopg://kumitate@127.0.0.1:1/kumitate")
    counter = Counter()
    with pytest.raises(ToolError) as exc:
        await store.run(("t", "p", "k"), {"n": 1}, 60, counter)
    assert exc.value.code == "STORAGE_UNAVAILABLE" and counter.runs == 0
