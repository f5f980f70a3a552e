"""Every name derived from the spec, in one place.

Codegen, the runtime and the docs all ask this module how a tool, a model, a
route or an error class is called, so a rename happens once.
"""

from __future__ import annotations

import re
from collections.abc import Callable

SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
MAX_TOOL_NAME = 64


def pascal(name: str) -> str:
    """summarize_stays -> SummarizeStays."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[_\-.]", name) if part)


def _class_name(suffix: str, doc: str) -> Callable[[str], str]:
    """A generated class name's builder: the spec name in PascalCase, then `suffix`."""

    def build(name: str) -> str:
        return pascal(name) + suffix

    build.__doc__ = doc
    return build


input_model = _class_name("Input", "A tool's generated input model (`summarize_stays` -> `SummarizeStaysInput`).")
output_model = _class_name("Output", "A tool's generated output model (`SummarizeStaysOutput`).")
resource_model = _class_name("Resource", "A JSON resource's generated model (`stay_summary` -> `StaySummaryResource`).")
protocol_name = _class_name("Handler", "The generated Protocol a tool's handler satisfies (`SummarizeStaysHandler`).")
bundle_name = _class_name(
    "Handlers", "A service's generated `Handlers` bundle, every Protocol of it (`StaysHandlers`)."
)


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
