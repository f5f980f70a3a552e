"""The `kumitate` command: serve HTTP + MCP, or MCP over stdio.

kumitate serve [--host H] [--port P] [--service NAME ...]
kumitate mcp --stdio [--service NAME]
"""

from __future__ import annotations

import argparse
import os
import sys


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from kumitate.app import create_app
    from kumitate.policies.auth import Authenticator, exposure_warning
    from kumitate.settings import Settings
    from kumitate.workers import SERVICES_ENV, WORKERS_ENV, worker_count

    workers = worker_count({WORKERS_ENV: str(args.workers)} if args.workers is not None else os.environ)
    warning = exposure_warning(args.host, Authenticator.from_env(os.environ).enabled)
    if warning:
        print(warning, file=sys.stderr)
    if workers == 1:
        app = create_app(Settings.from_env(), args.service or None)
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, lifespan="on")
        return 0
    # Each worker process builds its own app from the environment (uvicorn imports the factory).
    os.environ[WORKERS_ENV] = str(workers)
    if args.service:
        os.environ[SERVICES_ENV] = ",".join(args.service)
    _prepare_state()
    uvicorn.run(
        "kumitate.app:create_worker_app",
        factory=True,
        workers=workers,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        lifespan="on",
    )
    return 0


def _prepare_state() -> None:
    """Create the data directory's stores and sample data once, before N workers open them at once."""
    from kumitate.runtime import Runtime
    from kumitate.settings import Settings
    from kumitate.workers import services_from_env

    Runtime(Settings.from_env(), services_from_env(os.environ)).close()


def _mcp(args: argparse.Namespace) -> int:
    if not args.stdio:
        print("only --stdio is served by this command; `kumitate serve` serves MCP over HTTP at /mcp", file=sys.stderr)
        return 2
    os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")
    from kumitate import calllog
    from kumitate.runtime import Runtime
    from kumitate.settings import Settings
    from kumitate.transports.mcp import build_server

    calllog.configure()
    runtime = Runtime(Settings.from_env(), [args.service] if args.service else None)
    server = build_server(runtime, [args.service] if args.service else None)
    try:
        server.run(transport="stdio", show_banner=False)
    finally:
        runtime.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kumitate", description="Spec-driven tools over MCP and HTTP.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve every service over HTTP (/v1) and MCP (/mcp) in one process")
    serve.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    serve.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    serve.add_argument("--service", action="append", help="serve only this service (repeatable)")
    serve.add_argument("--log-level", default="info")
    serve.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes (default: KUMITATE_WORKERS or 1); more than one makes MCP stateless",
    )
    serve.set_defaults(run=_serve)
    mcp = sub.add_parser("mcp", help="serve MCP over stdio (for desktop clients)")
    mcp.add_argument("--stdio", action="store_true", help="speak MCP on stdin/stdout")
    mcp.add_argument("--service", help="serve only this service's tools")
    mcp.set_defaults(run=_mcp)
    from kumitate.review.cli import add_parser as add_diff_parser

    add_diff_parser(sub)
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
