"""Authentication: static bearer tokens, the development token, the failed-authentication guard, OAuth."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from kumitate.settings.base import CommaList, EnvSettings, var

__all__ = ["AuthSettings"]


class AuthSettings(EnvSettings):
    """Who may call (kumitate.policies.auth, authguard, oauth): tokens, the local principal, OAuth."""

    tokens: SecretStr | None = var(
        "KUMITATE_TOKENS",
        None,
        'bearer tokens: JSON `{"<token>": {"principal", "scopes"}}`',
        "none (auth off)",
    )
    tokens_file: Path | None = var("KUMITATE_TOKENS_FILE", None, "the same table in a JSON or YAML file")
    allow_dev_token: bool = var("KUMITATE_ALLOW_DEV_TOKEN", False, "`1`: the fixed token `dev-token` with every scope")
    local_principal: str = var("KUMITATE_LOCAL_PRINCIPAL", "local", "principal of stdio and in-process calls")
    auth_failures: str | None = var(
        "KUMITATE_AUTH_FAILURES", None, "failed-auth rate limit per client address (rps/burst)", "`0.2/10`"
    )
    oauth_issuer: str | None = var(
        "KUMITATE_OAUTH_ISSUER",
        None,
        'accept JWT access tokens of this issuer (see "Tokens from an identity provider")',
        "none (OAuth off)",
    )
    oauth_audience: CommaList = var(
        "KUMITATE_OAUTH_AUDIENCE", (), "the audiences (`aud`) accepted, comma-separated; required with an issuer"
    )
    oauth_jwks_url: str | None = var(
        "KUMITATE_OAUTH_JWKS_URL", None, "the provider's JWK set", "the issuer's metadata `jwks_uri`"
    )
    oauth_leeway_s: float = var("KUMITATE_OAUTH_LEEWAY_S", 30.0, "clock skew allowed on `exp`/`nbf`", ge=0)
    oauth_jwks_min_refresh_s: float = var(
        "KUMITATE_OAUTH_JWKS_MIN_REFRESH_S", 10.0, "minimum seconds between JWK-set fetches", ge=0
    )
    oauth_http_timeout_s: float = var(
        "KUMITATE_OAUTH_HTTP_TIMEOUT_S",
        5.0,
        "total time-out of one key refresh (metadata and JWK set, whole answers)",
        ge=0,
    )
