"""The auth step: refuses before the rest of the chain runs, with its challenge."""

from __future__ import annotations

import pytest

from kumitate.errors import ToolError
from kumitate.pipeline import Policies
from kumitate.policies.auth import Authenticator
from kumitate.policies.spec import Policy
from kumitate.steps import CallRequest
from kumitate.steps.auth import Authenticate
from tests.runtime.steps.helpers import make_call, ok

pytestmark = pytest.mark.anyio

TOKENS = '{"t-reader": {"principal": "alice", "scopes": ["demo:read"]}}'
POLICIES = Policies(auth=Authenticator.from_env({"KUMITATE_TOKENS": TOKENS}))


def request(authorization: str | None) -> CallRequest:
    return CallRequest("http", ids=("r", "t"), authorization=authorization)


@pytest.mark.parametrize(("authorization", "code"), [(None, "UNAUTHORIZED"), ("Bearer nope", "UNAUTHORIZED")])
async def test_refuses_without_a_valid_token(authorization: str | None, code: str) -> None:
    rest = ok()
    with pytest.raises(ToolError) as refused:
        await Authenticate(POLICIES, Policy(scopes=("demo:read",)))(make_call(request=request(authorization)), rest)
    assert refused.value.code == code
    assert refused.value.headers["WWW-Authenticate"].startswith("Bearer")
    assert rest.calls == 0  # type: ignore[attr-defined]


async def test_refuses_a_missing_scope() -> None:
    with pytest.raises(ToolError) as refused:
        await Authenticate(POLICIES, Policy(scopes=("demo:write",)))(
            make_call(request=request("Bearer t-reader")), ok()
        )
    assert refused.value.code == "FORBIDDEN"
    assert 'scope="demo:write"' in refused.value.headers["WWW-Authenticate"]


async def test_admits_and_names_the_principal() -> None:
    call = make_call(request=request("Bearer t-reader"))
    outcome = await Authenticate(POLICIES, Policy(scopes=("demo:read",)))(call, ok())
    assert outcome.ok and call.ctx.principal.id == "alice"


async def test_public_needs_no_token() -> None:
    call = make_call(request=request(None))
    assert (await Authenticate(POLICIES, Policy(public=True, scopes=("demo:read",)))(call, ok())).ok
