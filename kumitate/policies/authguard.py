"""Failed authentication, rate-limited per client address.

Every presented token that matches nothing spends one token of the address's failure bucket
(KUMITATE_AUTH_FAILURES="<per second>/<burst>", default 0.2/10: ten wrong guesses at once, then one
every five seconds). When the bucket is empty the address is refused RATE_LIMITED (429, Retry-After)
until it refills, for every call that presents a token, right or wrong: otherwise a guesser could
still tell a hit (200) from a miss (429) at full speed. A call with no token at all is a plain 401
and costs nothing; it guesses nothing. The buckets live in the shared RateLimiter.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

from kumitate.context import Principal
from kumitate.errors import ToolError
from kumitate.policies.auth import Authenticator
from kumitate.policies.ratelimit import RateLimiter
from kumitate.settings import Settings

DEFAULT_RATE = 0.2
DEFAULT_BURST = 10
MAX_BLOCKED = 100_000
SCOPE = "auth-failures"


def parse(spec: str | None) -> tuple[float, int]:
    """`"0.2/10"` -> (0.2, 10); empty -> the defaults."""
    if not spec:
        return DEFAULT_RATE, DEFAULT_BURST
    rate, _, burst = spec.partition("/")
    try:
        values = float(rate), int(burst or DEFAULT_BURST)
    except ValueError:
        raise ValueError(f"KUMITATE_AUTH_FAILURES={spec!r}: expected <per second>/<burst>, e.g. 0.2/10") from None
    if values[0] <= 0 or values[1] < 1:
        raise ValueError(f"KUMITATE_AUTH_FAILURES={spec!r}: the rate and burst must be positive")
    return values


class AuthGuard:
    """Slows down token guessing: failed authentications are rate-limited per client address."""

    def __init__(
        self, limiter: RateLimiter, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limiter = limiter
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._blocked: dict[str, float] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls, limiter: RateLimiter, env: Mapping[str, str]) -> AuthGuard:
        """From a mapping of variables, read as the runtime's settings are."""
        return cls.from_settings(limiter, Settings.from_env(env))

    @classmethod
    def from_settings(cls, limiter: RateLimiter, settings: Settings) -> AuthGuard:
        """The guard at the rate and burst of KUMITATE_AUTH_FAILURES."""
        return cls(limiter, *parse(settings.auth_failures))

    def _refuse(self, until: float, now: float) -> ToolError:
        wait_ms = max(1, round((until - now) * 1000))
        return ToolError(
            f"too many failed authentication attempts from this address; retry in {wait_ms} ms",
            code="RATE_LIMITED",
            details={"retry_after_ms": wait_ms},
        )

    def authenticate(
        self, auth: Authenticator, authorization: str | None, address: str | None, *, local: bool, public: bool
    ) -> Principal:
        """`auth.authenticate`, refused while the address is over its failure budget."""
        presented = bool(authorization and authorization.strip()) and auth.enabled and not local
        if not presented:
            return auth.authenticate(authorization, local=local, public=public)
        who = address or "unknown"
        now = self._clock()
        with self._lock:
            until = self._blocked.get(who)
            if until is not None and until <= now:
                del self._blocked[who]
                until = None
        if until is not None:
            raise self._refuse(until, now)
        principal = auth.lookup_bearer(authorization)
        if principal is not None:
            return principal
        try:
            self.limiter.take((SCOPE, who), self.rate, self.burst)
        except ToolError as exc:
            until = now + int(exc.details.get("retry_after_ms", 1000)) / 1000
            with self._lock:
                if len(self._blocked) >= MAX_BLOCKED:
                    self._blocked = {k: v for k, v in self._blocked.items() if v > now}
                self._blocked[who] = until
            raise self._refuse(until, now) from None
        return auth.authenticate(authorization, local=local, public=public)
