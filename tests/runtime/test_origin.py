"""The Host/Origin allow-list as a pure policy: what is served and what is refused."""

from __future__ import annotations

from typing import Any

import pytest

from kumitate.transports.edge.hosts import (
    BadHost,
    OriginPolicy,
    base_url_of,
    hostname,
    normalise_origin,
    request_host,
    valid_authority,
)

SCOPE: dict[str, Any] = {"type": "http", "method": "POST", "server": ("127.0.0.1", 8000)}


@pytest.mark.parametrize(
    ("value", "expected"),
    [("LocalHost:8000", "localhost"), ("[::1]:8000", "::1"), ("[::1]", "::1"), ("example.com.", "example.com")],
)
def test_hostname(value: str, expected: str) -> None:
    assert hostname(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("HTTP://Example.com:80", "http://example.com"),
        ("https://example.com:8443", "https://example.com:8443"),
        ("http://[::1]:8000", "http://[::1]:8000"),
        ("null", None),
        ("https://example.com/path", None),
    ],
)
def test_normalise_origin(value: str, expected: str | None) -> None:
    assert normalise_origin(value) == expected


def test_defaults_serve_loopback_and_the_connection_address_only() -> None:
    policy = OriginPolicy.from_env({})
    assert policy.refusal(SCOPE, {"host": "localhost:8000"}) is None
    assert policy.refusal(SCOPE, {"host": "127.0.0.1:8000"}) is None
    assert policy.refusal({**SCOPE, "server": ("10.0.0.5", 8000)}, {"host": "10.0.0.5:8000"}) is None
    assert policy.refusal(SCOPE, {"host": "evil.example"}) is not None
    assert policy.refusal(SCOPE, {"host": "10.0.0.5"}) is not None
    assert policy.cors_origins == []


def test_environment_and_public_url_extend_the_lists() -> None:
    env = {"KUMITATE_ALLOWED_HOSTS": "a.example, B.example:9000", "KUMITATE_ALLOWED_ORIGINS": "https://ui.example"}
    policy = OriginPolicy.from_env({**env, "KUMITATE_PUBLIC_URL": "https://tools.example.org"})
    for host in ("a.example", "b.example", "tools.example.org:443"):
        assert policy.refusal(SCOPE, {"host": host}) is None, host
    assert policy.refusal(SCOPE, {"host": "localhost", "origin": "https://ui.example"}) is None
    assert policy.refusal(SCOPE, {"host": "tools.example.org", "origin": "https://tools.example.org"}) is None
    assert policy.refusal(SCOPE, {"host": "localhost", "origin": "https://other.example"}) is not None
    assert policy.cors_origins == ["https://tools.example.org", "https://ui.example"]


def test_wildcards() -> None:
    policy = OriginPolicy.from_env({"KUMITATE_ALLOWED_HOSTS": "*", "KUMITATE_ALLOWED_ORIGINS": "*"})
    assert policy.refusal(SCOPE, {"host": "anything.example", "origin": "https://x.example"}) is None
    assert policy.cors_origins == ["*"]


def test_same_origin_needs_the_same_port() -> None:
    policy = OriginPolicy.from_env({})
    assert policy.refusal(SCOPE, {"host": "127.0.0.1:8000", "origin": "http://127.0.0.1:8000"}) is None
    assert policy.refusal(SCOPE, {"host": "127.0.0.1:8000", "origin": "http://127.0.0.1:3000"}) is not None
    assert policy.refusal(SCOPE, {"host": "localhost", "origin": "http://localhost"}) is None


def test_cross_site_writes_without_origin_are_refused_reads_are_not() -> None:
    policy = OriginPolicy.from_env({})
    headers = {"host": "127.0.0.1:8000", "sec-fetch-site": "cross-site"}
    assert policy.refusal(SCOPE, headers) is not None
    assert policy.refusal({**SCOPE, "method": "GET"}, headers) is None
    assert policy.refusal(SCOPE, {**headers, "sec-fetch-site": "same-origin"}) is None


def test_the_bound_host_is_served_but_gets_no_cors() -> None:
    policy = OriginPolicy.from_env({}, bound_host="myhost.lan")
    assert policy.refusal(SCOPE, {"host": "myhost.lan:8000"}) is None
    assert policy.cors_origins == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("LocalHost:8000", "localhost:8000"),
        ("[::1]:8000", "[::1]:8000"),
        ("tools.example.org", "tools.example.org"),
        ("localhost:8000@evil.example", None),
        ("user@localhost", None),
        ("localhost/path", None),
        ("localhost:99999", None),
        ("localhost:", None),
        ("[nothex]:80", None),
        ("a b", None),
        ("", None),
    ],
)
def test_valid_authority(value: str, expected: str | None) -> None:
    assert valid_authority(value) == expected


def raw_scope(*headers: tuple[str, str], scheme: str = "http") -> dict[str, Any]:
    return {**SCOPE, "scheme": scheme, "headers": [(k.encode(), v.encode()) for k, v in headers]}


def test_userinfo_in_host_is_refused_and_never_becomes_a_url() -> None:
    """Seen: `Host: localhost:P@evil.example` passed and the export URL pointed at evil.example."""
    policy = OriginPolicy.from_env({})
    scope = raw_scope(("host", "localhost:8000@evil.example"))
    assert policy.refusal(scope, {"host": "localhost:8000@evil.example"}) is not None
    with pytest.raises(BadHost):
        request_host(scope)
    assert base_url_of(scope) == "http://127.0.0.1:8000"  # the connection's own address, never evil.example


def test_duplicate_host_or_origin_is_refused() -> None:
    """Seen: the check read the last Host while URLs used the first."""
    policy = OriginPolicy.from_env({})
    two_hosts = raw_scope(("host", "evil.example"), ("host", "localhost:8000"))
    assert policy.refusal(two_hosts, {"host": "localhost:8000"}) is not None
    with pytest.raises(BadHost):
        request_host(two_hosts)
    two_origins = raw_scope(
        ("host", "localhost:8000"), ("origin", "https://evil.example"), ("origin", "http://localhost:8000")
    )
    assert policy.refusal(two_origins, {"host": "localhost:8000", "origin": "http://localhost:8000"}) is not None
    one = raw_scope(("host", "localhost:8000"), ("origin", "http://localhost:8000"))
    assert policy.refusal(one, {"host": "localhost:8000", "origin": "http://localhost:8000"}) is None
    assert base_url_of(one) == "http://localhost:8000"


def test_same_origin_compares_the_scheme() -> None:
    """Seen: an https Origin for the same host and port counted as same-origin on an http server."""
    policy = OriginPolicy.from_env({})
    headers = {"host": "localhost:8000", "origin": "https://localhost:8000"}
    assert policy.refusal(raw_scope(*headers.items()), headers) is not None
    assert policy.refusal(raw_scope(*headers.items(), scheme="https"), headers) is None
