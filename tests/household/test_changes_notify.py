"""Subscribers hear which household resources a tool call changed (issue 29), over a real MCP session.

The runtime starts on one exported month; importing a second one changes the months, the trend
summary, that month and the categories it brings; importing again changes nothing and says
nothing; a failed call says nothing; marking a row as a duplicate changes its month.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from handlers.household.changes import Shape, changed
from kumitate.runtime import Runtime
from tests.conftest import app_settings
from tests.household.conftest import row, write_export
from tests.subscribed import subscribed

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")]

MONTHS, SUMMARY, TREE = "data://available_months", "data://category_trend_summary", "data://category_hierarchy"
FEB, JAN = "data://months/2025-02", "data://months/2025-01"
SALARY, HOBBY = "data://categories/収入", "data://categories/趣味・娯楽"
EVERY = [MONTHS, SUMMARY, TREE, FEB, JAN, SALARY, HOBBY, "data://categories/食費"]


async def test_an_import_tells_subscribers_what_it_changed_and_a_call_that_changed_nothing_says_nothing(
    tmp_path: Path,
) -> None:
    exports = tmp_path / "exports"
    exports.mkdir()
    write_export(exports, "2025-01-01_2025-01-31", [row("2025/01/10", -3000, "食費", "食料品")])
    runtime = Runtime(app_settings(tmp_path / "var", HOUSEHOLD_DATA_DIR=str(exports)), services=["household"])
    try:
        async with subscribed(runtime, EVERY) as (client, heard):
            book = row("2025/02/04", -800, "趣味・娯楽", "本")
            write_export(exports, "2025-02-01_2025-02-28", [row("2025/02/03", -5000, "食費", "食料品"), book, book])
            await client.call_tool("import_household_data", {})
            said = await heard.until(HOBBY)
            assert said == [MONTHS, TREE, SUMMARY, FEB, HOBBY]  # 食費 and 2025-01 are as they were

            failed = await client.call_tool_mcp("restore_duplicate", {"transaction_id": 999999})
            assert failed.isError
            await client.call_tool("import_household_data", {})  # the same files: nothing changed

            await client.call_tool("detect_duplicates", {})
            check = (await client.call_tool("list_duplicate_candidates", {})).structured_content["candidates"][0]
            await client.call_tool("confirm_duplicate", {"check_id": check["check_id"], "decision": "duplicate"})
            assert await heard.until(FEB) == [SUMMARY, FEB]  # the failed call and the second import said nothing
            assert heard.uris == []
    finally:
        runtime.close()


def test_a_category_is_said_to_change_when_its_place_or_its_spending_does() -> None:
    before = Shape({"食費": ["外食"], "収入": ["給与"]}, frozenset({"食費", "外食"}), ("2025-01",))
    moved = Shape({"食費": ["外食", "食料品"], "収入": ["給与"]}, frozenset({"食費", "外食", "食料品"}), ("2025-01",))
    assert changed(before, moved, ["2025-01"]) == [
        ("category_hierarchy", {}),
        ("category_trend_summary", {}),
        ("month", {"month": "2025-01"}),
        ("category", {"category": "食料品"}),
        ("category", {"category": "食費"}),
    ]
    no_spending = Shape(before.tree, frozenset({"食費"}), before.months)
    assert changed(before, no_spending, []) == [("category", {"category": "外食"})]
    assert changed(before, before, []) == []
