"""The ASGI application: every service's HTTP routes and MCP endpoints in one process.

`uvicorn --factory kumitate.app:create_app` (what `make serve` runs) serves
/v1/... (HTTP), /mcp, /mcp/<service> and /mcp/<toolset> (MCP streamable HTTP), /schema (OpenAPI).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import json
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

from fastmcp import FastMCP
from fastmcp.server.http import StarletteWithLifespan
from litestar import Litestar, Response, get
from litestar.exceptions import HTTPException
from litestar.static_files import create_static_files_router
from litestar.types import ControllerRouterHandler
from swagger_ui_bundle import swagger_ui_path

from kumitate.observability import calllog
from kumitate.policies import discovery
from kumitate.runtime import Runtime
from kumitate.serving import heap
from kumitate.serving.workers import mcp_stateless
from kumitate.settings import Settings
from kumitate.transports.edge.asgi import ASGIApp
from kumitate.transports.edge.hosts import OriginPolicy
from kumitate.transports.edge.limits import RequestLimits
from kumitate.transports.edge.routing import Gate, Lean
from kumitate.transports.edge.stack import KumitateASGI
from kumitate.transports.http import error_response
from kumitate.transports.http.lean import LeanHTTP
from kumitate.transports.http.routes import shared_routes
from kumitate.transports.http.wire import HttpRequest
from kumitate.transports.mcp import HTTP_MIDDLEWARE, build_server, configure_sessions
from kumitate.transports.mcp.lean import lean_endpoint
from kumitate.transports.oauth import discovery_routes, mcp_gate
from kumitate.transports.ops import health_routes, metrics_routes
from kumitate.transports.published import published_routes

__all__ = ["DOCS_ASSETS", "DOCS_HTML", "KumitateApp", "create_app", "create_litestar"]

DOCS_ASSETS = "/schema/assets"
DOCS_HTML = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>kumitate API</title>
<link rel="stylesheet" href="{DOCS_ASSETS}/swagger-ui.css"></head>
<body><div id="api"></div>
<script src="{DOCS_ASSETS}/swagger-ui-bundle.js"></script>
<script>SwaggerUIBundle({{url: "/schema/openapi.json", dom_id: "#api", deepLinking: true}});</script>
</body></html>
"""


def _schema_routes(openapi_path: Path, settings: Settings) -> list[ControllerRouterHandler]:
    document = openapi_path.read_bytes()
    issuer, public_url = (settings.oauth_issuer or "").strip(), (settings.public_url or "").strip()
    if issuer or public_url:  # what only the configuration knows: the identity provider, the public URL
        served = discovery.served_openapi(json.loads(document), issuer, public_url)
        document = json.dumps(served, ensure_ascii=False, indent=1).encode()

    @get("/schema/openapi.json", include_in_schema=False, sync_to_thread=False)
    def openapi_json() -> Response[bytes]:
        return Response(document, media_type="application/json")

    @get("/schema", include_in_schema=False, sync_to_thread=False)
    def docs() -> Response[str]:
        return Response(DOCS_HTML, media_type="text/html")

    # Swagger UI's files come from a pinned package and are served here: the docs work offline.
    assets = create_static_files_router(path=DOCS_ASSETS, directories=[Path(str(swagger_ui_path))], name="docs-assets")
    return [openapi_json, docs, assets]


def _meta_routes(runtime: Runtime) -> list[ControllerRouterHandler]:
    @get("/v1/versions", include_in_schema=False, sync_to_thread=False)
    def versions() -> dict[str, dict[str, dict[str, str | None]]]:
        return {"services": runtime.versions()}

    return [versions, *health_routes(runtime)]


class KumitateApp(KumitateASGI):
    """What `create_app` returns: the ASGI application with the runtime it serves, a declared attribute
    (the drain, the CLI and the tests reach the pipeline, health and tasks through it)."""

    def __init__(
        self,
        runtime: Runtime,
        app: ASGIApp,
        mcp_all: ASGIApp | None,
        mcp_services: Mapping[str, ASGIApp],
        *,
        origins: OriginPolicy | None = None,
        gate: Gate | None = None,
        limits: RequestLimits | None = None,
        lean: Lean | None = None,
    ) -> None:
        """The edge around `app` and the MCP endpoints; a draining `runtime` answers its refusals, its
        pipeline's catalogue the edge's own."""
        super().__init__(
            app,
            mcp_all,
            mcp_services,
            origins=origins,
            gate=gate,
            limits=limits,
            lean=lean,
            draining=runtime.draining,
            errors=runtime.pipeline.errors,
        )
        self.runtime: Runtime = runtime


def _http_routes(runtime: Runtime) -> list[ControllerRouterHandler]:
    """Every Litestar route: the schema and docs, versions and health, metrics, OAuth discovery, the task
    operations (where a tool runs as a task) and each service's generated routes."""
    settings = runtime.settings
    routes: list[ControllerRouterHandler] = _schema_routes(runtime.project.openapi, settings) + _meta_routes(runtime)
    routes += metrics_routes(runtime.pipeline.metrics, settings)
    routes += discovery_routes(runtime)
    routes += published_routes()  # /.well-known/mcp/server.json and server-card.json (codegen/server_json.py)
    if any(tool.task_timeout_s is not None for svc in runtime.services.values() for tool in svc.tools):
        from kumitate.tasks.http import operation_routes  # its task store loads SQLAlchemy: only where tasks run

        routes += operation_routes(runtime)
    for name in runtime.services:
        routes += shared_routes(importlib.import_module(f"generated.{name}.http").route_handlers(runtime))
    return routes


