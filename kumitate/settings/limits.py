"""Limits: deadlines, the threads of each service (bulkheads) and the calls admitted in flight."""

from __future__ import annotations

from pydantic import field_validator

from kumitate.serving.admission import CALLS_PER_THREAD
from kumitate.settings.base import CommaList, EnvSettings, var

__all__ = ["LimitSettings"]


class LimitSettings(EnvSettings):
    """How much work one instance takes on (kumitate.serving.bulkhead, kumitate.serving.admission): the deadline cap, threads per
    service, calls in flight."""

    max_timeout_ms: int | None = var("KUMITATE_MAX_TIMEOUT_MS", None, "operator cap on every tool's deadline", gt=0)
    worker_threads: int = var(
        "KUMITATE_WORKER_THREADS",
        16,
        "threads for sync handlers, per service (its bulkhead: a stuck service cannot take another's)",
        ge=1,
    )
    service_worker_threads: CommaList = var(
        "KUMITATE_SERVICE_WORKER_THREADS",
        (),
        "per-service overrides, comma-separated `service=N` (e.g. `analytics=4,household=32`)",
    )
    bulkhead_wait_ms: int = var(
        "KUMITATE_BULKHEAD_WAIT_MS",
        5000,
        "longest a call waits for one of its service's threads (less if its deadline is nearer); "
        "then 503 `SERVICE_UNAVAILABLE`",
        ge=0,
    )
    max_in_flight: int = var(
        "KUMITATE_MAX_IN_FLIGHT",
        0,
        "calls in flight per service on this instance; past it a call waits `KUMITATE_ADMISSION_WAIT_MS`, then "
        "503 `SERVICE_UNAVAILABLE` with Retry-After, its body unread (0: 16 per worker thread of the service)",
        shown="0 (16 × threads)",
        ge=0,
    )
    admission_wait_ms: int = var(
        "KUMITATE_ADMISSION_WAIT_MS",
        100,
        "longest a call waits for a slot under `KUMITATE_MAX_IN_FLIGHT` before it is refused",
        ge=0,
    )
    admission_queue_ms: int = var(
        "KUMITATE_ADMISSION_QUEUE_MS",
        500,
        "an HTTP tool call that waited longer than this in the server's event loop before the application took it is "
        "answered 503 `SERVICE_UNAVAILABLE` with Retry-After at once, its body unread (lean HTTP path; 0: never)",
        ge=0,
    )

    @field_validator("service_worker_threads")
    @classmethod
    def _service_threads(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            name, _, count = item.partition("=")
            if not name.strip() or not count.strip().isdigit() or int(count) < 1:
                raise ValueError(f"{item!r} is not `service=N` with N a positive integer")
        return value

    def in_flight_for(self, service: str) -> int:
        """`service`'s admission bound: KUMITATE_MAX_IN_FLIGHT, else CALLS_PER_THREAD per thread (kumitate.serving.admission)."""
        return self.max_in_flight or CALLS_PER_THREAD * self.threads_for(service)

    def threads_for(self, service: str) -> int:
        """The size of `service`'s bulkhead: its KUMITATE_SERVICE_WORKER_THREADS entry, else KUMITATE_WORKER_THREADS."""
        for item in self.service_worker_threads:
            name, _, count = item.partition("=")
            if name.strip() == service:
                return int(count)
        return self.worker_threads
