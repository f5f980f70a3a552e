"""Every environment variable the runtime reads, typed, parsed once (pydantic-settings).

`Settings.from_env()` validates the whole process environment at start-up (a bad value stops the
server with the variable's name); the result is passed to `create_app()` / `Runtime`, and nothing in
kumitate/ reads `os.environ` after that. Each field's `validation_alias` is its variable's name, so
an error names the variable, and `make generate` writes the README's settings table from these
declarations (codegen/settings_doc.py; `codegen --check` fails when it is stale).

A service declares its own variables the same way: a `ServiceSettings` subclass in
`handlers/<svc>/settings.py` (e.g. `class YanaSettings(ServiceSettings)` with
`llm_deadline_ms: int = var("YANA_LLM_DEADLINE_MS", 8000, "…")`), read once in its `create(setup)`
with `setup.read(YanaSettings)`: from the mapping the runtime's settings came from (the process
environment, or a test's dict). The README's table has a section per service from these classes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BeforeValidator,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.config import JsonDict
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

from kumitate.admission import CALLS_PER_THREAD
from kumitate.project import SOURCE_CHECKOUT, Project

__all__ = [
    "MAX_BODY_BYTES",
    "REPO_ROOT",
    "CommaList",
    "DeploySettings",
    "EnvSettings",
    "ServiceSettings",
    "Settings",
    "SettingsError",
    "invalid_variables",
    "var",
]

REPO_ROOT = SOURCE_CHECKOUT
MAX_BODY_BYTES = 16 * 1024 * 1024
"""Default request-body cap; a tool's `max_request_bytes` policy sets its own (stays and
evaluate_attendance take 32 MiB for their 100k/200k-item inputs)."""


def _comma_list(value: Any) -> Any:
    if isinstance(value, str):
        return tuple(item.strip() for item in value.split(",") if item.strip())
    return value


CommaList = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_comma_list)]
"""`a,b,c` in the environment; blanks dropped."""


def var(name: str, default: Any, doc: str, shown: str | None = None, **constraints: Any) -> Any:
    """A setting read from the variable `name`; `shown` is the default as the README table says it."""
    extra: JsonDict | None = {"shown": shown} if shown is not None else None
    return Field(default, validation_alias=name, description=doc, json_schema_extra=extra, **constraints)


def invalid_variables(error: ValidationError) -> list[str]:
    """`VARIABLE: what is wrong`, one per refused value (the loc of a settings error is the variable)."""
    return [f"{'.'.join(str(part) for part in e['loc'])}: {e['msg']}" for e in error.errors()]


class SettingsError(ValueError):
    """A service's settings refused a value: one line naming the service and each variable."""

    def __init__(self, service: str, error: ValidationError) -> None:
        super().__init__(f"service {service!r}: {'; '.join(invalid_variables(error))}")


class EnvSettings(BaseSettings):
    """Settings read from environment variables named by each field's alias; empty means unset."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True, validate_by_name=True, env_ignore_empty=True)
    _env: Mapping[str, str] = PrivateAttr(default_factory=lambda: dict(os.environ))

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Only the values given: `from_env` reads the one mapping it was handed, so a test's dict
        is the whole environment (pydantic-settings would otherwise fill gaps from os.environ)."""
        return (init_settings,)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Self:
        """From `env` alone when given (a test's dict), else the process environment; `overrides`
        (field names) win, as the command line does over HOST and PORT."""
        source = dict(os.environ if env is None else env)
        names = {f.validation_alias for f in cls.model_fields.values()}
        values: dict[str, Any] = {k: v for k, v in source.items() if k in names and v != ""}
        values |= {str(cls.model_fields[k].validation_alias): v for k, v in overrides.items() if v is not None}
        settings: Self = cls.model_validate(values)
        settings._env = source  # its own private attribute, set by its own class
        return settings

    @property
    def env(self) -> Mapping[str, str]:
        """The variables these settings were read from (a service builds its own settings from them)."""
        return self._env

    @classmethod
    def variables(cls) -> list[tuple[str, str, str]]:
        """(variable, default as shown, what) per field, in declaration order."""
        rows = []
        for field in cls.model_fields.values():
            if not isinstance(field.validation_alias, str):
                continue
            extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
            shown = extra.get("shown")
            if shown is None:
                default = field.default
                shown = "off" if default is False else "none" if default in (None, ()) else f"`{default}`"
            rows.append((field.validation_alias, str(shown), field.description or ""))
        return rows


