"""Every household tool fails only with the codes its spec declares (plus BAD_REQUEST from the schema check).

Each tool is driven into every failure it has, on an empty store and on a filled one; a code the spec does
not list would reach a client that was never told to expect it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kumitate.errors import ToolError

from .conftest import TOOLS, row, write_export

SCHEMA = "BAD_REQUEST"
#: per tool, inputs that fail (or may fail) in some state of the store
FAILING: dict[str, list[dict[str, Any]]] = {
    "import_household_data": [{}],
    "get_monthly_household": [
        {"year": 2025, "month": 1},
        {"year": 1999, "month": 1},
        {"year": 2025, "month": 13},
        {"year": 2025, "month": 1, "output_format": "image", "image_size": "10x10"},
    ],
    "get_category_trend": [
        {},
        {"category": "収入"},
        {"category": "存在しない"},
        {"start_month": "2025-05", "end_month": "2025-01"},
        {"start_month": "1990-01", "end_month": "2025-01"},
        {"start_month": "2030-01", "end_month": "2030-02"},
        {"start_month": "2025-13"},
    ],
    "detect_duplicates": [{"transaction_ids": [99]}, {"date_tolerance_days": -1}],
    "list_duplicate_candidates": [{"limit": 0}],
    "get_duplicate_candidate_detail": [{"check_id": 99}, {"check_id": 0}],
    "confirm_duplicate": [{"check_id": 99, "decision": "skip"}, {"check_id": 1, "decision": "maybe"}],
    "restore_duplicate": [{"transaction_id": 99}, {"transaction_id": 1}],
    "get_duplicate_stats": [{}],
}


def codes_raised(svc: Any, ctx: Any, tool: str) -> set[str]:
    raised = set()
    call: Callable[..., Any] = getattr(svc, tool)
    for data in FAILING[tool]:
        try:
            call(data, ctx)
        except ToolError as err:
            raised.add(err.code)
    return raised


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_a_tool_raises_only_the_codes_it_declares(tool: str, tmp_path: Path, make_service, ctx) -> None:
    assert set(FAILING) == set(TOOLS)  # every tool is driven
    data = tmp_path / "exports"
    data.mkdir()
    empty = make_service(data)
    raised = codes_raised(empty, ctx, tool)
    write_export(
        data, "2025-01-01_2025-01-31", [row("2025/01/05", -500, "食費", "外食"), row("2025/01/25", 1, "収入", "給与")]
    )
    filled = make_service(data)
    filled.import_household_data({}, ctx)
    raised |= codes_raised(filled, ctx, tool)
    declared = set(TOOLS[tool].errors) | {SCHEMA}
    assert raised <= declared, f"{tool} raised {sorted(raised - declared)}, which its spec does not declare"
