"""The spec files: schemas are valid, examples validate and match the handler's real output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from handlers.stays.core import summarize

SPEC_DIR = Path(__file__).resolve().parents[2] / "specs" / "stays"
TOOL_FILE = SPEC_DIR / "tools" / "summarize_stays.yaml"
TYPES_FILE = SPEC_DIR / "types" / "stays.json"
TOOL = yaml.safe_load(TOOL_FILE.read_text(encoding="utf-8"))
TYPES = json.loads(TYPES_FILE.read_text(encoding="utf-8"))
REGISTRY: Registry = Registry().with_resource(
    TYPES_FILE.as_uri(), Resource.from_contents(TYPES, default_specification=DRAFT202012)
)


def validator(part: str) -> Draft202012Validator:
    """A validator for the tool's `input` or `output`, resolving its relative $ref like the loader would."""
    schema = {"$id": TOOL_FILE.as_uri(), **TOOL[part]}
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, registry=REGISTRY)


INPUT = validator("input")
OUTPUT = validator("output")


def test_types_file_is_a_valid_schema() -> None:
    Draft202012Validator.check_schema(TYPES)


def test_tool_metadata() -> None:
    assert TOOL["name"] == TOOL_FILE.stem == "summarize_stays"
    assert TOOL["http"] == {"method": "POST", "path": "/v1/stays/summarize_stays"}
    assert TOOL["errors"] == ["BAD_REQUEST"]
    assert TOOL["mcp"]["annotations"] == {
        "title": "Summarize stays",
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    service = yaml.safe_load((SPEC_DIR / "service.yaml").read_text(encoding="utf-8"))
    assert service["name"] == "stays"


def _walk_properties(schema: Any) -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(schema, dict):
        for name, sub in schema.get("properties", {}).items():
            found.append((name, sub))
        for value in schema.values():
            found.extend(_walk_properties(value))
    elif isinstance(schema, list):
        for value in schema:
            found.extend(_walk_properties(value))
    return found


def test_every_property_is_described() -> None:
    for name, sub in _walk_properties(TYPES):
        assert "description" in sub or "$ref" in sub, name
    for name in ("Granularity", "Mode"):
        assert TYPES["$defs"][name]["description"]


def test_record_fields_are_untyped_so_records_are_checked_one_by_one() -> None:
    record = TYPES["$defs"]["StayRecord"]
    assert record["$comment"]
    assert record["additionalProperties"] is True
    assert "required" not in record
    for name, sub in record["properties"].items():
        assert "type" not in sub, name


def test_outputs_are_closed() -> None:
    for name in ("StayResult", "RecordError", "Stats", "SummarizeStaysOutput", "SummarizeStaysInput"):
        assert TYPES["$defs"][name]["additionalProperties"] is False, name


EXAMPLES = TOOL["examples"]


@pytest.mark.parametrize("example", EXAMPLES, ids=[e["name"] for e in EXAMPLES])
def test_example(example: dict[str, Any]) -> None:
    if "error" in example:
        assert example["error"] == "BAD_REQUEST"
        assert not INPUT.is_valid(example["input"])
        return
    INPUT.validate(example["input"])
    OUTPUT.validate(example["output"])
    assert example["match"] == "exact"
    assert summarize(example["input"]) == example["output"]


def test_examples_cover_the_brief() -> None:
    assert [e["name"] for e in EXAMPLES] == [
        "seed_sequence",
        "aggregate_per_district",
        "record_level_errors",
        "missing_timestamp",
        "unknown_granularity",
    ]


def test_input_schema_lets_bad_records_through_to_the_handler() -> None:
    batch = {
        "stays": [
            {"code": 1, "name": None, "start_ts": 5, "end_ts": [], "ref": {"x": 1}, "lat": 35.6},
            {},
        ]
    }
    assert INPUT.is_valid(batch)
    out = summarize(batch)
    OUTPUT.validate(out)
    assert [e["reason"] for e in out["errors"]] == ["INVALID_REF", "MISSING_CODE", "MISSING_CODE"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"stays": {}},
        {"stays": "x"},
        {"stays": [], "granularity": "city"},
        {"stays": [], "mode": "timeline"},
        {"stays": [], "extra": 1},
        {"stays": ["not an object"]},
    ],
    ids=["no_stays", "stays_object", "stays_string", "bad_granularity", "bad_mode", "unknown_field", "item_not_object"],
)
def test_input_schema_rejects_top_level_problems(body: dict[str, Any]) -> None:
    assert not INPUT.is_valid(body)


def test_input_schema_limits_batch_size() -> None:
    fast = jsonschema_rs.validator_for({**TYPES, "$ref": "#/$defs/SummarizeStaysInput"})
    assert fast.is_valid({"stays": [{}] * 100_000})
    assert not fast.is_valid({"stays": [{}] * 100_001})
