"""kumitate: spec-driven tool server runtime (one pipeline, MCP and HTTP).

One version story: `__version__` is the version of kumitate, the package and the server, taken from
pyproject.toml (`kumitate --version`, the MCP server's serverInfo, OpenAPI `info.version`). Each
service's `version` in specs/<service>/service.yaml is the version of that service's contract (the
semver `kumitate diff` holds breaking changes to), served by /v1/versions and kumitate://versions.

The public API, what a tool author imports, is re-exported here and loads on first use (PEP 562), so
`import kumitate` (which every `python -m kumitate` pays) stays as light as the version lookup:

- the handler contract (kumitate.context): `CallContext` (ids, principal, deadline, `ctx.progress`,
  `ctx.log`, `ctx.ask`), `current_call()`, `progress()` and `url_for()` for code that is not handed the
  context, `Principal`, `Attachment` and `Message` (content beside a result or in a prompt), and
  `CallCancelled` (raised inside a handler whose caller went away);
- errors: `ToolError` (kumitate.errors), the base of the typed errors. The typed classes, one per code
  of specs/errors.yaml (`NotFoundError`, `ValidationErrorError`, ...), are generated into the project's
  own `generated.errors`, so they are imported from there, not from kumitate;
- a service's set-up: `ServiceSetup` (what `create()` is given), `ServiceSettings` and `var` (its own
  environment variables), `CommaList`, `Database` and `SchemaMismatchError` (the one storage layer),
  `SharedCache` (short-lived state shared between instances);
- outbound calls: `OutboundClient`, `RetryPolicy`, `CircuitBreaker`, `OutboundError`.

Narrower contracts stay in their modules, each with its `__all__`: `kumitate.invariants` (a workflow's
invariants for the stateful fuzzer; its `Step` is not the pipeline's `kumitate.steps.Step`),
`kumitate.storage.carry`, `kumitate.storage.engine` and `kumitate.storage.migrate` (storage a service
shares; its own tables and migrations live with it: docs/writing-a-service.md), `kumitate.client` (the typed client's runtime), `kumitate.faults` and `kumitate.datadir`.

Name clashes with fastmcp: `fastmcp.exceptions.ToolError` and `fastmcp.exceptions.NotFoundError` are
other classes. A handler raises kumitate's (the transports turn it into the catalogued answer); code
that meets both imports fastmcp's under another name (`from fastmcp.exceptions import NotFoundError as
FastMCPNotFoundError`).
"""

from __future__ import annotations

import importlib
import tomllib
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kumitate.cache import SharedCache
    from kumitate.context import (
        Attachment,
        CallCancelled,
        CallContext,
        Message,
        Principal,
        current_call,
        progress,
        url_for,
    )
    from kumitate.errors import ToolError
    from kumitate.outbound import CircuitBreaker, OutboundClient, OutboundError, RetryPolicy
    from kumitate.service import ServiceSetup
    from kumitate.settings import CommaList, ServiceSettings, var
    from kumitate.storage import Database, SchemaMismatchError

__all__ = [
    "Attachment",
    "CallCancelled",
    "CallContext",
    "CircuitBreaker",
    "CommaList",
    "Database",
    "Message",
    "OutboundClient",
    "OutboundError",
    "Principal",
    "RetryPolicy",
    "SchemaMismatchError",
    "ServiceSettings",
    "ServiceSetup",
    "SharedCache",
    "ToolError",
    "__version__",
    "current_call",
    "progress",
    "url_for",
    "var",
]

_HOME = {
    "Attachment": "kumitate.context",
    "CallCancelled": "kumitate.context",
    "CallContext": "kumitate.context",
    "Message": "kumitate.context",
    "Principal": "kumitate.context",
    "current_call": "kumitate.context",
    "progress": "kumitate.context",
    "url_for": "kumitate.context",
    "ToolError": "kumitate.errors",
    "ServiceSetup": "kumitate.service",
    "ServiceSettings": "kumitate.settings",
    "CommaList": "kumitate.settings",
    "var": "kumitate.settings",
    "Database": "kumitate.storage",
    "SchemaMismatchError": "kumitate.storage",
    "SharedCache": "kumitate.cache",
    "OutboundClient": "kumitate.outbound",
    "OutboundError": "kumitate.outbound",
    "RetryPolicy": "kumitate.outbound",
    "CircuitBreaker": "kumitate.outbound",
}
"""Where each public name lives; `kumitate.X` imports that module the first time X is read."""


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


def __getattr__(name: str) -> Any:  # noqa: ANN401  (a public name of any kind: a class, a function, a constant)
    """Load a public name from its home module on first use (PEP 562); anything else is not here."""
    if name in _HOME:
        value = getattr(importlib.import_module(_HOME[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names, whether or not they have been loaded yet (for dir() and completion)."""
    return sorted({*globals(), *_HOME})
