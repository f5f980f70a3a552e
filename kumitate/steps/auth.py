"""Authentication and scopes: who calls, and whether the tool's scopes are theirs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kumitate.observability import tracing
from kumitate.policies import discovery
from kumitate.policies.auth import Authenticator, AuthError
from kumitate.policies.authguard import AuthGuard
from kumitate.policies.spec import Policy
from kumitate.steps import Call, CallNext, CallRequest, Outcome

if TYPE_CHECKING:
    from kumitate.context import CallContext


class AuthPolicies(Protocol):
    """What authentication reads of the runtime's policies (`kumitate.pipeline.Policies` is one), read
    at each call: the step sits below the pipeline that builds it, so it names only these three."""

    @property
    def auth(self) -> Authenticator:
        """Checks the bearer token of a request."""

    @property
    def auth_guard(self) -> AuthGuard | None:
        """Rate-limits failed authentication per client address; None where none is configured."""

    @property
    def public_url(self) -> str | None:
        """The address the RFC 9728 challenge points a client to for the protected resource's metadata."""


def authenticate(policies: AuthPolicies, rules: Policy, ctx: CallContext, request: CallRequest) -> None:
    """Set `ctx.principal` from the request's token (or the local principal), and check the
    scopes unless the route is public. A refusal carries its RFC 6750 / RFC 9728 challenge.
    Failed attempts are rate-limited per client address where an AuthGuard is configured."""
    auth = policies.auth
    try:
        if policies.auth_guard is not None:
            ctx.principal = policies.auth_guard.authenticate(
                auth, request.authorization, request.client, local=request.local, public=rules.public
            )
        else:
            ctx.principal = auth.authenticate(request.authorization, local=request.local, public=rules.public)
        auth.authorize(ctx.principal, list(rules.required_scopes))
    except AuthError as exc:
        exc.headers["WWW-Authenticate"] = discovery.www_authenticate(exc.challenge, metadata_url(policies, request))
        raise


def metadata_url(policies: AuthPolicies, request: CallRequest) -> str | None:
    """Where a refused client finds how to log in (RFC 9728), while OAuth is configured."""
    base = policies.public_url or request.base_url
    if policies.auth.oauth is None or base is None:
        return None
    return discovery.metadata_url(base, request.transport)


class Authenticate:
    """Runs first (after deprecation): nothing is read, parsed or counted for an unknown caller."""

    def __init__(self, policies: AuthPolicies, rules: Policy) -> None:
        self.policies = policies
        self.rules = rules

    async def __call__(self, call: Call, call_next: CallNext) -> Outcome:
        # an identity provider's keys are fetched off the loop, before the synchronous check
        """Authenticate the call (fetching an identity provider's keys first, off the loop) before the rest of
        the chain runs."""
        with tracing.stage("admit"):
            await self.policies.auth.prepare(call.request.authorization)
            authenticate(self.policies, self.rules, call.ctx, call.request)
        return await call_next(call)