class ServiceSettings(EnvSettings):
    """Base of a service's own settings class (see the module docstring)."""


class DeploySettings(EnvSettings):
    """Where shared state lives when more than one instance serves (kumitate.deploy)."""

    database_url: str | None = var(
        "KUMITATE_DATABASE_URL", None, "`postgresql://…` for shared relational state", "SQLite under the data dir"
    )
    redis_url: str | None = var(
        "KUMITATE_REDIS_URL",
        None,
        "`redis://…` for rate limits and caches shared by instances",
        "none (process memory)",
    )
    db_migrate: Literal["auto", "off"] = var(
        "KUMITATE_DB_MIGRATE", "auto", "`off`: refuse to start on a schema-version mismatch instead of migrating"
    )
    sqlite_busy_timeout_ms: int = var(
        "KUMITATE_SQLITE_BUSY_TIMEOUT_MS", 5000, "SQLite busy timeout (a call's remaining deadline lowers it)", ge=0
    )
    db_timeout_ms: int = var(
        "KUMITATE_DB_TIMEOUT_MS",
        30000,
        "longest one transaction of a call without a deadline may take (pool wait, statements, commit); "
        "past it: 503 `STORAGE_UNAVAILABLE`",
        gt=0,
    )
    off_loop_bytes: int = var(
        "KUMITATE_OFF_LOOP_BYTES",
        1 << 20,
        "a JSON body larger than this is parsed on its service's thread and checked in a worker process, "
        "never on the event loop (kumitate.offloop), bytes",
        ge=0,
    )
    commit_grace_ms: int = var(
        "KUMITATE_COMMIT_GRACE_MS",
        2000,
        "how long past its deadline a call whose commit is under way may take to report it; then 408 "
        "(outcome unknown) and the database connection is cut",
        ge=0,
    )

    @property
    def shared(self) -> bool:
        """True when state is shared with other instances (a database server or Redis)."""
        return bool(self.database_url or self.redis_url)


