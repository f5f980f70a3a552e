"""Graceful drain on SIGTERM (a deploy, a scale-down, `supervisorctl stop`).

1. At once: the runtime is `draining`, so /readyz answers 503 and the balancer takes the instance out
   of rotation at its next readiness check; requests that still arrive are served, and their responses
   carry `Connection: close`, so a balancer's keep-alive connections end before the port closes (a
   request sent on a connection that is closed under it cannot be retried when it is a POST).
2. After KUMITATE_DRAIN_DELAY_S (the balancer's check period): the listener closes (new connections
   are refused, and a balancer passes a refused request to another instance), idle keep-alive
   connections are closed.
3. Calls in flight finish: each is bounded by its tool's deadline, so the wait is bounded by the
   longest deadline served (plus the commit margin of an idempotency lease); then the lifespan
   closes the MCP session managers and the stores, and the process exits with status 0.

A second SIGTERM, or SIGINT (Ctrl-C), skips the delay: uvicorn's own shutdown, at once.
`DrainingServer` overrides `uvicorn.Server.handle_exit` and sets `should_exit`, both checked at start-up
in kumitate/compat/uvicorn.py.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import TYPE_CHECKING

import uvicorn

from kumitate.observability.calllog import log_info
from kumitate.policies.idempotency import lease_s
from kumitate.steps.deadline import timeout_s
from kumitate.transports.listener import EagerServer

if TYPE_CHECKING:
    from kumitate.runtime import Runtime


def longest_call_s(runtime: Runtime) -> float:
    """How long a call in flight may still run: the longest deadline of a served tool, plus the
    idempotency lease's margin (a tool without a timeout counts as the lease of one)."""
    cap = runtime.settings.max_timeout_ms
    deadlines = [timeout_s(t.policy.timeout_ms, cap) for svc in runtime.services.values() for t in svc.tools]
    return max((lease_s(d) for d in deadlines), default=lease_s(None))


class DrainingServer(EagerServer):
    """uvicorn's server (with kumitate's eager listener) plus the drain on SIGTERM: readiness off at
    once, the listener closed after the delay, calls in flight given their longest timeout to finish."""

    def __init__(self, config: uvicorn.Config, runtime: Runtime, delay_s: float) -> None:
        super().__init__(config)
        self.runtime = runtime
        self.delay_s = delay_s
        config.timeout_graceful_shutdown = round(longest_call_s(runtime))

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """The first SIGTERM starts the drain instead of uvicorn's immediate shutdown; anything else
        (SIGINT, a second SIGTERM) is uvicorn's own handling."""
        if sig == signal.SIGTERM and not self.runtime.draining.is_set() and not self.should_exit:
            self.runtime.draining.set()
            log_info("draining", delay_s=self.delay_s, in_flight_bound_s=self.config.timeout_graceful_shutdown)
            timer = threading.Timer(self.delay_s, self._close_listener)
            timer.daemon = True
            timer.start()
            return
        super().handle_exit(sig, frame)

    def _close_listener(self) -> None:
        log_info("drain_closing_listener")
        self.should_exit = True  # uvicorn's main loop sees it within 0.1 s and shuts down gracefully
