"""The specs: examples run against the default sample database and match their schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from generated.analytics.bindings import SERVICE
from handlers.analytics import AnalyticsHandlers
from handlers.analytics.core.service import AnalyticsService
from kumitate.errors import ToolError

from .conftest import call_context

SPECS = Path(__file__).resolve().parents[2] / "specs" / "analytics"
TYPES = json.loads((SPECS / "types" / "analytics.json").read_text())
REGISTRY = Registry().with_resource("analytics.json", Resource.from_contents(TYPES))
TOOLS = {p.stem: yaml.safe_load(p.read_text()) for p in sorted((SPECS / "tools").glob("*.yaml"))}
EXAMPLES = [(name, ex) for name, spec in TOOLS.items() for ex in spec["examples"]]


def validator(ref: str) -> Draft202012Validator:
    """A validator for a `../types/analytics.json#/$defs/X` reference."""
    target = ref.split("/types/", 1)[1]
    return Draft202012Validator({"$ref": target}, registry=REGISTRY)


def known_codes() -> set[str]:
    return set(yaml.safe_load((SPECS.parent / "errors.yaml").read_text())["codes"])


def is_subset(expected: Any, actual: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and is_subset(v, actual[k]) for k, v in expected.items())
    return bool(expected == actual)


def test_types_file_is_a_valid_schema() -> None:
    Draft202012Validator.check_schema(TYPES)


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_tool_spec_shape(name: str) -> None:
    spec = TOOLS[name]
    assert spec["name"] == name
    assert spec["http"]["path"] == f"/v1/analytics/{name}"
    hints = spec["mcp"]["annotations"]
    assert set(hints) == {"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
    assert len(hints["title"]) <= 30  # a short label for a client's tool list, not a sentence
    if hints["readOnlyHint"]:
        assert hints["destructiveHint"] is False
    assert set(spec["errors"]) <= known_codes()
    for example in spec["examples"]:
        if "error" in example:
            assert example["error"] in known_codes()
    assert any("error" in e for e in spec["examples"])


@pytest.mark.parametrize(("tool", "example"), EXAMPLES, ids=[f"{t}-{e['name']}" for t, e in EXAMPLES])
def test_example_runs(sample_service: AnalyticsService, tool: str, example: dict[str, Any]) -> None:
    """Through the handlers, as the pipeline calls them (the result dumped as it sends it)."""
    spec = TOOLS[tool]
    validator(spec["input"]["$ref"]).validate(example["input"])
    binding = next(t for t in SERVICE.tools if t.name == tool)
    method = getattr(AnalyticsHandlers(sample_service, None), tool)
    args = (binding.input_model.model_validate(example["input"]), call_context(tool))
    if "error" in example:
        with pytest.raises(ToolError) as info:
            method(*args)
        assert info.value.code == example["error"]
        return
    result = method(*args).model_dump(mode="json", by_alias=True, exclude_unset=True)
    validator(spec["output"]["$ref"]).validate(result)
    if example.get("match", "exact") == "subset":
        assert is_subset(example["output"], result), result
    else:
        assert result == example["output"]


def test_schema_resource(sample_service: AnalyticsService) -> None:
    spec = yaml.safe_load((SPECS / "resources" / "schema.yaml").read_text())
    assert spec["uri"] == "analytics://schema" and spec["http"]["path"] == "/v1/analytics/schema"
    body = sample_service.schema()
    validator(spec["output"]["$ref"]).validate(body)
    counts = {t["name"]: t["row_count"] for t in body["tables"]}
    assert counts == {"activities": 60, "splits": 633, "time_series_metrics": 204295}
    splits = next(t for t in body["tables"] if t["name"] == "splits")
    pace = next(c for c in splits["columns"] if c["name"] == "pace_s_per_km")
    assert pace == {
        "name": "pace_s_per_km",
        "type": "DOUBLE",
        "description": "Split pace in seconds per km (lower is faster).",
    }


def test_export_resource_spec() -> None:
    spec = yaml.safe_load((SPECS / "resources" / "export_file.yaml").read_text())
    assert spec["uri"] == "export://{handle}"
    assert spec["http"]["path"] == "/v1/analytics/exports/{handle}"
    assert set(spec["errors"]) <= known_codes()


def test_every_input_integer_declares_a_maximum() -> None:
    """Issue 20: an integer that reaches storage or a query is bounded in the spec (never an OverflowError)."""

    def integers(node: Any, path: str) -> list[tuple[str, dict[str, Any]]]:
        found: list[tuple[str, dict[str, Any]]] = []
        if isinstance(node, dict):
            kinds = node.get("type")
            if kinds == "integer" or (isinstance(kinds, list) and "integer" in kinds):
                found.append((path, node))
            for key, value in node.items():
                found += integers(value, f"{path}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                found += integers(value, f"{path}/{i}")
        return found

    inputs = [name for name in TYPES["$defs"] if name.endswith("Input")]
    assert len(inputs) >= 5
    unbounded = [
        path for name in inputs for path, node in integers(TYPES["$defs"][name], name) if "maximum" not in node
    ]
    assert unbounded == []
