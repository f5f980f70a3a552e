"""Failed authentication is limited per client address, and a blocked address cannot tell a hit from a miss."""

from __future__ import annotations

import pytest

from kumitate.errors import ToolError
from kumitate.policies.auth import Authenticator
from kumitate.policies.authguard import AuthGuard, parse
from kumitate.policies.ratelimit import RateLimiter

AUTH = Authenticator.from_env({"KUMITATE_TOKENS": '{"right": {"principal": "alice", "scopes": []}}'})


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def attempt(guard: AuthGuard, token: str | None, address: str = "10.0.0.1") -> str:
    try:
        header = f"Bearer {token}" if token else None
        return guard.authenticate(AUTH, header, address, local=False, public=False).id
    except ToolError as exc:
        return exc.code


def test_wrong_guesses_block_the_address_until_the_bucket_refills() -> None:
    clock = Clock()
    guard = AuthGuard(RateLimiter(clock), 0.5, 3, clock)
    assert [attempt(guard, f"guess-{i}") for i in range(3)] == ["UNAUTHORIZED"] * 3
    assert attempt(guard, "guess-3") == "RATE_LIMITED"
    assert attempt(guard, "right") == "RATE_LIMITED"  # blocked: the right token is refused too
    assert attempt(guard, None) == "UNAUTHORIZED"  # no token, no guess
    assert attempt(guard, "right", "10.0.0.2") == "alice"  # another address is not affected
    clock.now += 2.0
    assert attempt(guard, "right") == "alice"


def test_the_setting_is_parsed_and_checked() -> None:
    assert parse(None) == (0.2, 10) and parse("1/5") == (1.0, 5)
    for bad in ("fast", "0/5", "1/0"):
        with pytest.raises(ValueError, match="KUMITATE_AUTH_FAILURES"):
            parse(bad)
