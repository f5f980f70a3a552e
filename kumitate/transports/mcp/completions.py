"""Argument completion (MCP `completion/complete`) for resource-template parameters.

A resource spec declares, per URI parameter, where its values come from (`completions:
{chart_id: {source: chart_ids}}`); the generated bindings call `complete_params`, and the
service's handlers answer `complete_<source>(ctx, prefix, arguments)` as the caller (the
pipeline admits the call like a read of the resource). A FastMCP server has one completion
handler: the first declaration installs it, later ones add to its table (kept here, by server,
not on the FastMCP object).
"""

from __future__ import annotations

import weakref

import mcp_types as mt
from fastmcp import FastMCP
from fastmcp.server.completions import CompletionHandler, CompletionReference

from kumitate.bindings import ResourceBinding
from kumitate.runtime import Runtime

Table = dict[str, tuple[ResourceBinding, dict[str, str]]]
_TABLES: weakref.WeakKeyDictionary[FastMCP, Table] = weakref.WeakKeyDictionary()


def complete_params(server: FastMCP, runtime: Runtime, binding: ResourceBinding, sources: dict[str, str]) -> None:
    """Serve completions for `binding`'s parameters from the handlers' `complete_<source>` methods."""
    handlers = runtime.pipeline.handlers[binding.service]
    for source in sources.values():
        if not callable(getattr(handlers, f"complete_{source}", None)):
            raise TypeError(f"{type(handlers).__name__} has no complete_{source}, which {binding.key} declares")
    table = _TABLES.get(server)
    if table is None:
        table = _TABLES[server] = {}
        server.add_completion_handler(_handler(runtime, table))
    table[binding.uri] = (binding, sources)


def _handler(runtime: Runtime, table: Table) -> CompletionHandler:
    from kumitate.transports.mcp.request import current_request

    async def complete(
        ref: CompletionReference, argument: mt.CompletionArgument, context: mt.CompletionContext | None
    ) -> mt.Completion | None:
        entry = table.get(ref.uri) if isinstance(ref, mt.ResourceTemplateReference) else None
        source = entry[1].get(argument.name) if entry is not None else None
        if entry is None or source is None:
            return None
        known = dict(context.arguments or {}) if context is not None else {}
        values = await runtime.pipeline.complete(entry[0], source, argument.value, known, current_request())
        return mt.Completion(values=values[:100], total=len(values), has_more=len(values) > 100)

    return complete
