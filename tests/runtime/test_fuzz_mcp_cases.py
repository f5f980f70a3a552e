"""The MCP fuzzer's generators really produce cases, and its checks really fail bad results."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import jsonschema_rs
import pytest

from codegen.fuzz.mcp import Case, cases_for, check_result
from generated.errors import CATALOGUE
from generated.registry import SERVICES

TOOLS = [t for svc in SERVICES.values() for t in svc.tools]


@pytest.mark.parametrize("binding", TOOLS, ids=lambda t: t.name)
def test_every_tool_gets_valid_and_violating_cases(binding: Any) -> None:
    cases = cases_for(binding.name, binding.input_schema, 5, 1)
    validator = jsonschema_rs.Draft202012Validator(binding.input_schema)
    assert all(validator.is_valid(c.arguments) == c.valid for c in cases)
    assert any(c.valid for c in cases)
    assert any(not c.valid for c in cases), "no schema-violating case: the fuzzer would test nothing"
    if binding.input_schema.get("properties"):
        assert sum(c.valid for c in cases) >= 2


def test_the_same_seed_gives_the_same_cases() -> None:
    binding = TOOLS[0]
    first = cases_for(binding.name, binding.input_schema, 5, 7)
    again = cases_for(binding.name, binding.input_schema, 5, 7)
    assert [c.arguments for c in first] == [c.arguments for c in again]


def result(is_error: bool, body: Any, *, structured: bool | None = None) -> Any:
    """A success carries its body as structuredContent; an error as JSON text only
    (kumitate/transports/mcp/results.py), unless `structured` says otherwise."""
    in_structured = (not is_error) if structured is None else structured
    text = SimpleNamespace(type="text", text=json.dumps(body))
    return SimpleNamespace(is_error=is_error, structured_content=body if in_structured else None, content=[text])


def error_body(code: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": "m", "retryable": False}, "run_id": "r", "trace_id": "t"}


OUTPUT = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}


@pytest.mark.parametrize(
    ("valid", "outcome", "verdict"),
    [
        (True, result(False, {"n": 1}), None),
        (True, result(False, {"n": "1"}), "outputSchema"),
        (True, result(False, None), "without structuredContent"),
        (True, result(True, error_body("INTERNAL")), "INTERNAL"),
        (True, result(True, error_body("NO_SUCH_CODE")), "uncatalogued"),
        (True, result(True, error_body("CONFLICT")), "does not declare"),
        (True, result(True, error_body("NOT_FOUND")), None),
        (False, result(True, error_body("BAD_REQUEST")), None),
        (False, result(True, error_body("NOT_FOUND")), "not a client error"),
        (False, result(True, {"text": "plain"}), "catalogue body"),
        (False, result(True, error_body("BAD_REQUEST"), structured=True), "structuredContent"),
    ],
)
def test_checks(valid: bool, outcome: Any, verdict: str | None) -> None:
    problem = check_result(Case("t", {}, valid), outcome, OUTPUT, {"NOT_FOUND"}, CATALOGUE)
    if verdict is None:
        assert problem is None
    else:
        assert problem is not None and verdict in problem
