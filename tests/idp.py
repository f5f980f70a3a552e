"""A local identity provider for the OAuth tests: real HTTP on a free port, real keys, real JWTs.

It publishes OpenID Connect metadata and a JWK set whose keys the test can rotate, counts
JWK-set fetches, and mints tokens (good ones and every kind of bad one) with PyJWT.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

AUDIENCE = "https://kumitate.test"


class SigningKey:
    def __init__(self, kid: str) -> None:
        self.kid = kid
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    @property
    def jwk(self) -> dict[str, Any]:
        public = json.loads(RSAAlgorithm.to_jwk(self.private.public_key()))
        return {**public, "kid": self.kid, "use": "sig", "alg": "RS256"}

    @property
    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class IdentityProvider:
    def __init__(self) -> None:
        self.keys: list[SigningKey] = [SigningKey("k1")]
        self.jwks_fetches = 0
        self.delay_s = 0.0
        """How long the JWK set takes to answer (a slow provider)."""
        self.url = ""

    @property
    def jwks(self) -> dict[str, Any]:
        return {"keys": [k.jwk for k in self.keys]}

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims = {
            "iss": self.url,
            "aud": AUDIENCE,
            "sub": "alice",
            "iat": now,
            "exp": now + 300,
            "scope": "stays yana",
        }
        claims.update(overrides)
        return {k: v for k, v in claims.items() if v is not None}

    def token(self, key: SigningKey | None = None, kid: str | None = None, **claims: Any) -> str:
        key = key or self.keys[0]
        return jwt.encode(self.claims(**claims), key.private, algorithm="RS256", headers={"kid": kid or key.kid})

    def bad_tokens(self) -> dict[str, str]:
        """Every kind of token a resource server must refuse, by name."""
        key = self.keys[0]
        now = int(time.time())
        good = self.token()
        head, body, signature = good.split(".")
        tampered_body = _b64(json.dumps(self.claims(sub="mallory", scope="stays yana analytics")).encode())
        unsigned_header = _b64(json.dumps({"alg": "none", "typ": "JWT", "kid": key.kid}).encode())
        hs_header = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": key.kid}).encode())
        hs_body = _b64(json.dumps(self.claims()).encode())
        hs_signature = _b64(hmac.new(key.public_pem, f"{hs_header}.{hs_body}".encode(), hashlib.sha256).digest())
        return {
            "expired": self.token(iat=now - 7200, exp=now - 3600),
            "not_yet_valid": self.token(nbf=now + 3600),
            "wrong_audience": self.token(aud="https://elsewhere.test"),
            "wrong_issuer": self.token(iss="https://evil.test"),
            "unknown_kid": self.token(key=SigningKey("k-unknown")),
            "tampered_signature": f"{head}.{body}.{signature[:-6]}{'A' * 6 if signature[-6:] != 'A' * 6 else 'B' * 6}",
            "tampered_claims": f"{head}.{tampered_body}.{signature}",
            "alg_none": f"{unsigned_header}.{hs_body}.",
            "hs256_with_public_key": f"{hs_header}.{hs_body}.{hs_signature}",
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        idp = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/.well-known/openid-configuration":
                    body: dict[str, Any] = {"issuer": idp.url, "jwks_uri": f"{idp.url}/jwks.json"}
                elif self.path == "/jwks.json":
                    idp.jwks_fetches += 1
                    time.sleep(idp.delay_s)
                    body = idp.jwks
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_args: Any) -> None:
                pass

        return Handler


@contextmanager
def running_idp() -> Iterator[IdentityProvider]:
    idp = IdentityProvider()
    server = ThreadingHTTPServer(("127.0.0.1", 0), idp._handler())
    idp.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield idp
    finally:
        server.shutdown()
        server.server_close()
