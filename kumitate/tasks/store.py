"""Task state in the storage layer: every instance reads every task, and a restart loses none.

One row per task (kumitate/storage/schema.py `tasks`). The instance running a task holds a *lease*
on it, renewed every third of KUMITATE_TASK_LEASE_MS (the idea of the idempotency claims'
leases, kumitate/policies/idempotency.py, but renewed: a task may run for many minutes). A task
still `working` once its lease has run out was being run by an instance that died: the first
read marks it `failed` with TASK_LOST, so a client is told, never left polling for ever.

A task that asks its caller something waits `input_required`: the row holds the questions still
unanswered and the answers given so far (any instance may take them, `answer`); once every
question is answered it works again and the instance running it takes the answers (`taken`).

A row moves out of the live statuses (`working`, `input_required`) once (`UPDATE … WHERE status IN
…`): a cancel and the task's own end race safely, the first one wins. Finished rows are forgotten KUMITATE_TASK_TTL_S
after they finished. Every method is blocking: callers run them on the storage threads
(`Database.run`) outside any call's commit gate, since a task's bookkeeping is not the call's change.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Row, and_, delete, insert, select, update

from kumitate.errors import ErrorCode
from kumitate.storage import Database
from kumitate.storage.schema import tasks as table

WORKING = "working"
INPUT_REQUIRED = "input_required"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
LIVE = (WORKING, INPUT_REQUIRED)
"""The statuses of a task still running (its lease renewed, its end not yet written)."""
SWEEP_EVERY_S = 60.0

Envelope = Callable[[ErrorCode, str, str, str], tuple[int, dict[str, object]]]
"""(code, message, run_id, trace_id) -> (HTTP status, the catalogue's error body)."""


@dataclass(slots=True, frozen=True)
class TaskRow:
    """A task as its row holds it (kumitate/storage/schema.py `tasks`): what every transport reads to
    answer about it."""

    id: str
    tool: str
    principal: str
    status: str
    progress: dict[str, object] | None
    result: Any
    """The stored body, JSON data of any shape: the tool's result (`completed`), else the catalogue's
    error body (its `error` member is what the transports show)."""
    http_status: int | None
    run_id: str
    trace_id: str
    created_at: float
    updated_at: float
    expires_at: float
    questions: dict[str, dict[str, object]] | None = None
    """{key: question} the task waits on while `input_required` (kumitate.context.Question's fields)."""

    @property
    def done(self) -> bool:
        """Whether the task has finished (completed, failed or cancelled): nothing about it will change."""
        return self.status not in LIVE


def _row(found: Row[*tuple[object, ...]]) -> TaskRow:
    return TaskRow(
        id=found.id,
        tool=found.tool,
        principal=found.principal,
        status=found.status,
        progress=json.loads(found.progress) if found.progress else None,
        result=json.loads(found.result) if found.result else None,
        http_status=found.http_status,
        run_id=found.run_id,
        trace_id=found.trace_id,
        created_at=found.created_at,
        updated_at=found.updated_at,
        expires_at=found.expires_at,
        questions=json.loads(found.questions) if found.questions else None,
    )


class TaskStore:
    """The task rows in the storage layer (module docstring): built with the database, the envelope that
    shapes a stored error, the lease, and how long a row is kept after its last change (`ttl_s`);
    `clock` is for tests."""

    def __init__(
        self,
        db: Database,
        envelope: Envelope,
        *,
        lease_s: float = 30.0,
        ttl_s: float = 86400.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = db
        self.envelope = envelope
        self.lease_s = lease_s
        self.ttl_s = ttl_s
        self._clock = clock
        self._swept_at = 0.0

    def create(self, task_id: str, tool: str, principal: str, run_id: str, trace_id: str) -> TaskRow:
        """Write a new task's row, `working` and leased to this instance."""
        now = self._clock()
        values = {
            "id": task_id,
            "tool": tool,
            "principal": principal,
            "status": WORKING,
            "run_id": run_id,
            "trace_id": trace_id,
            "created_at": now,
            "updated_at": now,
            "lease_until": now + self.lease_s,
            "expires_at": now + self.lease_s + self.ttl_s,
        }
        with self.db.transaction() as conn:
            conn.execute(insert(table).values(**values))
            if now - self._swept_at >= SWEEP_EVERY_S:
                conn.execute(delete(table).where(table.c.expires_at <= now, table.c.status.notin_(LIVE)))
                self._swept_at = now
        return TaskRow(
            task_id, tool, principal, WORKING, None, None, None, run_id, trace_id, now, now, now + self.ttl_s
        )

    def renew(self, progress: Mapping[str, dict[str, object] | None]) -> set[str]:
        """Extend the leases of the tasks this instance runs (with their latest progress); returns the
        ids among them no longer running (cancelled by a caller, maybe through another instance)."""
        if not progress:
            return set()
        now = self._clock()
        with self.db.transaction() as conn:
            for task_id, report in progress.items():
                values: dict[str, float | str] = {
                    "lease_until": now + self.lease_s,
                    "expires_at": now + self.lease_s + self.ttl_s,
                }
                if report is not None:
                    values |= {"progress": json.dumps(report, ensure_ascii=False), "updated_at": now}
                conn.execute(update(table).where(table.c.id == task_id, table.c.status.in_(LIVE)).values(**values))
            rows = conn.execute(select(table.c.id).where(table.c.id.in_(list(progress)), table.c.status.notin_(LIVE)))
            return {r.id for r in rows}

    def ask(self, task_id: str, questions: Mapping[str, dict[str, object]]) -> bool:
        """The running task waits on `questions` ({key: question}): `input_required` (False: it no
        longer runs)."""
        values = {
            "status": INPUT_REQUIRED,
            "questions": json.dumps(questions, ensure_ascii=False),
            "answers": None,
            "updated_at": self._clock(),
        }
        with self.db.transaction() as conn:
            where = and_(table.c.id == task_id, table.c.status.in_(LIVE))
            return bool(conn.execute(update(table).where(where).values(**values)).rowcount)

    def answer(self, task_id: str, principal: str, answers: Mapping[str, object]) -> TaskRow | None:
        """Give the caller's `input_required` task answers to some of its questions (others are
        ignored); once none is left unanswered it works again. The task as it now is (None: no such task)."""
        now = self._clock()
        with self.db.transaction() as conn:
            found = conn.execute(
                select(table.c.questions, table.c.answers)
                .where(table.c.id == task_id, table.c.principal == principal, table.c.status == INPUT_REQUIRED)
                .with_for_update()
            ).first()
            if found is not None:
                waiting = json.loads(found.questions or "{}")
                given = json.loads(found.answers or "{}") | {k: v for k, v in answers.items() if k in waiting}
                left = {k: v for k, v in waiting.items() if k not in given}
                values = {
                    "status": INPUT_REQUIRED if left else WORKING,
                    "questions": json.dumps(left, ensure_ascii=False) if left else None,
                    "answers": json.dumps(given, ensure_ascii=False),
                    "updated_at": now,
                }
                conn.execute(update(table).where(table.c.id == task_id).values(**values))
        return self.get(task_id, principal)

    def taken(self, task_id: str) -> tuple[str, dict[str, object] | None]:
        """For the instance running the task: (its status, the answers once every question is
        answered, None while some still wait); the answers are taken (cleared) as they are read."""
        with self.db.transaction() as conn:
            found = conn.execute(
                select(table.c.status, table.c.answers).where(table.c.id == task_id).with_for_update()
            ).first()
            if found is None:
                return CANCELLED, None
            if found.status != WORKING or found.answers is None:
                return found.status, None
            conn.execute(update(table).where(table.c.id == task_id).values(answers=None))
            return WORKING, json.loads(found.answers)

    def finish(self, task_id: str, status: str, http_status: int, body: object) -> bool:
        """Store the outcome of a task still running (False: it was cancelled or lost meanwhile)."""
        return self._settle(task_id, status, http_status, json.dumps(body, ensure_ascii=False))

    def cancel(self, task_id: str, principal: str) -> TaskRow | None:
        """Mark the caller's task cancelled if it is still working; the task as it now is (None: no such task)."""
        row = self.get(task_id, principal)
        if row is None or row.done:
            return row
        http_status, body = self.envelope(
            "CANCELLED", "the task was cancelled at the caller's request", row.run_id, row.trace_id
        )
        self._settle(task_id, CANCELLED, http_status, json.dumps(body, ensure_ascii=False))
        return self.get(task_id, principal)

    def lose(self, task_ids: Iterable[str], why: str) -> None:
        """Mark tasks this instance can no longer run (it is stopping) as TASK_LOST now, not at lease end."""
        for task_id in task_ids:
            with self.db.read() as conn:
                found = conn.execute(select(table.c.run_id, table.c.trace_id).where(table.c.id == task_id)).first()
            if found is not None:
                http_status, body = self.envelope("TASK_LOST", why, found.run_id, found.trace_id)
                self._settle(task_id, FAILED, http_status, json.dumps(body, ensure_ascii=False))

    def get(self, task_id: str, principal: str) -> TaskRow | None:
        """The caller's task (another caller's is None, as a missing one); a lost one is failed first."""
        now = self._clock()
        with self.db.read() as conn:
            found = conn.execute(
                select(table).where(table.c.id == task_id, table.c.principal == principal, table.c.expires_at > now)
            ).first()
        if found is None:
            return None
        if found.status in LIVE and found.lease_until <= now:
            http_status, body = self.envelope(
                "TASK_LOST",
                "the instance running this task stopped before it finished; its outcome is unknown: start it again",
                found.run_id,
                found.trace_id,
            )
            lost = json.dumps(body, ensure_ascii=False)
            self._settle(task_id, FAILED, http_status, lost, and_(table.c.lease_until <= now))
            return self.get(task_id, principal)
        return _row(found)

    def _settle(
        self, task_id: str, status: str, http_status: int, result: str, extra: ColumnElement[bool] | None = None
    ) -> bool:
        now = self._clock()
        where = and_(table.c.id == task_id, table.c.status.in_(LIVE))
        if extra is not None:
            where = and_(where, extra)
        values = {"status": status, "http_status": http_status, "result": result, "updated_at": now}
        with self.db.transaction() as conn:
            changed = conn.execute(update(table).where(where).values(**values, expires_at=now + self.ttl_s)).rowcount
        return bool(changed)
