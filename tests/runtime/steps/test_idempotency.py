"""The idempotency step: one run per key and arguments, replayed with this call's ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from kumitate.errors import ToolError
from kumitate.policies.idempotency_store import IdempotencyStore
from kumitate.steps import Call, CallRequest, Outcome
from kumitate.steps.idempotency import Idempotent, client_caused
from kumitate.storage import open_database
from tests.runtime.steps.helpers import make_call, ok

pytestmark = pytest.mark.anyio


def keyed(arguments: dict[str, int], key: str | None, run_id: str) -> Call:
    call = make_call(arguments, CallRequest("http", idempotency_key=key))
    call.ctx.run_id = run_id
    return call


async def test_replays_the_first_outcome_with_this_calls_ids(tmp_path: Path) -> None:
    step = Idempotent(IdempotencyStore(open_database(tmp_path)), "demo.echo", 60)
    rest = ok({"n": 1, "run_id": "run-1"})
    first = await step(keyed({"n": 1}, "k", "run-1"), rest)
    again = await step(keyed({"n": 1}, "k", "run-2"), rest)
    assert rest.calls == 1  # type: ignore[attr-defined]
    assert not first.replayed and again.replayed
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.body == {"n": 1, "run_id": "run-2"}
    with pytest.raises(ToolError) as conflict:
        await step(keyed({"n": 2}, "k", "run-3"), rest)
    assert conflict.value.code == "CONFLICT"


async def test_without_a_key_the_call_just_runs(tmp_path: Path) -> None:
    step = Idempotent(IdempotencyStore(open_database(tmp_path)), "demo.echo", 60)
    rest = ok()
    for _ in range(2):
        await step(keyed({"n": 1}, None, "run-1"), rest)
    assert rest.calls == 2  # type: ignore[attr-defined]


def test_only_client_caused_outcomes_are_kept() -> None:
    def outcome(status: int, retryable: bool = False) -> Outcome:
        return Outcome(status < 400, status, "X", {}, "r", "t", retryable=retryable)

    assert client_caused(outcome(200)) and client_caused(outcome(404))
    assert not client_caused(outcome(408)) and not client_caused(outcome(429, retryable=True))
    assert not client_caused(outcome(500)) and not client_caused(outcome(503))


async def test_a_call_answered_while_its_commit_may_land_keeps_its_claim(tmp_path: Path) -> None:
    """Past the commit grace the change may still be saved: releasing the key would let a retry run
    beside it, so the claim holds until its lease ends and a retry meanwhile is IN_PROGRESS."""
    step = Idempotent(IdempotencyStore(open_database(tmp_path), wait_s=0.05), "demo.echo", 60, timeout_s=30)
    runs = 0

    async def unknown(call: Call) -> Outcome:
        nonlocal runs
        runs += 1
        call.state.outcome_unknown = True
        return Outcome(False, 408, "REQUEST_TIMEOUT", {"error": {"code": "REQUEST_TIMEOUT"}}, "r", "t", retryable=True)

    first = await step(keyed({"n": 1}, "k", "run-1"), unknown)
    assert first.code == "REQUEST_TIMEOUT" and not first.replayed
    with pytest.raises(ToolError) as retry:
        await step(keyed({"n": 1}, "k", "run-2"), unknown)
    assert retry.value.code == "IN_PROGRESS" and runs == 1


class LeaseRecorder(IdempotencyStore):
    """The real store, noting the lease each claim asked for."""

    leases: list[float]

    async def run(self, *args: object, **kwargs: object) -> object:  # type: ignore[override]
        self.leases.append(float(args[4]))  # type: ignore[arg-type]
        return await super().run(*args, **kwargs)  # type: ignore[arg-type]


async def test_a_task_holds_its_claim_for_the_task_and_a_plain_call_for_its_deadline(tmp_path: Path) -> None:
    """A task-capable tool called synchronously keeps the short lease (a crashed call frees its key soon);
    the same tool run as a task holds the key as long as the task may run."""
    store = LeaseRecorder(open_database(tmp_path))
    store.leases = []
    step = Idempotent(store, "demo.export", 60, timeout_s=15.0)
    await step(keyed({"n": 1}, "plain", "run-1"), ok({"n": 1}))
    task = make_call({"n": 2}, CallRequest("http", idempotency_key="as-task", task_timeout_s=300.0))
    await step(task, ok({"n": 2}))
    plain_lease, task_lease = store.leases
    assert plain_lease < 60 < 300 <= task_lease
