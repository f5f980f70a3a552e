"""Where MCP users look for the server: its registry entry and its card, at well-known paths.

codegen writes both from the spec (codegen/server_json.py): generated/server.json, the MCP
registry's format, served at `/.well-known/mcp/server.json`, and generated/server-card.json, served
at `/.well-known/mcp/server-card.json`, the path of the MCP server-card proposal (SEP-1649; its
successor SEP-2127 keeps a `.well-known` location, and its other one, `<mcp-url>/server-card`, would
collide with `/mcp/<service>` here). They are public, as the MCP discovery documents are, and read
once at start-up: they change only with the spec. A project generated before codegen wrote them
serves neither path (a 404, as for any unknown path) until its next `make generate`.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from litestar import Response, get
from litestar.handlers import HTTPRouteHandler

SERVER_JSON = "/.well-known/mcp/server.json"
SERVER_CARD = "/.well-known/mcp/server-card.json"
FILES = {SERVER_JSON: "server.json", SERVER_CARD: "server-card.json"}
"""well-known path -> the file of the project's generated package it serves."""


def _generated_dir() -> Path | None:
    spec = importlib.util.find_spec("generated")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _route(path: str, name: str, content: bytes) -> HTTPRouteHandler:
    @get(path, include_in_schema=False, sync_to_thread=False, name=name)
    def document() -> Response[bytes]:
        return Response(content, media_type="application/json", headers={"Cache-Control": "public, max-age=3600"})

    return document


def published_routes() -> list[HTTPRouteHandler]:
    """A GET route for each of the two documents the project's generated/ holds."""
    folder = _generated_dir()
    if folder is None:
        return []
    return [
        _route(path, name, (folder / name).read_bytes()) for path, name in FILES.items() if (folder / name).is_file()
    ]
