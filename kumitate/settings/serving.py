"""Serving: where the process serves and keeps its files, how many workers, which services, when it is unwell
(health), how it drains, and the memory it keeps."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from kumitate.project import Project
from kumitate.settings.base import CommaList, EnvSettings, var

__all__ = ["ServingSettings"]


class ServingSettings(EnvSettings):
    """Where and how this process serves: address, project and directories, workers and services, health,
    drain and heap."""

    host: str = var("HOST", "127.0.0.1", "address `kumitate serve` binds (its `--host` wins)")
    port: int = var("PORT", 8000, "port `kumitate serve` binds (its `--port` wins)", ge=0, le=65535)
    project: Path | None = var(
        "KUMITATE_PROJECT",
        None,
        "the project to serve (specs/, generated/, handlers/)",
        "the project around the working directory",
    )
    data_dir: Path = var("KUMITATE_DATA_DIR", None, "SQLite/DuckDB files, caches, exports", "`<project>/var`")
    sample_dir: Path = var("KUMITATE_SAMPLE_DIR", None, "bundled sample data read on first start", "`<project>/data`")
    public_url: str | None = var(
        "KUMITATE_PUBLIC_URL",
        None,
        "base of chart and export URLs in results (e.g. `https://tools.example.org`)",
        "the address the caller used",
    )
    loop_stall_ms: int = var(
        "KUMITATE_LOOP_STALL_MS", 5000, "`/healthz` fails once the event loop has been blocked this long", gt=0
    )
    workers_stuck_ms: int = var(
        "KUMITATE_WORKERS_STUCK_MS",
        300000,
        "`/healthz` fails once a service's threads have all been busy this long with none finishing (0: never)",
        ge=0,
    )
    drain_delay_s: float = var(
        "KUMITATE_DRAIN_DELAY_S",
        5.0,
        "on SIGTERM, seconds `/readyz` answers 503 before the listener closes (the balancer's check period)",
        ge=0,
    )
    heap_keep_mb: int = var(
        "KUMITATE_HEAP_KEEP_MB",
        64,
        "freed memory a serving process keeps for its next large call instead of returning it to the system, "
        "MiB (glibc; larger blocks are returned at once; 0: the C library's defaults)",
        ge=0,
        le=2047,
    )
    workers: int = var(
        "KUMITATE_WORKERS",
        1,
        "worker processes (`kumitate serve --workers N`); more than one makes MCP stateless",
        ge=1,
    )
    services: CommaList | None = var(
        "KUMITATE_SERVICES", None, "the services served, comma-separated (`--service` sets it)", "every service"
    )

    @model_validator(mode="before")
    @classmethod
    def _defaults_from_the_project(cls, raw: object) -> object:
        """The data and sample directories default to the project's var/ and data/; the public base
        URL to the address served."""
        if not isinstance(raw, dict):
            return raw
        data: dict[str, object] = dict(raw)

        def get(name: str) -> object:
            field = cls.model_fields[name]
            return data.get(name, data.get(str(field.validation_alias)))

        if get("data_dir") is None or get("sample_dir") is None:
            project = get("project")
            root = Project.at(Path(str(project))).root if project else Project.discover(env={}).root
            data.setdefault("data_dir", get("data_dir") or root / "var")
            data.setdefault("sample_dir", get("sample_dir") or root / "data")
        if data.get("public_base_url") is None:
            host = str(get("host") or "127.0.0.1")
            if ":" in host and not host.startswith("["):
                host = f"[{host}]"  # an IPv6 literal in a URL
            data["public_base_url"] = get("public_url") or f"http://{host}:{get('port') or 8000}"
        data["public_base_url"] = str(data["public_base_url"]).rstrip("/")
        return data

    public_base_url: str = Field("", exclude=True)
    """Base of URLs in results: KUMITATE_PUBLIC_URL, else the address served (per request, the
    address the caller used wins: `kumitate.transports.edge.hosts.base_url_of`)."""

    def load_project(self) -> Project:
        """KUMITATE_PROJECT, else the project around the working directory, else this checkout."""
        return Project.at(self.project) if self.project else Project.discover(env={})

    def service_dir(self, service: str) -> Path:
        """A per-service state directory, created on demand."""
        path = self.data_dir / service
        path.mkdir(parents=True, exist_ok=True)
        return path
