"""generated/server.json (the MCP registry's format) and generated/server-card.json, from the spec.

MCP users look for a server in the MCP registry, which takes a `server.json` (schema 2025-12-11,
vendored in codegen/registry/ with its source and licence, since nothing here may fetch it), and,
before connecting, at a server card on the server itself (SEP-1649/SEP-2127, still drafts). Both
say what the spec already holds, so they are generated like openapi.json and drift-checked with it:

- name and version: the project's (`[project]` of the pyproject.toml beside specs/), the name
  under the `local` namespace. The registry publishes a name only under a namespace its publisher
  proves (io.github.<user>, a reversed domain), which no spec holds: publishing means renaming it;
- transports: streamable HTTP at `/mcp` (every service not opt-in) and at `/mcp/<service>` and
  `/mcp/<toolset>`, at `https://{host}`, the host the deployment is reached at (a URL variable: the
  spec does not know it), and stdio as the package's `kumitate mcp --stdio`;
- tools, per endpoint, and auth: each service's scopes (`policy.scopes`); a token is sent as
  `Authorization: Bearer`, needed only where the deployment configures an issuer.

The registry's format has no place for tools or scopes, so server.json carries them under
`_meta["io.modelcontextprotocol.registry/publisher-provided"]`, the extension point it offers; the
card (no schema published yet, so it names none) carries them at the top level.
"""

from __future__ import annotations

import json
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

from codegen.specs import ServiceSpec, SpecTree

SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
SCHEMA_PATH = Path(__file__).resolve().parent / "registry" / "server.schema.json"
SERVER_JSON = "generated/server.json"
SERVER_CARD = "generated/server-card.json"
WELL_KNOWN_SERVER_JSON = "/.well-known/mcp/server.json"
WELL_KNOWN_SERVER_CARD = "/.well-known/mcp/server-card.json"
NAMESPACE = "local"
PUBLISHER_META = "io.modelcontextprotocol.registry/publisher-provided"
DESCRIPTION_MAX = 100  # the registry's limit on `description`


@cache
def schema() -> dict[str, Any]:
    """The registry's server.json schema (draft-07), as vendored."""
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


def _project(tree: SpecTree) -> tuple[str, str, str]:
    """(name, version, description) of the project whose specs/ `tree` is; `server` and 0.0.0 when there is
    no pyproject.toml (a bare specs/ tree, as tests load: not its folder's name, so the output stays the
    same wherever the tree lies)."""
    pyproject = tree.root.parent / "pyproject.toml"
    project: dict[str, Any] = {}
    if pyproject.is_file():
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    name = str(project.get("name") or "server")
    return name, str(project.get("version") or "0.0.0"), str(project.get("description") or "")


def _short(text: str) -> str:
    """`text` on one line, within the registry's description limit (cut at a word, with an ellipsis)."""
    line = " ".join(text.split())
    if len(line) <= DESCRIPTION_MAX:
        return line
    return line[: DESCRIPTION_MAX - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def _endpoints(tree: SpecTree) -> list[tuple[str, str, list[ServiceSpec], list[str]]]:
    """(path, what it serves, its services, its tools) for /mcp, each service and each toolset."""
    default = [svc for svc in tree.services if not svc.opt_in]
    out = [("/mcp", "every service not opt-in", default, [t.name for s in default for t in s.tools])]
    for svc in tree.services:
        out.append((f"/mcp/{svc.name}", f"the {svc.name} service", [svc], [t.name for t in svc.tools]))
    by_key = {f"{svc.name}.{t.name}": (svc, t.name) for svc in tree.services for t in svc.tools}
    for toolset in tree.toolsets:
        picked = [by_key[e] for e in toolset.entries if e in by_key]
        services = [s for s in tree.services if any(s is p for p, _ in picked)]
        out.append((f"/mcp/{toolset.name}", f"the {toolset.name} toolset", services, [n for _, n in picked]))
    return out


def _scopes(services: list[ServiceSpec]) -> list[str]:
    return sorted({str(s) for svc in services for s in (svc.policy.get("scopes") or [])})


def _remote(path: str, what: str) -> dict[str, Any]:
    return {
        "type": "streamable-http",
        "url": "https://{host}" + path,
        "headers": [
            {
                "name": "Authorization",
                "description": f"Bearer <token>, when the deployment configures an issuer ({what})",
                "isRequired": False,
                "isSecret": True,
            }
        ],
        "variables": {
            "host": {
                "description": "The host (and port) the deployment is reached at, e.g. tools.example.com",
                "isRequired": True,
            }
        },
    }


def build(tree: SpecTree) -> tuple[dict[str, Any], dict[str, Any]]:
    """(server.json, the server card) of `tree`."""
    name, version, description = _project(tree)
    services = tree.services
    summary = description or "MCP tools: " + ", ".join(svc.title for svc in services if not svc.opt_in)
    endpoints = _endpoints(tree)
    auth = {
        "scheme": "bearer",
        "header": "Authorization",
        "required": "when the deployment configures an issuer; then per endpoint the scopes listed",
        "protected_resource_metadata": "/.well-known/oauth-protected-resource/mcp",
    }
    listing = [
        {"path": path, "serves": what, "tools": tools, "scopes": _scopes(svcs)} for path, what, svcs, tools in endpoints
    ]
    server = {
        "$schema": SCHEMA_URL,
        "name": f"{NAMESPACE}/{name}",
        "title": name,
        "description": _short(summary),
        "version": version,
        "packages": [
            {
                "registryType": "pypi",
                "identifier": name,
                "version": version,
                "runtimeHint": "uvx",
                "transport": {"type": "stdio"},
                "packageArguments": [
                    {"type": "positional", "value": "mcp", "valueHint": "mcp"},
                    {"type": "named", "name": "--stdio"},
                ],
            }
        ],
        "remotes": [_remote(path, what) for path, what, _, _ in endpoints],
        "_meta": {PUBLISHER_META: {"tool": "kumitate codegen", "endpoints": listing, "auth": auth}},
    }
    card = {
        "name": server["name"],
        "title": name,
        "version": version,
        "description": _short(summary),
        "services": [
            {"name": svc.name, "title": svc.title, "version": svc.version, "description": _short(svc.description)}
            for svc in services
        ],
        "transports": [
            *({"type": "streamable-http", "path": path, "serves": what} for path, what, _, _ in endpoints),
            {"type": "stdio", "command": "kumitate mcp --stdio"},
        ],
        "capabilities": {
            "tools": True,
            "resources": any(s.resources for s in services),
            "prompts": any(s.prompts for s in services),
        },
        "tools": [
            {
                "name": t.name,
                "service": svc.name,
                "title": t.annotations.title or t.summary,
                "description": _short(t.summary),
            }
            for svc in services
            for t in svc.tools
        ],
        "endpoints": listing,
        "authentication": auth,
        "registry": {"server_json": WELL_KNOWN_SERVER_JSON, "schema": SCHEMA_URL},
    }
    return server, card


def render(tree: SpecTree) -> dict[str, str]:
    """The two files, path -> content, as codegen writes them (sorted keys: the same spec, the same bytes)."""
    server, card = build(tree)
    dump = lambda doc: json.dumps(doc, ensure_ascii=False, sort_keys=True, indent=1) + "\n"  # noqa: E731
    return {SERVER_JSON: dump(server), SERVER_CARD: dump(card)}
