"""Process settings from the environment, with embedded defaults (files under var/)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kumitate.project import SOURCE_CHECKOUT, Project

REPO_ROOT = SOURCE_CHECKOUT


@dataclass(frozen=True, slots=True)
class Settings:
    """Where services keep state and find bundled data.

    `data_dir` (KUMITATE_DATA_DIR, default the project's `var/`) holds SQLite/DuckDB files and
    caches; `sample_dir` (KUMITATE_SAMPLE_DIR) is the project's sample data under `data/`.
    """

    data_dir: Path
    sample_dir: Path
    public_base_url: str

    @classmethod
    def from_env(
        cls, env: dict[str, str] | None = None, *, host: str | None = None, port: int | None = None
    ) -> Settings:
        """`host`/`port`: the address actually served (the command line), over HOST/PORT."""
        env = dict(os.environ if env is None else env)
        root = Project.discover(env=env).root
        data_dir = Path(env.get("KUMITATE_DATA_DIR", str(root / "var")))
        host = host or env.get("HOST", "127.0.0.1")
        port = port or int(env.get("PORT", "8000"))
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"  # an IPv6 literal in a URL
        return cls(
            data_dir=data_dir,
            sample_dir=Path(env.get("KUMITATE_SAMPLE_DIR", str(root / "data"))),
            public_base_url=env.get("KUMITATE_PUBLIC_URL", f"http://{host}:{port}").rstrip("/"),
        )

    @staticmethod
    def base_url_of(scope: Mapping[str, Any]) -> str | None:
        """`scheme://host` of an ASGI HTTP request, as the caller addressed it: the Host header
        (a proxy must pass it on) and the scheme, which uvicorn takes from X-Forwarded-Proto
        when the proxy is trusted (FORWARDED_ALLOW_IPS)."""
        if scope.get("type") != "http":
            return None
        host = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"), None)
        if not host and scope.get("server"):
            server_host, server_port = scope["server"]
            host = f"{server_host}:{server_port}"
        return f"{scope.get('scheme', 'http')}://{host}" if host else None

    def service_dir(self, service: str) -> Path:
        """A per-service state directory, created on demand."""
        path = self.data_dir / service
        path.mkdir(parents=True, exist_ok=True)
        return path
