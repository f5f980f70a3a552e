"""What one MCP tool call must answer, checked alike by the per-call fuzz (codegen.fuzz.mcp) and the
stateful walk (codegen.fuzz.stateful): a success's structuredContent validates against the tool's
outputSchema; an error has no structuredContent and carries the complete catalogue body with a catalogued
code, never INTERNAL; valid input gets success or a declared code, invalid input a client error.

It sits below both: the command `python -m codegen.fuzz.mcp` runs the stateful walk after the per-call fuzz.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from kumitate.client import mcp_result_body

if TYPE_CHECKING:
    from mcp_types import CallToolResult

CLIENT_ERRORS = frozenset({"BAD_REQUEST", "INVALID_INPUT", "VALIDATION_ERROR", "PAYLOAD_TOO_LARGE"})
"""The codes schema-violating input may get: a client error, whichever layer refused it."""


@dataclass
class Case:
    """One call of a tool: its arguments, and whether its input schema accepts them."""

    tool: str
    arguments: dict[str, Any]
    valid: bool


def check_result(
    case: Case,
    result: CallToolResult,
    output_schema: Mapping[str, Any] | None,
    declared: Iterable[str],
    catalogue: Mapping[str, Any],
) -> str | None:
    """Why a call's result breaks the contract, or None."""
    structured = result.structured_content
    if not result.is_error:
        if output_schema is None:
            return None
        if structured is None:
            return "success without structuredContent"
        errors = [e.message for e in jsonschema_rs.Draft202012Validator(dict(output_schema)).iter_errors(structured)]
        return f"structuredContent breaks the outputSchema: {errors[0][:200]}" if errors else None
    if structured is not None:
        return "an error with structuredContent, which the outputSchema does not describe"
    structured = mcp_result_body(result)
    if not isinstance(structured, dict) or not isinstance(structured.get("error"), dict):
        return f"an error without the catalogue body: {str(result.content)[:200]}"
    error = structured["error"]
    code = error.get("code")
    if code not in catalogue:
        return f"uncatalogued code {code!r}"
    if code == "INTERNAL":
        return f"INTERNAL: {error.get('message', '')[:200]}"
    if not {"message", "retryable"} <= set(error) or not {"run_id", "trace_id"} <= set(structured):
        return f"an incomplete catalogue body: {sorted(structured)} / {sorted(error)}"
    if case.valid and code not in declared:
        return f"valid input got {code}, which the tool does not declare"
    if not case.valid and code not in CLIENT_ERRORS:
        return f"invalid input got {code}, not a client error"
    return None
