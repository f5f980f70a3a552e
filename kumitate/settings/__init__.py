"""Every environment variable the runtime reads, typed, parsed once (pydantic-settings).

`Settings.from_env()` validates the whole process environment at start-up (a bad value stops the
server with the variable's name); the result is passed to `create_app()` / `Runtime`, and nothing in
kumitate/ reads the process environment after that. Each field's `validation_alias` is its variable's name, so
an error names the variable, and `make generate` writes the settings table from these declarations
(codegen/settings_doc.py; `codegen --check` fails when it is stale).

`Settings` is made of config groups, one module of this package each, so that the variables of one
concern are read (and documented, the table follows the groups) together: storage (`DeploySettings`),
serving, the HTTP edge, auth, limits, tasks, MCP and observability. A part of the runtime that reads
one concern only can take its group's type; `base` holds the machinery (`EnvSettings`, `var`).

A service declares its own variables the same way: a `ServiceSettings` subclass in
`handlers/<svc>/settings.py` (e.g. `class YanaSettings(ServiceSettings)` with
`llm_deadline_ms: int = var("YANA_LLM_DEADLINE_MS", 8000, "…")`), read once in its `create(setup)`
with `setup.read(YanaSettings)`: from the mapping the runtime's settings came from (the process
environment, or a test's dict). The settings table has a section per service from these classes.
"""

from __future__ import annotations

from kumitate.project import SOURCE_CHECKOUT
from kumitate.settings.auth import AuthSettings
from kumitate.settings.base import CommaList, EnvSettings, ServiceSettings, SettingsError, invalid_variables, var
from kumitate.settings.edge import MAX_BODY_BYTES, HttpEdgeSettings
from kumitate.settings.limits import LimitSettings
from kumitate.settings.mcp import McpSettings
from kumitate.settings.observability import ObservabilitySettings
from kumitate.settings.serving import ServingSettings
from kumitate.settings.storage import DeploySettings
from kumitate.settings.tasks import TaskSettings

__all__ = [
    "MAX_BODY_BYTES",
    "REPO_ROOT",
    "AuthSettings",
    "CommaList",
    "DeploySettings",
    "EnvSettings",
    "HttpEdgeSettings",
    "LimitSettings",
    "McpSettings",
    "ObservabilitySettings",
    "ServiceSettings",
    "ServingSettings",
    "Settings",
    "SettingsError",
    "TaskSettings",
    "invalid_variables",
    "var",
]

REPO_ROOT = SOURCE_CHECKOUT


class Settings(
    ObservabilitySettings,
    McpSettings,
    TaskSettings,
    LimitSettings,
    AuthSettings,
    HttpEdgeSettings,
    ServingSettings,
    DeploySettings,
):
    """The runtime's settings: where it serves, keeps state, and which policies it applies.

    Every group's fields, in the groups' order (pydantic takes the last base's first): storage, serving,
    the HTTP edge, auth, limits, tasks, MCP, observability."""
