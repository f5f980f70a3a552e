"""The one retry policy: how many attempts a call gets and how long to wait between them.

Both retry loops use it: `OutboundClient` (a handler calling an upstream) and the typed clients
(`kumitate.client`, a program calling a kumitate server). Each loop decides what is retryable in its own
terms (an HTTP status, a catalogue error's `retryable`); this policy decides only whether one more
attempt is left and how long to wait before it, honouring what the server asked for (Retry-After).
"""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Mapping
from dataclasses import InitVar, dataclass

__all__ = ["CLIENT_RETRY", "NO_RETRY", "RetryPolicy", "retry_after_s"]

_RNG = random.Random()


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """`attempts` counts the first try: attempts=2 means one retry.

    The wait before retry `i` (0-based) is an exponential backoff, `base_delay_s * 2**i` capped at
    `max_delay_s` and jittered by +-`jitter` of itself, so that clients that failed together do not
    retry together. A wait the server asked for (Retry-After) is honoured when longer. A wait over
    `max_wait_s` is not waited out: the caller gives up at once with the error it has.
    """

    attempts: int = 2
    base_delay_s: float = 0.2
    max_delay_s: float = 2.0
    jitter: float = 0.2
    max_wait_s: float = 30.0
    backoff_s: InitVar[float | None] = None
    """The typed clients' former name of `base_delay_s`, still accepted (with a DeprecationWarning)."""

    def __post_init__(self, backoff_s: float | None) -> None:
        if backoff_s is not None:
            warnings.warn("RetryPolicy(backoff_s=...) is now base_delay_s", DeprecationWarning, stacklevel=3)
            object.__setattr__(self, "base_delay_s", backoff_s)

    def delay(self, retry_index: int, rng: random.Random | None = None) -> float:
        """Backoff before retry number `retry_index` (0-based): base * 2^i, capped, jittered."""
        raw = min(self.max_delay_s, self.base_delay_s * (2**retry_index))
        return max(0.0, raw * (1 + (rng or _RNG).uniform(-self.jitter, self.jitter)))

    def wait(self, failed: int, *, asked_s: float | None = None, rng: random.Random | None = None) -> float | None:
        """Seconds to wait after attempt number `failed` (1-based) failed retryably, or None to give up:
        the attempts are used up, or the wait (the backoff, or the server's `asked_s` when longer)
        is over `max_wait_s`."""
        if failed >= self.attempts:
            return None
        wait = self.delay(failed - 1, rng)
        if asked_s is not None:
            wait = max(wait, asked_s)
        return wait if wait <= self.max_wait_s else None


NO_RETRY = RetryPolicy(attempts=1)
"""One attempt, no retry."""

CLIENT_RETRY = RetryPolicy(attempts=3, base_delay_s=0.5, max_delay_s=math.inf, jitter=0.0, max_wait_s=30.0)
"""The typed clients' default: three attempts, 0.5 s then 1 s unless the server asks for longer."""


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """A Retry-After header in seconds; None when absent or in the HTTP-date form (the caller
    then backs off on its own). Pass httpx's headers (any case) or an Outcome's."""
    value = headers.get("Retry-After") or headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # HTTP-date form: fall back to our own backoff
