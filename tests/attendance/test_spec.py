"""The spec files: valid schemas, described properties, examples that validate and match the real handler."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from handlers.attendance.core.llm import validate_llm_output
from handlers.attendance.core.parse import parse_attendance_intent
from kumitate.context import CallContext
from kumitate.errors import ToolError
from tests.attendance.conftest import TEAM, call, opened

SPEC_DIR = Path(__file__).resolve().parents[2] / "specs" / "attendance"
TYPES_FILE = SPEC_DIR / "types" / "attendance.json"
TYPES = json.loads(TYPES_FILE.read_text(encoding="utf-8"))
REGISTRY: Registry = Registry().with_resource(
    TYPES_FILE.as_uri(), Resource.from_contents(TYPES, default_specification=DRAFT202012)
)
TOOL_FILES = sorted((SPEC_DIR / "tools").glob("*.yaml"))
TOOLS = {p.stem: yaml.safe_load(p.read_text(encoding="utf-8")) for p in TOOL_FILES}
CTX = CallContext(service="attendance", tool="t", transport="test", run_id="r", trace_id="t")


def validator(tool: str, part: str) -> Draft202012Validator:
    schema = {"$id": (SPEC_DIR / "tools" / f"{tool}.yaml").as_uri(), **TOOLS[tool][part]}
    return Draft202012Validator(schema, registry=REGISTRY)


def test_types_and_tools() -> None:
    Draft202012Validator.check_schema(TYPES)
    assert sorted(TOOLS) == [
        "evaluate_attendance",
        "get_attendance_rule",
        "invitee_key",
        "parse_attendance_intent",
        "save_attendance_rule",
    ]
    for name, tool in TOOLS.items():
        assert tool["name"] == name
        assert tool["http"] == {"method": "POST", "path": f"/v1/attendance/{name}"}
        ann = tool["mcp"]["annotations"]
        assert set(ann) == {"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
        assert ann["readOnlyHint"] is (name != "save_attendance_rule")
        assert not (ann["readOnlyHint"] and ann["destructiveHint"])
        assert 1 <= len(tool["examples"]) <= 4


def _properties(schema: Any) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    if isinstance(schema, dict):
        found.extend(schema.get("properties", {}).items())
        for value in schema.values():
            found.extend(_properties(value))
    elif isinstance(schema, list):
        for value in schema:
            found.extend(_properties(value))
    return found


def test_every_property_is_described_and_inputs_are_closed() -> None:
    for name, sub in _properties(TYPES):
        assert "description" in sub or "$ref" in sub, name
    for name, definition in TYPES["$defs"].items():
        if definition.get("type") == "object":
            assert definition.get("additionalProperties") is False, name


@pytest.mark.parametrize(("tool", "index"), [(t, i) for t, spec in TOOLS.items() for i in range(len(spec["examples"]))])
def test_examples_validate_and_match(tool: str, index: int, tmp_path: Path) -> None:
    example = TOOLS[tool]["examples"][index]
    assert not list(validator(tool, "input").iter_errors(example["input"]))
    with opened(tmp_path) as handlers:
        try:
            result = call(handlers, tool, example["input"], CTX)
        except ToolError as exc:
            assert example.get("error") == exc.code
            return
    assert "error" not in example
    assert not list(validator(tool, "output").iter_errors(result))
    if example.get("match") == "subset":
        assert {k: result[k] for k in example["output"]} == example["output"]
    else:
        assert result == example["output"]


@pytest.mark.parametrize(
    "text", ["全員必須", "みんなで集まりたい", "営業部から2人 または 開発部から3人", "木村さんは必須", "3人以上"]
)
def test_parse_outputs_validate(text: str) -> None:
    out = parse_attendance_intent({"text": text, "invitees": TEAM})
    assert not list(validator("parse_attendance_intent", "output").iter_errors(out))


def test_llm_output_validation() -> None:
    keys = {f"u:{i}" for i in range(1, 7)}
    good = parse_attendance_intent({"text": "3人以上", "invitees": TEAM})
    assert validate_llm_output(good, keys) == []
    bad = json.loads(json.dumps(good))
    bad["attendance_rule"]["rule"] = {"k": 9, "n": 6}
    assert validate_llm_output(bad, keys) == ["rule.k (9) is larger than rule.n (6)"]
    stranger = json.loads(json.dumps(good))
    stranger["attendance_rule"]["invitee_scope"]["include_invitee_keys"].append("u:99")
    stranger["attendance_rule"]["rule"] = {"k": 3, "n": 7}
    assert validate_llm_output(stranger, keys) == ["u:99 is not an invitee of this thread"]
    assert validate_llm_output({"attendance_rule": {}}, keys)[0].startswith("<rule>: ")


def _integers(node: Any, path: str, seen: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """Every integer schema reachable from `node` (following local $refs into the types file once each)."""
    out: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and "#/$defs/" in ref:
            name = ref.rsplit("/", 1)[1]
            if name not in seen:
                seen.add(name)
                out += _integers(TYPES["$defs"][name], name, seen)
        kind = node.get("type")
        if kind == "integer" or (isinstance(kind, list) and "integer" in kind):
            out.append((path, node))
        for key, value in node.items():
            out += _integers(value, f"{path}.{key}", seen)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _integers(value, f"{path}[{i}]", seen)
    return out


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_every_input_integer_declares_its_bounds(tool: str) -> None:
    """Integers reach storage (rule k/n/min in rule_json, ids in keys): each declares a maximum (or an enum)."""
    found = _integers(TOOLS[tool]["input"], tool, set())
    unbounded = [path for path, node in found if "maximum" not in node and "enum" not in node]
    assert unbounded == []


def test_integers_past_the_bounds_are_refused_by_the_input_models() -> None:
    from pydantic import ValidationError

    from generated.attendance.models import ParseAttendanceIntentInput, SaveAttendanceRuleInput

    rule = {
        "version": "1.0",
        "type": "K_OF_N",
        "invitee_scope": {"include_invitee_keys": ["u:1"]},
        "rule": {"k": 2**64, "n": 1},
        "finalize_policy": {"mode": "EARLIEST_VALID"},
    }
    with pytest.raises(ValidationError):
        SaveAttendanceRuleInput.model_validate({"thread_id": "t", "rule": rule})
    with pytest.raises(ValidationError):
        ParseAttendanceIntentInput.model_validate(
            {"text": "全員", "invitees": [{"user_id": 2**63, "display_name": "x"}]}
        )
    ok = ParseAttendanceIntentInput.model_validate(
        {"text": "全員", "invitees": [{"user_id": 2**63 - 1, "display_name": "x"}]}
    )
    assert parse_attendance_intent(ok.model_dump(mode="json", exclude_none=True))["attendance_rule"]["invitee_scope"][
        "include_invitee_keys"
    ] == [f"u:{2**63 - 1}"]
