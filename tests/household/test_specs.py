"""The specs: schemas are valid, examples match them, and examples hold against the real handler."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from kumitate.errors import ToolError
from kumitate.service import ServiceSetup
from kumitate.settings import Settings

from .conftest import call_context, open_service

SPECS = Path(__file__).resolve().parents[2] / "specs" / "household"
TYPES = json.loads((SPECS / "types" / "household.json").read_text(encoding="utf-8"))
REGISTRY = Registry().with_resource("household.json", Resource.from_contents(TYPES))
TOOLS = sorted((SPECS / "tools").glob("*.yaml"))
RESOURCES = sorted((SPECS / "resources").glob("*.yaml"))
TOOL_ERRORS_GENERIC = {"VALIDATION_ERROR", "INVALID_INPUT", "BAD_REQUEST"}


def validator(schema_ref: dict[str, Any]) -> Draft202012Validator:
    ref = schema_ref["$ref"].replace("../types/", "")
    return Draft202012Validator({"$ref": ref}, registry=REGISTRY)


def load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def subset(expected: Any, actual: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and subset(v, actual[k]) for k, v in expected.items())
    return bool(expected == actual)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("spec")
    setup = ServiceSetup.open("household", Settings.from_env({"KUMITATE_DATA_DIR": str(tmp)}))
    yield open_service(setup)
    setup.close()


def test_schema_file_is_valid() -> None:
    Draft202012Validator.check_schema(TYPES)
    for name, schema in TYPES["$defs"].items():
        if name.endswith("Input"):
            assert schema["additionalProperties"] is False, name
        for prop, sub in schema.get("properties", {}).items():
            assert sub.get("description") or "$ref" in sub, f"{name}.{prop}"


def test_annotations_are_consistent() -> None:
    for path in TOOLS:
        spec = load(path)
        assert spec["name"] == path.stem
        ann = spec["mcp"]["annotations"]
        assert {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} <= set(ann)
        if ann["readOnlyHint"]:
            assert ann["destructiveHint"] is False


def test_errors_are_catalogued() -> None:
    catalogue = set(load(SPECS.parent / "errors.yaml")["codes"])
    for path in TOOLS + RESOURCES:
        assert set(load(path).get("errors", [])) <= catalogue, path.name


@pytest.mark.parametrize("path", TOOLS, ids=lambda p: p.stem)
def test_examples_validate_and_hold(path: Path, service) -> None:
    spec = load(path)
    inp, out = validator(spec["input"]), validator(spec["output"])
    assert spec["examples"], "every tool has examples"
    for example in spec["examples"]:
        ctx = call_context(spec["name"])
        inp.validate(example["input"])
        method = getattr(service, spec["name"])
        if "error" in example:
            assert example["error"] in set(spec["errors"]) | TOOL_ERRORS_GENERIC | {"NOT_FOUND"}
            with pytest.raises(ToolError) as err:
                method(dict(example["input"]), ctx)
            assert err.value.code == example["error"], example["name"]
            continue
        result = method(dict(example["input"]), ctx)
        out.validate(result)
        if example.get("match") == "subset":
            assert subset(example["output"], result), example["name"]
        else:
            assert result == example["output"], example["name"]


def test_outputs_validate_in_richer_states(service) -> None:
    ctx = call_context()
    checks = {
        "DetectDuplicatesOutput": service.detect_duplicates(
            {"date_tolerance_days": 1, "amount_tolerance_abs": 50}, ctx
        ),
        "DuplicateCandidateList": service.list_duplicate_candidates({"limit": 3, "skip_checked": False}, ctx),
        "DuplicateCandidateDetail": service.get_duplicate_candidate_detail({"check_id": 1}, ctx),
        "CategoryTrend": service.get_category_trend({"output_format": "image", "graph_type": "area"}, ctx),
        "MonthlyHousehold": service.get_monthly_household({"year": 2022, "month": 1}, ctx),
        "CategoryHierarchy": service.read_category_hierarchy(ctx),
        "AvailableMonths": service.read_available_months(ctx),
        "CategoryTrendSummary": service.read_category_trend_summary(ctx),
        "DuplicateStats": service.get_duplicate_stats({}, ctx),
    }
    for name, value in checks.items():
        validator({"$ref": f"../types/household.json#/$defs/{name}"}).validate(value)
    assert checks["AvailableMonths"]["count"] == 48


def test_resources_have_http_paths() -> None:
    paths = {load(p)["name"]: load(p)["http"]["path"] for p in RESOURCES}
    assert paths == {
        "available_months": "/v1/household/available_months",
        "category": "/v1/household/categories/{category}",
        "category_hierarchy": "/v1/household/category_hierarchy",
        "category_trend_summary": "/v1/household/category_trend_summary",
        "chart": "/api/charts/{chart_id}",
        "month": "/v1/household/months/{month}",
    }
