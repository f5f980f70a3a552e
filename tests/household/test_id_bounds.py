"""Ids past SQLite's 64-bit INTEGER: refused by the schema, and never a crash in the handler either."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from handlers.household.store import checks
from kumitate.errors import ToolError

SPECS = Path(__file__).resolve().parents[2] / "specs" / "household"
TYPES = json.loads((SPECS / "types" / "household.json").read_text(encoding="utf-8"))
INT64_MAX = 2**63 - 1

ID_FIELDS = [
    ("GetDuplicateCandidateDetailInput", {"check_id": "ID"}),
    ("ConfirmDuplicateInput", {"check_id": "ID", "decision": "skip"}),
    ("RestoreDuplicateInput", {"transaction_id": "ID"}),
    ("DetectDuplicatesInput", {"transaction_ids": ["ID"]}),
]


def _fill(template: dict[str, object], value: int) -> dict[str, object]:
    return {k: ([value] if v == ["ID"] else value if v == "ID" else v) for k, v in template.items()}


@pytest.mark.parametrize(("name", "template"), ID_FIELDS)
def test_every_id_input_is_bounded_to_int64(name: str, template: dict[str, object]) -> None:
    schema = {**TYPES["$defs"][name], "$defs": TYPES["$defs"]}
    check = Draft202012Validator(schema)
    assert check.is_valid(_fill(template, INT64_MAX))
    assert not check.is_valid(_fill(template, INT64_MAX + 1))
    assert not check.is_valid(_fill(template, 0))


def test_every_integer_input_declares_its_bounds() -> None:
    for name, schema in TYPES["$defs"].items():
        if not name.endswith("Input"):
            continue
        for prop, sub in schema.get("properties", {}).items():
            item = sub.get("items", sub)
            if item.get("type") == "integer":
                assert "minimum" in item and "maximum" in item, f"{name}.{prop}"


@pytest.mark.parametrize("value", [INT64_MAX, INT64_MAX + 1, 2**70])
def test_huge_ids_are_not_found_never_a_crash(make_service, ctx, value: int) -> None:
    """The largest id is NOT_FOUND; past it the schema refuses (BAD_REQUEST), and the store, should it ever
    be handed one, answers NOT_FOUND too, never an overflow."""
    service = make_service()
    expected = "NOT_FOUND" if value <= INT64_MAX else "BAD_REQUEST"
    store = service.core.store
    calls = [
        lambda: service.get_duplicate_candidate_detail({"check_id": value}, ctx),
        lambda: service.confirm_duplicate({"check_id": value, "decision": "duplicate"}, ctx),
        lambda: service.restore_duplicate({"transaction_id": value}, ctx),
    ]
    for call in calls:
        with pytest.raises(ToolError) as raised:
            call()
        assert raised.value.code == expected
    for direct in (
        lambda: checks.detail(store, value),
        lambda: checks.confirm(store, value, "duplicate"),
        lambda: checks.restore(store, value),
    ):
        with pytest.raises(ToolError) as raised:
            direct()
        assert raised.value.code == "NOT_FOUND"
    if value <= INT64_MAX:
        assert service.detect_duplicates({"transaction_ids": [value]}, ctx)["candidates_count"] == 0
