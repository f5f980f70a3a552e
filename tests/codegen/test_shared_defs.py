"""A subschema repeated within one advertised schema is emitted once under $defs (codegen/shared.py)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema_rs

from codegen import shared
from codegen.specs import SpecTree

KEY = {"type": "string", "pattern": "^(u|e|lm):.+$", "description": "Invitee key: u:<user_id>, e:<hash> or lm:<id>."}
RULE = {
    "type": "object",
    "properties": {"required": {"type": "array", "items": KEY}, "optional": {"type": "array", "items": KEY}},
}


def test_repeats_become_one_named_definition_and_validate_the_same() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"current": RULE, "history": {"type": "array", "items": RULE}, "owner": KEY},
        "required": ["current"],
    }
    wire = shared.hoist(schema, {shared.canonical(RULE): "Rule"})
    assert wire["properties"]["current"] == {"$ref": "#/$defs/Rule"}
    assert wire["properties"]["history"]["items"] == {"$ref": "#/$defs/Rule"}
    assert json.dumps(wire).count('"pattern"') == 1  # the key, nested in the rule and at the root, once
    assert len(json.dumps(wire)) < len(json.dumps(schema))
    good = {"current": {"required": ["u:1"]}, "history": [{"optional": ["lm:2"]}], "owner": "e:3"}
    bad = {"current": {"required": ["nobody"]}}
    for instance, valid in ((good, True), (bad, False)):
        assert jsonschema_rs.Draft202012Validator(wire).is_valid(instance) is valid
        assert jsonschema_rs.Draft202012Validator(schema).is_valid(instance) is valid


def test_data_keywords_and_single_uses_are_left_alone() -> None:
    schema = {"type": "object", "properties": {"a": KEY}, "default": {"a": "u:1"}, "examples": [KEY, KEY]}
    assert shared.hoist(schema) == schema


def test_attendance_rule_is_advertised_once_per_schema(spec_tree: SpecTree) -> None:
    tool = next(t for t in spec_tree.all_tools() if t.name == "get_attendance_rule")
    out = json.dumps(tool.wire_output)
    assert "AttendanceRule" in tool.wire_output["$defs"]
    assert out.count('"tie_breaker"') == 1
    assert json.dumps(tool.output_schema).count('"tie_breaker"') == 2  # current rule and history items