class Settings(DeploySettings):
    """The runtime's settings: where it serves, keeps state, and which policies it applies."""

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
    allowed_hosts: CommaList = var(
        "KUMITATE_ALLOWED_HOSTS", (), "extra `Host` names served, comma-separated; `*` for any", "loopback only"
    )
    allowed_origins: CommaList = var(
        "KUMITATE_ALLOWED_ORIGINS", (), "browser origins served (CORS), comma-separated; `*` for any", "same origin"
    )
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
    max_timeout_ms: int | None = var("KUMITATE_MAX_TIMEOUT_MS", None, "operator cap on every tool's deadline", gt=0)
    worker_threads: int = var(
        "KUMITATE_WORKER_THREADS",
        16,
        "threads for sync handlers, per service (its bulkhead: a stuck service cannot take another's)",
        ge=1,
    )
    service_worker_threads: CommaList = var(
        "KUMITATE_SERVICE_WORKER_THREADS",
        (),
        "per-service overrides, comma-separated `service=N` (e.g. `analytics=4,household=32`)",
    )
    bulkhead_wait_ms: int = var(
        "KUMITATE_BULKHEAD_WAIT_MS",
        5000,
        "longest a call waits for one of its service's threads (less if its deadline is nearer); "
        "then 503 `SERVICE_UNAVAILABLE`",
        ge=0,
    )
    max_in_flight: int = var(
        "KUMITATE_MAX_IN_FLIGHT",
        0,
        "calls in flight per service on this instance; past it a call waits `KUMITATE_ADMISSION_WAIT_MS`, then "
        "503 `SERVICE_UNAVAILABLE` with Retry-After, its body unread (0: 16 per worker thread of the service)",
        shown="0 (16 × threads)",
        ge=0,
    )
    admission_wait_ms: int = var(
        "KUMITATE_ADMISSION_WAIT_MS",
        100,
        "longest a call waits for a slot under `KUMITATE_MAX_IN_FLIGHT` before it is refused",
        ge=0,
    )
    admission_queue_ms: int = var(
        "KUMITATE_ADMISSION_QUEUE_MS",
        500,
        "an HTTP tool call that waited longer than this in the server's event loop before the application took it is "
        "answered 503 `SERVICE_UNAVAILABLE` with Retry-After at once, its body unread (lean HTTP path; 0: never)",
        ge=0,
    )
    task_workers: int = var(
        "KUMITATE_TASK_WORKERS",
        4,
        "tasks (long tools started with `Prefer: respond-async` or the MCP tasks extension) one instance runs "
        "at once; past it a new task is refused with 503 `SERVICE_UNAVAILABLE`",
        ge=1,
    )
    task_lease_ms: int = var(
        "KUMITATE_TASK_LEASE_MS",
        30000,
        "a running task's lease, renewed by its instance every third of it; a task whose lease has run out "
        "(its instance died) is reported failed with `TASK_LOST`",
        ge=100,
    )
    idempotency_lease_ms: int = var(
        "KUMITATE_IDEMPOTENCY_LEASE_MS",
        30000,
        "the longest a key stays 409 `IN_PROGRESS` after the instance running its call died, for a tool without "
        "a `timeout_ms` (or a longer one, or a task): the call's claim is renewed every third of it while it runs",
        ge=300,
    )
    task_ttl_s: int = var(
        "KUMITATE_TASK_TTL_S",
        86400,
        "how long a finished task's result stays readable at /v1/operations/{id}",
        ge=1,
    )
    task_max_result_bytes: int = var(
        "KUMITATE_TASK_MAX_RESULT_BYTES",
        1048576,
        "largest task result stored; a larger one is stored as the error `OUTPUT_TOO_LARGE`",
        ge=1024,
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
    mcp_stateless: bool | None = var(
        "KUMITATE_MCP_STATELESS",
        None,
        "MCP streamable HTTP without sessions (no affinity needed)",
        "on with a database/Redis URL, else off",
    )
    max_request_bytes: int = var(
        "KUMITATE_MAX_REQUEST_BYTES",
        MAX_BODY_BYTES,
        "request-body cap, enforced while the body streams in (a tool's `max_request_bytes` sets its own)",
        "16 MiB",
        ge=1,
    )
    http_max_header_bytes: int = var(
        "KUMITATE_HTTP_MAX_HEADER_BYTES",
        32768,
        "request line plus headers, in bytes; more is refused 431 before it is buffered",
        "32 KiB",
        ge=1024,
    )
    http_max_headers: int = var("KUMITATE_HTTP_MAX_HEADERS", 100, "header fields per request; more is 431", ge=8)
    http_header_timeout_s: float = var(
        "KUMITATE_HTTP_HEADER_TIMEOUT_S",
        10.0,
        "seconds a connection may take to send a request's headers (slowloris); then 408 and closed",
        gt=0,
    )
    http_body_timeout_s: float = var(
        "KUMITATE_HTTP_BODY_TIMEOUT_S",
        60.0,
        "seconds a request body may take to arrive once the server reads it; then 408 and closed",
        gt=0,
    )
    http_lean: bool = var(
        "KUMITATE_HTTP_LEAN",
        True,
        "answer plain JSON `POST /v1/<service>/<tool>` calls on the lean path in front of Litestar (same pipeline and answers; "
        "sheds at the admission bound before reading the body)",
        "on",
    )
    mcp_max_sessions: int = var(
        "KUMITATE_MCP_MAX_SESSIONS",
        500,
        "open MCP streamable-HTTP sessions per endpoint; one more is refused 503 with Retry-After",
        ge=1,
    )
    mcp_session_idle_s: float = var(
        "KUMITATE_MCP_SESSION_IDLE_S",
        600.0,
        "an MCP session with no request in flight for this long is closed (its id then answers 404)",
        gt=0,
    )
    mcp_tool_search: bool = var(
        "KUMITATE_MCP_TOOL_SEARCH",
        False,
        "`/mcp` (and stdio without `--service`) lists a BM25 `search_tools` and a `call_tool` proxy instead of every tool",
        "off",
    )
    mcp_lean: bool = var(
        "KUMITATE_MCP_LEAN",
        True,
        "answer stateless 2026-07-28 `tools/call` requests on the lean path (same pipeline and answers, no SDK session machinery)",
        "on",
    )
    mcp_page_size: int = var(
        "KUMITATE_MCP_PAGE_SIZE",
        100,
        "items per page of an MCP `tools/list`, `resources/list`, `resources/templates/list`, `prompts/list`",
        ge=1,
    )
    mcp_state_secret: SecretStr | None = var(
        "KUMITATE_MCP_STATE_SECRET",
        None,
        "key that signs MCP `requestState` (2026-07-28 multi-round calls); give every instance of a cluster the same one",
        "random per process",
    )
    metrics_token: SecretStr | None = var(
        "KUMITATE_METRICS_TOKEN", None, "serve `/metrics` behind this bearer token", "off"
    )
    metrics: Literal["open"] | None = var("KUMITATE_METRICS", None, "`open`: serve `/metrics` without a token", "off")
    log_format: Literal["json", "text"] = var(
        "KUMITATE_LOG_FORMAT",
        "json",
        "stderr log lines (the server's, uvicorn's and fastmcp's): `json` (one object a line) or `text` for humans",
    )
    fastmcp_log_level: str | None = var(
        "FASTMCP_LOG_LEVEL", None, "fastmcp's own log level (read by fastmcp)", "`WARNING` for stdio"
    )

    @model_validator(mode="before")
    @classmethod
    def _defaults_from_the_project(cls, data: Any) -> Any:
        """The data and sample directories default to the project's var/ and data/; the public base
        URL to the address served."""
        if not isinstance(data, dict):
            return data
        data = dict(data)

        def get(name: str) -> Any:
            field = cls.model_fields[name]
            return data.get(name, data.get(str(field.validation_alias)))

        if get("data_dir") is None or get("sample_dir") is None:
            project = get("project")
            root = Project.at(Path(project)).root if project else Project.discover(env={}).root
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
    address the caller used wins: `kumitate.transports.origin.base_url_of`)."""

    def load_project(self) -> Project:
        """KUMITATE_PROJECT, else the project around the working directory, else this checkout."""
        return Project.at(self.project) if self.project else Project.discover(env={})

    @field_validator("service_worker_threads")
    @classmethod
    def _service_threads(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            name, _, count = item.partition("=")
            if not name.strip() or not count.strip().isdigit() or int(count) < 1:
                raise ValueError(f"{item!r} is not `service=N` with N a positive integer")
        return value

    def in_flight_for(self, service: str) -> int:
        """`service`'s admission bound: KUMITATE_MAX_IN_FLIGHT, else CALLS_PER_THREAD per thread (kumitate.admission)."""
        return self.max_in_flight or CALLS_PER_THREAD * self.threads_for(service)

    def threads_for(self, service: str) -> int:
        """The size of `service`'s bulkhead: its KUMITATE_SERVICE_WORKER_THREADS entry, else KUMITATE_WORKER_THREADS."""
        for item in self.service_worker_threads:
            name, _, count = item.partition("=")
            if name.strip() == service:
                return int(count)
        return self.worker_threads

    def service_dir(self, service: str) -> Path:
        """A per-service state directory, created on demand."""
        path = self.data_dir / service
        path.mkdir(parents=True, exist_ok=True)
        return path