def _mcp_apps(runtime: Runtime, stateless: bool) -> tuple[StarletteWithLifespan, dict[str, StarletteWithLifespan]]:
    """The MCP endpoint of every tool (/mcp), and one per service and per toolset (/mcp/<name>)."""
    serve = functools.partial(
        FastMCP.http_app,
        path="/",
        transport="http",
        stateless_http=stateless,
        session_idle_timeout=runtime.settings.mcp_session_idle_s,
        middleware=HTTP_MIDDLEWARE,
    )
    sessions = not stateless  # a stateless endpoint has nobody to notify of a subscribed resource's change
    mcp_all = serve(build_server(runtime, sessions=sessions))
    mcp_services = {name: serve(build_server(runtime, [name], sessions=sessions)) for name in runtime.services}
    # a toolset's name is never a service's (lint KT114)
    mcp_services |= {name: serve(build_server(runtime, toolset=name, sessions=sessions)) for name in runtime.toolsets}
    return mcp_all, mcp_services


def _lifespan(
    runtime: Runtime, mcp_apps: list[StarletteWithLifespan], mcp_cap: int, stateless: bool
) -> Callable[[Litestar], contextlib.AbstractAsyncContextManager[None]]:
    """Start-up and shut-down: the MCP endpoints' session managers, the health checks, the frozen heap;
    the runtime closes last."""
    settings = runtime.settings

    @contextlib.asynccontextmanager
    async def lifespan(_app: Litestar) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for mcp_app in mcp_apps:
                await stack.enter_async_context(mcp_app.router.lifespan_context(mcp_app))
                configure_sessions(mcp_app, mcp_cap, settings.mcp_max_sessions)
            calllog.log_info("mcp_endpoints_started", endpoints=len(mcp_apps), stateless=stateless)
            await runtime.health.start()
            # What start-up built (~140k objects: the frameworks, schemas, models) lives as long as the app;
            # frozen, the collector stops walking it: a full collection under load paused every call for
            # ~290 ms, 35-60 ms after (issue 32, HTTP p99). No collect first (it found ~35 objects for 0.1 s
            # of CPU); unfrozen at shutdown, so a process that starts apps in turn (tests) frees old ones.
            gc.freeze()
            # From here on, a large call's freed buffers stay for the next one (kumitate/serving/heap.py).
            heap.keep_freed_memory(settings.heap_keep_mb << 20)
            try:
                yield
            finally:
                gc.unfreeze()
                await runtime.health.stop()
                runtime.close()

    return lifespan


def create_app(settings: Settings | None = None, services: list[str] | None = None) -> KumitateApp:
    """The app for `settings` (default: read from the environment now); `services` default to
    KUMITATE_SERVICES, else every service. `uvicorn --factory kumitate.app:create_app` calls it bare."""
    settings = settings or Settings.from_env()
    calllog.configure(settings.log_format)
    runtime = Runtime(settings, services)
    routes = _http_routes(runtime)
    body_cap = settings.max_request_bytes  # enforced while the body streams in: 413 before it is buffered
    # one MCP endpoint serves every tool: its cap is the largest a tool declares
    mcp_cap = max(
        [body_cap] + [t.policy.max_request_bytes or 0 for svc in runtime.services.values() for t in svc.tools]
    )
    stateless = mcp_stateless(settings)
    mcp_all, mcp_services = _mcp_apps(runtime, stateless)

    def on_error(request: HttpRequest, exc: Exception) -> Response[bytes]:
        return error_response(runtime, request, exc)

    litestar = Litestar(
        route_handlers=routes,
        exception_handlers={HTTPException: on_error, Exception: on_error},
        openapi_config=None,
        logging_config=None,  # Litestar's default handler has a format of its own: kumitate.observability.calllog sets one
        lifespan=[_lifespan(runtime, [mcp_all, *mcp_services.values()], mcp_cap, stateless)],
        request_max_body_size=body_cap,
    )
    lean = functools.partial(lean_endpoint, runtime, mcp_cap, settings.mcp_lean)
    return KumitateApp(
        runtime,
        litestar,
        lean(mcp_all),
        {n: lean(a) for n, a in mcp_services.items()},
        origins=OriginPolicy.from_settings(settings, bound_host=urlsplit(settings.public_base_url).hostname),
        gate=mcp_gate(runtime, mcp_cap),
        limits=RequestLimits(settings.http_max_headers, settings.http_max_header_bytes, settings.http_body_timeout_s),
        lean=LeanHTTP(runtime, body_cap) if settings.http_lean else None,
    )


def create_litestar() -> Litestar:
    """The Litestar application inside `create_app()`'s, for Litestar's CLI (`litestar --app
    kumitate.app:create_litestar routes`): the HTTP routes only, without the MCP endpoints and the
    Host/Origin gate that wrap it, so serve with `kumitate serve`, not `litestar run`."""
    app = create_app().app
    assert isinstance(app, Litestar)
    return app
