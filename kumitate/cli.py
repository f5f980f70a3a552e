"""The `kumitate` command: serve HTTP + MCP, or MCP over stdio.

kumitate serve [--host H] [--port P] [--service NAME ...]
kumitate mcp --stdio [--service NAME | --toolset NAME]
kumitate init DIR | new service|tool|resource ... | generate [--check] | lint | tools [--url URL]
kumitate call SERVICE TOOL --json '{...}' [--url URL --transport http|mcp]
kumitate db upgrade | current
kumitate diff BASE [HEAD]
kumitate --version
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from kumitate import __version__
from kumitate.observability import calllog

if TYPE_CHECKING:
    from kumitate.settings import Settings

T = TypeVar("T")


def _start(settings: Settings, build: Callable[[], T]) -> T:
    """`build()` after checking the data directory. What an operator or a developer must fix (a
    storage failure, a tool without a handler, no generated code) exits with one line, no traceback."""
    from kumitate import datadir
    from kumitate.project import ProjectError
    from kumitate.runtime import MissingHandlerError
    from kumitate.settings import SettingsError

    try:
        datadir.check(settings.data_dir)
        return build()
    except (MissingHandlerError, ProjectError, SettingsError) as exc:
        message: str | None = str(exc)
    except Exception as exc:
        message = datadir.startup_error(settings.data_dir, exc)
        if message is None:
            raise
    print(f"kumitate: {message}", file=sys.stderr)
    raise SystemExit(1)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from kumitate.app import create_app
    from kumitate.policies.auth import Authenticator, exposure_warning
    from kumitate.runtime import Runtime
    from kumitate.serving.workers import SERVICES_ENV, WORKERS_ENV
    from kumitate.transports.protocol import EdgeLimits, protocol_for

    overrides = {"host": args.host, "port": args.port, "workers": args.workers, "services": args.service}
    settings = _settings(**overrides)  # URLs in results follow the address served
    warning = exposure_warning(settings.host, Authenticator.from_settings(settings).enabled)
    if warning:
        print(warning, file=sys.stderr)
    # No access log: it prints raw paths, which carry export handles and chart ids. The pipeline logs
    # one line per call (route, code, duration). Proxy headers: trusted per FORWARDED_ALLOW_IPS.
    # The HTTP protocol is uvicorn's httptools one with the edge limits (transports/protocol.py).
    limits = EdgeLimits(settings.http_max_header_bytes, settings.http_header_timeout_s)
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "log_level": args.log_level,
        "log_config": calllog.uvicorn_log_config(settings.log_format, args.log_level),
        "lifespan": "on",
        "access_log": False,
        "proxy_headers": True,
        "http": protocol_for(limits),
    }
    if settings.workers == 1:
        from kumitate.serving.drain import DrainingServer

        app = _start(settings, lambda: create_app(settings))
        server = DrainingServer(uvicorn.Config(app, **options), app.runtime, settings.drain_delay_s)
        server.run()
        return 0 if server.started else 3  # as uvicorn.run: 3 when start-up failed
    # Each worker process builds its own app from the environment (uvicorn imports the factory),
    # so what the command line chose reaches their settings through the variables it overrides.
    os.environ.update({WORKERS_ENV: str(settings.workers), "HOST": settings.host, "PORT": str(settings.port)})
    if settings.services:
        os.environ[SERVICES_ENV] = ",".join(settings.services)
    _start(settings, lambda: Runtime(settings).close())  # stores and sample data once, before N workers open them
    uvicorn.run("kumitate.app:create_app", factory=True, workers=settings.workers, **options)
    return 0


def _settings(**overrides: object) -> Settings:
    """The settings from the environment (and the command line's `overrides`); an invalid value
    exits with one line per variable, no traceback."""
    from pydantic import ValidationError

    from kumitate.settings import Settings, invalid_variables

    try:
        return Settings.from_env(None, **overrides)
    except ValidationError as exc:
        for line in invalid_variables(exc):
            print(f"kumitate: {line}", file=sys.stderr)
        raise SystemExit(2) from None


def _mcp(args: argparse.Namespace) -> int:
    if not args.stdio:
        print("only --stdio is served by this command; `kumitate serve` serves MCP over HTTP at /mcp", file=sys.stderr)
        return 2
    settings = _settings()
    os.environ.setdefault("FASTMCP_LOG_LEVEL", settings.fastmcp_log_level or "WARNING")  # fastmcp reads it
    from kumitate.project import Project, load_toolsets
    from kumitate.runtime import Runtime
    from kumitate.transports.mcp import build_server

    calllog.configure(settings.log_format)
    services = [args.service] if args.service else None
    project: Project | None = None
    if args.toolset:
        project = settings.load_project().activate()  # once: the Runtime below serves this one
        toolsets = load_toolsets()
        if args.toolset not in toolsets:
            print(f"unknown toolset {args.toolset!r}; known: {', '.join(toolsets) or 'none'}", file=sys.stderr)
            return 2
        services = sorted({key.partition(".")[0] for key in toolsets[args.toolset]})
    runtime = _start(settings, lambda: Runtime(settings, services, project))
    server = build_server(runtime, services, toolset=args.toolset)
    from kumitate.serving.heap import keep_freed_memory

    keep_freed_memory(settings.heap_keep_mb << 20)
    from kumitate.stdio_framing import adapt_stdio

    adapt_stdio()  # newline-delimited JSON (standard), or Content-Length frames (duo-talk's provider)
    try:
        server.run(transport="stdio", show_banner=False)
    finally:
        runtime.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """The `kumitate` command: parse `argv` and run the chosen subcommand; returns the exit status."""
    parser = argparse.ArgumentParser(prog="kumitate", description="Spec-driven tools over MCP and HTTP.")
    parser.add_argument("--version", action="version", version=f"kumitate {__version__}")
    sub = parser.add_subparsers(
        dest="command",
        required=True,
        metavar="COMMAND",
        help="serve, mcp, init, new, generate, lint, tools, call, diff or db",
    )
    serve = sub.add_parser("serve", help="serve every service over HTTP (/v1) and MCP (/mcp) in one process")
    serve.add_argument("--host", default=None, help="address to bind (default: HOST, else 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port to bind (default: PORT, else 8000)")
    serve.add_argument("--service", action="append", help="serve only this service (repeatable)")
    serve.add_argument(
        "--log-level",
        default="info",
        choices=("critical", "error", "warning", "info", "debug", "trace"),
        help="uvicorn's log level (default info)",
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes (default: KUMITATE_WORKERS or 1); more than one makes MCP stateless",
    )
    serve.set_defaults(run=_serve)
    mcp = sub.add_parser("mcp", help="serve MCP over stdio (for desktop clients)")
    mcp.add_argument("--stdio", action="store_true", help="speak MCP on stdin/stdout")
    only = mcp.add_mutually_exclusive_group()
    only.add_argument("--service", help="serve only this service's tools")
    only.add_argument("--toolset", help="serve only this named toolset's tools (specs/toolsets.yaml)")
    mcp.set_defaults(run=_mcp)
    from kumitate.commands import add_parsers as add_dev_parsers
    from kumitate.storage.cli import add_parser as add_db_parser

    add_db_parser(sub)
    add_dev_parsers(sub)
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except Exception as exc:
        # A database that is unreachable or on another schema revision, or a library upgraded past an
        # internal kumitate relies on (kumitate.compat): one line that says what to do.
        migrate = sys.modules.get("kumitate.storage.migrate")  # only loaded by commands that open storage
        compat = sys.modules.get("kumitate.compat")
        if not (migrate and isinstance(exc, migrate.StartupError)) and not (
            compat and isinstance(exc, compat.InternalsChanged)
        ):
            raise
        print(f"kumitate: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
