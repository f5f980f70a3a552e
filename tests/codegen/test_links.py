"""Workflows declared as links: every one issue 33 lists, emitted as OpenAPI links schemathesis can walk,
and shown to MCP clients as a `Next:` line."""

from __future__ import annotations

import json
from pathlib import Path as FsPath
from typing import Any

import pytest
import schemathesis
from schemathesis.specs.openapi.stateful import collect_transitions

from codegen import specs
from codegen.links import Path, Source, next_line
from generated.registry import SERVICES

ROOT = FsPath(__file__).resolve().parents[2]
SPECS = ROOT / "specs"

WORKFLOWS = [
    ("detect_duplicates", "list_duplicate_candidates"),
    ("list_duplicate_candidates", "get_duplicate_candidate_detail"),
    ("get_duplicate_candidate_detail", "confirm_duplicate"),
    ("list_duplicate_candidates", "confirm_duplicate"),
    ("confirm_duplicate", "restore_duplicate"),
    ("parse_attendance_intent", "save_attendance_rule"),
    ("save_attendance_rule", "get_attendance_rule"),
    ("get_attendance_rule", "evaluate_attendance"),
    ("materialize", "profile"),
    ("materialize", "histogram"),
    ("materialize", "export"),
    ("materialize", "drop_materialized"),
    ("ingest", "search"),
    ("search", "chat"),
    ("export", "export_file"),
    ("get_monthly_household", "chart"),
]


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    """The committed OpenAPI document (tests/codegen/test_drift.py proves it is what the specs make)."""
    loaded: dict[str, Any] = json.loads((ROOT / "generated" / "openapi.json").read_text(encoding="utf-8"))
    return loaded


@pytest.fixture(scope="module")
def tree() -> specs.SpecTree:
    return specs.load(SPECS)


def test_every_workflow_of_the_issue_is_declared(tree: specs.SpecTree) -> None:
    declared = {(t.name, link.target) for t in tree.all_tools() for link in t.links}
    assert set(WORKFLOWS) <= declared


def test_schemathesis_reads_every_link_as_a_transition(tree: specs.SpecTree, document: dict[str, Any]) -> None:
    schema = schemathesis.openapi.from_dict(document)
    operations = [result.ok() for result in schema.get_all_operations()]
    transitions = collect_transitions(operations)
    edges = {(link.source.label, link.target.label) for ops in transitions.operations.values() for link in ops.outgoing}
    assert len(edges) == sum(len(t.links) for t in tree.all_tools())
    assert ("POST /v1/household/list_duplicate_candidates", "POST /v1/household/confirm_duplicate") in edges
    assert ("POST /v1/analytics/export", "GET /v1/analytics/exports/{handle}") in edges


def test_a_path_through_an_array_is_a_wildcard_link(document: dict[str, Any]) -> None:
    links = document["paths"]["/v1/household/list_duplicate_candidates"]["post"]["responses"]["200"]["links"]
    assert links["ConfirmDuplicate"] == {
        "operationId": "household.confirm_duplicate",
        "description": "Record the decision the user made on a pair.",
        "requestBody": {"check_id": "$response.body#/candidates/*/check_id"},
        "x-schemathesis": {"is_inferred": True, "merge_body": True},
    }


def test_paths_reach_values_in_the_result_and_the_input() -> None:
    result = {"candidates": [{"check_id": 1}, {"check_id": 2}, {"check_id": None}], "view": "mat_x"}
    assert Path.parse("candidates[].check_id").values(result, {}) == [1, 2]
    assert Path.parse("$input.brand_name").values(result, {"brand_name": "獺祭"}) == ["獺祭"]
    assert Path.parse("chart.chart_id").values({"chart": None}, {}) == []
    query = Source.parse("SELECT * FROM {view}")
    assert query.expression() == "SELECT * FROM {$response.body#/view}"
    assert query.fill([v[0] for v in query.choices(result, {})]) == "SELECT * FROM mat_x"


def test_mcp_clients_read_the_next_steps_in_the_description(tree: specs.SpecTree) -> None:
    tool = next(t for t in tree.all_tools() if t.name == "list_duplicate_candidates")
    line = next_line(tool.links)
    assert line == (
        "Next: get_duplicate_candidate_detail(check_id=candidates[].check_id);"
        " confirm_duplicate(check_id=candidates[].check_id)."
    )
    binding = next(t for svc in SERVICES.values() for t in svc.tools if t.name == tool.name)
    assert binding.description.endswith(line)
