"""Task rows (kumitate.tasks.store) on both engines: two instances on one database see one task,
a task whose instance stopped renewing is reported TASK_LOST, a row leaves `working` once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kumitate.serving.deploy import DeploySettings
from kumitate.storage import open_database
from kumitate.tasks.store import CANCELLED, COMPLETED, FAILED, INPUT_REQUIRED, WORKING, TaskStore


def envelope(code: str, message: str, run_id: str, trace_id: str) -> tuple[int, dict[str, Any]]:
    return 503, {"error": {"code": code, "message": message, "retryable": True}, "run_id": run_id, "trace_id": trace_id}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def pair(database_url: str | None, tmp_path: Path, clock: Clock) -> Iterator[tuple[TaskStore, TaskStore]]:
    """Two instances' stores on one database."""
    deploy = DeploySettings.model_validate({"database_url": database_url})
    one, two = (
        TaskStore(open_database(tmp_path, deploy), envelope, lease_s=30, ttl_s=600, clock=clock) for _ in range(2)
    )
    yield one, two
    one.db.close()
    two.db.close()


def test_a_task_started_on_one_instance_is_finished_and_read_on_the_other(
    pair: tuple[TaskStore, TaskStore], clock: Clock
) -> None:
    one, two = pair
    one.create("t1", "household.import_household_data", "alice", "run", "trace")
    assert (row := two.get("t1", "alice")) is not None and row.status == WORKING and not row.done
    assert two.get("t1", "bob") is None  # another caller's task does not exist for them
    clock.now += 10
    assert one.renew({"t1": {"done": 3, "total": 10, "message": "files"}}) == set()
    assert two.get("t1", "alice").progress == {"done": 3, "total": 10, "message": "files"}  # type: ignore[union-attr]
    assert one.finish("t1", COMPLETED, 200, {"files_processed": 48})
    done = two.get("t1", "alice")
    assert done is not None and done.status == COMPLETED and done.result == {"files_processed": 48}
    clock.now += 601
    assert two.get("t1", "alice") is None  # forgotten after the TTL


def test_a_task_whose_lease_ran_out_is_lost_and_its_late_result_is_not_kept(
    pair: tuple[TaskStore, TaskStore], clock: Clock
) -> None:
    one, two = pair
    one.create("t2", "analytics.export", "alice", "run", "trace")
    clock.now += 31  # nobody renewed it: its instance died
    lost = two.get("t2", "alice")
    assert lost is not None and lost.status == FAILED and lost.result["error"]["code"] == "TASK_LOST"
    assert lost.result["run_id"] == "run"
    assert not one.finish("t2", COMPLETED, 200, {"late": True})
    assert two.get("t2", "alice").status == FAILED  # type: ignore[union-attr]


def test_cancel_wins_over_a_later_finish_and_the_runner_learns_it_on_renewal(
    pair: tuple[TaskStore, TaskStore], clock: Clock
) -> None:
    one, two = pair
    one.create("t3", "analytics.export", "alice", "run", "trace")
    assert two.cancel("t3", "bob") is None
    cancelled = two.cancel("t3", "alice")
    assert cancelled is not None and cancelled.status == CANCELLED and cancelled.result["error"]["code"] == "CANCELLED"
    assert one.renew({"t3": None}) == {"t3"}
    assert not one.finish("t3", COMPLETED, 200, {})
    assert two.cancel("t3", "alice").status == CANCELLED  # type: ignore[union-attr]  # idempotent


def test_a_task_waiting_for_input_is_answered_through_the_other_instance_and_keeps_its_lease(
    pair: tuple[TaskStore, TaskStore], clock: Clock
) -> None:
    one, two = pair
    one.create("t4", "conformance.multi_input", "alice", "run", "trace")
    questions = {"first": {"kind": "elicitation"}, "second": {"kind": "elicitation"}}
    assert one.ask("t4", questions)
    waiting = two.get("t4", "alice")
    assert waiting is not None and waiting.status == INPUT_REQUIRED and not waiting.done
    assert waiting.questions == questions
    assert two.answer("t4", "bob", {"first": 1}) is None  # not bob's task
    partly = two.answer("t4", "alice", {"first": {"name": "a"}, "unknown": 0})
    assert (
        partly is not None and partly.status == INPUT_REQUIRED and partly.questions == {"second": questions["second"]}
    )
    assert one.taken("t4") == (INPUT_REQUIRED, None)  # still waiting on "second"
    clock.now += 20
    assert one.renew({"t4": None}) == set()  # a waiting task is renewed like a working one
    clock.now += 20
    assert two.get("t4", "alice").status == INPUT_REQUIRED  # type: ignore[union-attr]  # not lost
    assert two.answer("t4", "alice", {"second": True}).status == WORKING  # type: ignore[union-attr]
    assert one.taken("t4") == (WORKING, {"first": {"name": "a"}, "second": True})
    assert one.taken("t4") == (WORKING, None)  # taken once
    assert one.finish("t4", COMPLETED, 200, {"text": "done"})
    assert two.answer("t4", "alice", {"second": False}).status == COMPLETED  # type: ignore[union-attr]  # too late
