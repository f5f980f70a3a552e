"""Which breaking changes a major version allows (the compatibility policy: "breaking changes go to /v2").

- HTTP findings (surface `http`): a new /vN in the service's `http.base_path` (or the route's own
  path); a `version` bump alone does not move the /v1 routes.
- Python API findings (surface `python`): a major bump of the service `version` (the generated
  package's semver).
- MCP and HTTP+MCP findings: nothing. MCP tool names carry no version, so the same tool name keeps
  serving the new schema; they need an exception with a reason (or a new tool name instead).
"""

from __future__ import annotations

import re

from codegen.review.findings import Finding
from codegen.specs import ServiceSpec


def _major(version: str | None) -> int:
    match = re.match(r"(\d+)", version or "")
    return int(match.group(1)) if match else 0


def _path_major(path: str | None) -> int:
    match = re.search(r"/v(\d+)(/|$)", path or "")
    return int(match.group(1)) if match else 1


def path_bump(old: str | None, new: str | None, what: str) -> str | None:
    """What a major bump of a base path says (`base path /v1/x → /v2/x`), or None when there is none."""
    if old is None or new is None or _path_major(new) <= _path_major(old):
        return None
    return f"{what} {old} → {new}"


def version_bump(old: ServiceSpec | None, new: ServiceSpec | None) -> str | None:
    """What a major bump of a service's version says (`version 1.2.0 → 2.0.0`), or None when there is none."""
    if old is None or new is None or _major(new.version) <= _major(old.version):
        return None
    return f"version {old.version} → {new.version}"


def needs(old: ServiceSpec | None, blocking: list[Finding]) -> str:
    """What would allow a service's blocking findings."""
    surfaces_ = {f.surface for f in blocking}
    out = []
    if "http" in surfaces_ and old is not None:
        out.append(f"HTTP changes need base path /v{_path_major(old.base_path) + 1}/…")
    if "python" in surfaces_ and old is not None:
        out.append(f"Python API changes need version {_major(old.version) + 1}.0.0")
    if surfaces_ & {"mcp", "http+mcp"}:
        out.append("MCP and HTTP+MCP changes need an exception or a new tool name (MCP names carry no version)")
    return "; ".join(out)
