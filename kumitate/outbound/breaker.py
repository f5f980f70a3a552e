"""The circuit breaker shared by every call through one `OutboundClient`.

After N consecutive upstream failures (5xx, timeouts, connection errors) it opens and calls fail
fast; after a cool-down one trial call is let through (half-open): its success closes the breaker,
its failure re-opens it. An attempt that says nothing about the upstream's health (a 429: it is
alive, only busy) is neither. `guard` runs one attempt and records its verdict, once.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

__all__ = ["CircuitBreaker", "Health"]


class Health(enum.Enum):
    """What one attempt says about the upstream: up (it answered), down (it failed), or nothing."""

    UP = "up"
    DOWN = "down"
    UNKNOWN = "unknown"


class Judged(Protocol):
    """The result of an attempt that carries its verdict on the upstream's health."""

    @property
    def health(self) -> Health:
        """The attempt's verdict for the breaker."""
        ...


J = TypeVar("J", bound=Judged)


class CircuitBreaker:
    """Closed → open after `failure_threshold` consecutive failures → half-open after `reset_timeout_s`.

    Thread-safe. In half-open state exactly one trial call is allowed at a time.
    `clock` is injectable so a test can step time instead of sleeping.
    """

    def __init__(
        self,
        failure_threshold: int = 5,
        reset_timeout_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.failure_threshold = failure_threshold
        self.reset_timeout_s = reset_timeout_s
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_in_flight = False

    @property
    def state(self) -> str:
        """ "closed", "open" or "half_open"."""
        with self._lock:
            return self._state_locked()

    def _state_locked(self) -> str:
        if self._opened_at is None:
            return "closed"
        if self._clock() - self._opened_at >= self.reset_timeout_s:
            return "half_open"
        return "open"

    def allow(self) -> bool:
        """May a call go out now? In half-open state, reserves the single trial slot."""
        with self._lock:
            state = self._state_locked()
            if state == "closed":
                return True
            if state == "half_open" and not self._trial_in_flight:
                self._trial_in_flight = True
                return True
            return False

    def record_success(self) -> None:
        """A call succeeded: close the circuit and forget the failures."""
        with self._lock:
            self._failures = 0
            self._opened_at = None
            self._trial_in_flight = False

    def record_failure(self) -> None:
        """A call failed: open the circuit at the threshold, or again at once when the trial call failed."""
        with self._lock:
            self._failures += 1
            if self._trial_in_flight or self._failures >= self.failure_threshold:
                self._opened_at = self._clock()
            self._trial_in_flight = False

    def release(self) -> None:
        """A call ended with no verdict on upstream health (e.g. 429): free the trial slot."""
        with self._lock:
            self._trial_in_flight = False

    def record(self, health: Health) -> None:
        """Record one attempt's verdict: a success, a failure, or none (which only frees the trial slot)."""
        if health is Health.UP:
            self.record_success()
        elif health is Health.DOWN:
            self.record_failure()
        else:
            self.release()

    def guard(self, attempt: Callable[[], J]) -> J:
        """Run one attempt the breaker has allowed and record its verdict. An attempt that raises
        gives no verdict on the upstream, but never keeps the half-open trial slot."""
        try:
            judged = attempt()
        except BaseException:
            self.release()
            raise
        self.record(judged.health)
        return judged
