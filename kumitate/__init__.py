"""kumitate: spec-driven tool server runtime (one pipeline, MCP and HTTP).

One version story: `__version__` is the version of kumitate, the package and the server, taken from
pyproject.toml (`kumitate --version`, the MCP server's serverInfo, OpenAPI `info.version`). Each
service's `version` in specs/<service>/service.yaml is the version of that service's contract (the
semver `kumitate diff` holds breaking changes to), served by /v1/versions and kumitate://versions.
"""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _version() -> str:
    """pyproject.toml's version in a checkout (so an edit needs no reinstall), else the installed metadata."""
    if PYPROJECT.is_file():
        project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8")).get("project", {})
        if isinstance(project.get("version"), str):
            return str(project["version"])
    try:
        return metadata.version("kumitate")
    except metadata.PackageNotFoundError:  # pragma: no cover - neither a checkout nor installed
        return "0+unknown"


__version__ = _version()
