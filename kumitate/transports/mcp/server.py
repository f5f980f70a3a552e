"""One FastMCP server for a set of services or a named toolset: the generated bindings register
the spec's tools and resources on it, and kumitate's middleware shapes what fastmcp answers on
its own (unknown targets, capabilities)."""

from __future__ import annotations

import importlib
import logging

from fastmcp import FastMCP

from kumitate import __version__
from kumitate.runtime import Runtime
from kumitate.transports.mcp import listing
from kumitate.transports.mcp.cache import list_hint
from kumitate.transports.mcp.capabilities import TrueCapabilities
from kumitate.transports.mcp.catalogue import QUIET, CatalogueErrors
from kumitate.transports.mcp.prompts import prompt_component
from kumitate.transports.mcp.resources import versions_resource
from kumitate.transports.mcp.subscriptions import serve_subscriptions


def build_server(
    runtime: Runtime, services: list[str] | None = None, toolset: str | None = None, sessions: bool = True
) -> FastMCP:
    """One FastMCP server with the tools and resources of the given services (all by default), or
    of a named toolset: its tools, and the resources of the services they come from. `sessions`:
    the transport keeps a session per client (not stateless HTTP), so resources may be subscribed to."""
    keys = runtime.toolsets[toolset] if toolset is not None else None
    names = sorted({k.partition(".")[0] for k in keys}) if keys is not None else services or list(runtime.services)
    instructions = "\n\n".join(
        f"[{n}] {runtime.services[n].instructions}".strip() for n in names if runtime.services[n].instructions
    )
    title = toolset or (names[0] if len(names) == 1 else "kumitate")
    served = [t for n in names for t in runtime.services[n].tools if keys is None or t.key in keys]
    cache_ttl, cache_scope = list_hint([*served, *(r for n in names for r in runtime.services[n].resources)])
    # dereference_schemas=False: the spec's schemas keep their local $defs (codegen/shared.py), which
    # fastmcp would otherwise inline again, repeating a shared type at every use.
    # list_page_size: lists come in pages, and a cursor that is not one of ours is -32602.
    # cache_ttl/cache_scope: the lists' hint from the spec (mcp/cache.py); None: 0, private.
    server = FastMCP(
        title,
        instructions=instructions or None,
        version=__version__,
        mask_error_details=True,
        dereference_schemas=False,
        list_page_size=runtime.settings.mcp_page_size,
        cache_ttl=cache_ttl,
        cache_scope=cache_scope,
    )
    server.add_middleware(CatalogueErrors(runtime))
    server.add_middleware(TrueCapabilities(server))
    listing.shape(server, runtime, every_tool=keys is None and services is None)
    logging.getLogger("fastmcp.server.server").addFilter(QUIET)
    for name in names:
        importlib.import_module(f"generated.{name}.mcp").register(server, runtime)
        for prompt in runtime.services[name].prompts:  # specs/<service>/prompts/
            server.add_prompt(prompt_component(runtime, prompt))
        if keys is not None:
            for tool in runtime.services[name].tools:
                if tool.key not in keys:
                    server.local_provider.remove_tool(tool.name)
    task_tools = frozenset(t.name for t in served if t.task_timeout_s)
    if task_tools:  # long tools may run as tasks (kumitate.tasks)
        from kumitate.tasks.mcp import TasksExtension

        server.add_extension(TasksExtension(runtime, task_tools))
    server.add_resource(versions_resource(runtime, names))
    if sessions and any(runtime.services[n].resources for n in names):
        serve_subscriptions(server, runtime)
    return server
