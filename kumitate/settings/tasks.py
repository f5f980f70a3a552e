"""Tasks: long tools run in the background (kumitate.tasks), and the leases of tasks and idempotency claims."""

from __future__ import annotations

from kumitate.settings.base import EnvSettings, var

__all__ = ["TaskSettings"]


class TaskSettings(EnvSettings):
    """How many tasks run at once, their leases and results; the lease of an idempotency claim."""

    task_workers: int = var(
        "KUMITATE_TASK_WORKERS",
        4,
        "tasks (long tools started with `Prefer: respond-async` or the MCP tasks extension) one instance runs "
        "at once; past it a new task is refused with 503 `SERVICE_UNAVAILABLE`",
        ge=1,
    )
    task_lease_ms: int = var(
        "KUMITATE_TASK_LEASE_MS",
        30000,
        "a running task's lease, renewed by its instance every third of it; a task whose lease has run out "
        "(its instance died) is reported failed with `TASK_LOST`",
        ge=100,
    )
    idempotency_lease_ms: int = var(
        "KUMITATE_IDEMPOTENCY_LEASE_MS",
        30000,
        "the longest a key stays 409 `IN_PROGRESS` after the instance running its call died, for a tool without "
        "a `timeout_ms` (or a longer one, or a task): the call's claim is renewed every third of it while it runs",
        ge=300,
    )
    task_ttl_s: int = var(
        "KUMITATE_TASK_TTL_S",
        86400,
        "how long a finished task's result stays readable at /v1/operations/{id}",
        ge=1,
    )
    task_max_result_bytes: int = var(
        "KUMITATE_TASK_MAX_RESULT_BYTES",
        1048576,
        "largest task result stored; a larger one is stored as the error `OUTPUT_TOO_LARGE`",
        ge=1024,
    )
