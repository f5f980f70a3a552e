"""Every name derived from the spec, in one place.

Codegen, the runtime and the docs all ask this module how a tool, a model, a
route or an error class is called, so a rename happens once.
"""

from __future__ import annotations

import re

SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
MAX_TOOL_NAME = 64


def pascal(name: str) -> str:
    """summarize_stays -> SummarizeStays."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[_\-.]", name) if part)


def input_model(tool: str) -> str:
    """The generated input model's class name of a tool (`summarize_stays` -> `SummarizeStaysInput`)."""
    return f"{pascal(tool)}Input"


def output_model(tool: str) -> str:
    """The generated output model's class name of a tool."""
    return f"{pascal(tool)}Output"


def resource_model(resource: str) -> str:
    """The generated model's class name of a JSON resource."""
    return f"{pascal(resource)}Resource"


def protocol_name(tool: str) -> str:
    """The generated Protocol's name a tool's handler satisfies."""
    return f"{pascal(tool)}Handler"


def bundle_name(service: str) -> str:
    """The generated `Handlers` bundle's name of a service (every Protocol of it)."""
    return f"{pascal(service)}Handlers"


def resource_method(resource: str) -> str:
    """The handler method that serves a resource."""
    return f"read_{resource}"


def prompt_method(prompt: str) -> str:
    """The handler method that renders a prompt."""
    return f"prompt_{prompt}"


def error_class(code: str) -> str:
    """NOT_FOUND -> NotFoundError; a code that already ends in ERROR is not doubled (SQL_ERROR -> SqlError)."""
    return f"{pascal(code.lower().removesuffix('_error'))}Error"


def operation_id(service: str, tool: str) -> str:
    """The OpenAPI operationId of a tool or resource: `service.name`."""
    return f"{service}.{tool}"


def default_tool_path(base_path: str, tool: str) -> str:
    """A tool's HTTP path when its spec names none: `<base_path>/<tool>`."""
    return f"{base_path.rstrip('/')}/{tool}"


def default_base_path(service: str) -> str:
    """A service's base path when its spec names none: `/v1/<service>`."""
    return f"/v1/{service}"


def uri_params(uri: str) -> list[str]:
    """data://x/{a}/{b} -> ['a', 'b'] (RFC 6570 level-1 variables)."""
    return re.findall(r"{([a-z_][a-z0-9_]*)}", uri)
