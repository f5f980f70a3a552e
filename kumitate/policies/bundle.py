"""`Policies`: the cross-cutting policies one runtime hands its pipeline, built from the settings in one place.

The mechanisms are the other modules of this package; this is the bundle of the instances one runtime uses
(and the pipeline's per-service limits), so `Runtime` builds it once and the pipeline only reads it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kumitate.context import Principal
from kumitate.offloop import OFF_LOOP_BYTES
from kumitate.policies.auth import Authenticator
from kumitate.policies.authguard import AuthGuard
from kumitate.policies.ratelimit import RateLimiter

if TYPE_CHECKING:
    from kumitate.policies.idempotency_store import IdempotencyStore
    from kumitate.settings import Settings

__all__ = ["Policies"]


@dataclass(slots=True)
class Policies:
    """The cross-cutting policies one runtime applies to every call: authentication, rate limits,
    the idempotency store, the failed-authentication guard."""

    auth: Authenticator = field(default_factory=lambda: Authenticator([], Principal("local", frozenset({"*"}))))
    limiter: RateLimiter = field(default_factory=RateLimiter)
    idempotency: IdempotencyStore | None = None
    auth_guard: AuthGuard | None = None
    """Failed authentication rate-limited per client address (KUMITATE_AUTH_FAILURES)."""
    public_url: str | None = None
    """KUMITATE_PUBLIC_URL: when set, every URL a tool returns starts with it; else each call's own address."""
    served_url: str = ""
    """The address served (`http://host:port`): the base of URLs for a call that came with none (stdio)."""
    max_timeout_ms: int | None = None
    """Operator cap on every tool's deadline (KUMITATE_MAX_TIMEOUT_MS), e.g. under a proxy's own time-out."""
    worker_threads: int = 16
    """Sync handlers of one service running at once (KUMITATE_WORKER_THREADS), each service on
    threads of its own (kumitate.serving.bulkhead). asyncio's default pool is min(32, CPUs + 4), six threads
    on a small machine: six slow queries would queue every other call behind them, and a timed-out
    worker, which cannot be interrupted, keeps its thread until it returns."""
    service_threads: Mapping[str, int] = field(default_factory=dict)
    """Per-service sizes that differ from `worker_threads` (KUMITATE_SERVICE_WORKER_THREADS)."""
    bulkhead_wait_s: float = 5.0
    """Longest a call waits for a thread of its service (KUMITATE_BULKHEAD_WAIT_MS), less if its deadline is nearer."""
    in_flight: Mapping[str, int] = field(default_factory=dict)
    """Calls in flight per service (KUMITATE_MAX_IN_FLIGHT; kumitate.serving.admission); missing: CALLS_PER_THREAD per thread."""
    admission_wait_s: float = 0.1
    """Longest a call waits for an admission slot before 503 (KUMITATE_ADMISSION_WAIT_MS)."""
    admission_queue_s: float = 0.0
    """A call queued longer before the application took it is shed (KUMITATE_ADMISSION_QUEUE_MS; 0: never)."""
    commit_grace_s: float = 2.0
    """How long past its deadline a call whose commit is under way may take to report (KUMITATE_COMMIT_GRACE_MS)."""
    off_loop_bytes: int = OFF_LOOP_BYTES
    """A JSON body above this is parsed and checked off the event loop (kumitate.offloop)."""

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        services: Iterable[str],
        limiter: RateLimiter,
        idempotency: IdempotencyStore | None = None,
    ) -> Policies:
        """The policies `settings` configure for `services`, in one place. What settings cannot make is
        given: the `limiter` (in process memory, or on the Redis the stores opened) and the idempotency
        store (on the database, and only when a tool served declares `idempotency`)."""
        return cls(
            auth=Authenticator.from_settings(settings),
            limiter=limiter,
            idempotency=idempotency,
            auth_guard=AuthGuard.from_settings(limiter, settings),
            public_url=(settings.public_url or "").rstrip("/") or None,
            served_url=settings.public_base_url,
            max_timeout_ms=settings.max_timeout_ms,
            worker_threads=settings.worker_threads,
            service_threads={name: settings.threads_for(name) for name in services},
            bulkhead_wait_s=settings.bulkhead_wait_ms / 1000,
            in_flight={name: settings.in_flight_for(name) for name in services},
            admission_wait_s=settings.admission_wait_ms / 1000,
            admission_queue_s=settings.admission_queue_ms / 1000,
            commit_grace_s=settings.commit_grace_ms / 1000,
            off_loop_bytes=settings.off_loop_bytes,
        )
