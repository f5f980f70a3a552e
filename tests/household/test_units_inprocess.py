"""Household units the wire tests reach only in a server subprocess: the per-month and per-category
resources and completions, the confirm-then-restore invariant the stateful fuzz checks, and the
pure-Python duplicate search for inputs outside the vectorised search's exact range.

One small export (SQLite only: the resources' SQL is the stores' own, tested on both engines elsewhere).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from handlers.household.core.duplicates import Item, find_candidates, find_candidates_pairwise
from handlers.household.invariants import INVARIANTS
from handlers.household.records import Options
from kumitate.context import CallContext
from kumitate.errors import ToolError
from kumitate.invariants import Step

from .conftest import row, sql, wire, write_export


@pytest.fixture
def database_url() -> str:
    return ""


@pytest.fixture
def svc(tmp_path: Path, make_service: Any) -> Any:
    data = tmp_path / "exports"
    data.mkdir()
    write_export(
        data,
        "2025-01-01_2025-02-28",
        [
            row("2025/01/10", -5000, "食費", "食料品"),
            row("2025/01/10", -5000, "食費", "食料品"),
            row("2025/01/12", -1200, "食費", "外食"),
            row("2025/01/25", 300000, "収入", "給与"),
            row("2025/02/03", -800, "交通費", "電車"),
        ],
    )
    return make_service(data)


def test_month_resources_and_completions(svc: Any) -> None:
    core = svc.core
    assert core.month_labels() == ["2025-02", "2025-01"]
    assert core.month_labels("2025-0") == ["2025-02", "2025-01"] and core.month_labels("2024") == []
    assert wire(core.month_summary("2025-01")) == {
        "month": "2025-01",
        "total_expense": 11200,
        "total_income": 300000,
        "transaction_count": 3,
    }
    for missing in ("2025-03", "January"):
        with pytest.raises(ToolError) as raised:
            core.month_summary(missing)
        assert raised.value.code == "DATA_NOT_FOUND"


def test_category_resources_and_completions(svc: Any) -> None:
    core = svc.core
    assert core.category_names("食") == ["食費", "食料品"]
    assert set(core.category_names()) >= {"食費", "交通費", "収入", "外食", "電車", "給与"}
    assert wire(core.category_info("食費")) == {
        "category": "食費",
        "levels": ["major"],
        "majors": [],
        "minors": ["外食", "食料品"],
        "kind": "spending",
        "trend_accepted": True,
    }
    minor = wire(core.category_info("電車"))
    assert (minor["levels"], minor["majors"], minor["minors"]) == (["minor"], ["交通費"], [])
    assert core.category_info("給与").trend_accepted is False
    with pytest.raises(ToolError) as raised:
        core.category_info("存在しない")
    assert raised.value.code == "NOT_FOUND"


def caller(svc: Any, ctx: CallContext) -> Any:
    """The invariant's Caller over the service in process (as the fuzz's transports answer)."""

    def call(tool: str, arguments: Mapping[str, Any]) -> Step:
        try:
            return Step(tool, arguments, getattr(svc, tool)(dict(arguments), ctx))
        except ToolError as exc:
            return Step(tool, arguments, error=exc.code)

    return call


def run(invariant: Any, call: Any, memory: dict[str, Any], tool: str, arguments: dict[str, Any]) -> str | None:
    """One step as the stateful fuzz takes it: the before hook, the call, then the check if it succeeded."""
    invariant.before(tool, arguments, call, memory)
    step = call(tool, arguments)
    return invariant.check(step, call, memory) if step.ok else None


def test_confirm_then_restore_keeps_the_month_and_a_change_in_between_is_reported(svc: Any, ctx: CallContext) -> None:
    [invariant] = INVARIANTS
    call = caller(svc, ctx)
    svc.detect_duplicates({}, ctx)
    check_id = svc.list_duplicate_candidates({}, ctx)["candidates"][0]["check_id"]
    memory: dict[str, Any] = {}
    assert run(invariant, call, memory, "confirm_duplicate", {"check_id": check_id, "decision": "duplicate"}) is None
    assert run(invariant, call, memory, "restore_duplicate", {"transaction_id": 2}) is None  # figures are back

    # the same workflow, with a row of the month deleted behind the service's back before the restore
    assert run(invariant, call, memory, "confirm_duplicate", {"check_id": check_id, "decision": "duplicate"}) is None
    sql(svc, "DELETE FROM household_transactions WHERE id = 3")
    problem = run(invariant, call, memory, "restore_duplicate", {"transaction_id": 2})
    assert problem is not None and problem.startswith("2025-01: ") and "'total_expense': 10000" in problem


def test_the_invariant_notes_nothing_for_other_decisions_or_a_marked_transaction(svc: Any, ctx: CallContext) -> None:
    [invariant] = INVARIANTS
    before = invariant.before
    assert before is not None
    call = caller(svc, ctx)
    svc.detect_duplicates({}, ctx)
    check_id = svc.list_duplicate_candidates({}, ctx)["candidates"][0]["check_id"]
    memory: dict[str, Any] = {}
    before("confirm_duplicate", {"check_id": check_id, "decision": "not_duplicate"}, call, memory)
    assert memory == {}
    before("confirm_duplicate", {"check_id": 99999, "decision": "duplicate"}, call, memory)
    assert memory == {}  # no such candidate: nothing to compare
    svc.confirm_duplicate({"check_id": check_id, "decision": "duplicate"}, ctx)
    before("confirm_duplicate", {"check_id": check_id, "decision": "duplicate"}, call, memory)
    assert memory == {}  # already marked: that confirm fails and changes nothing
    # a restore with nothing noted, or of another transaction, checks nothing
    assert invariant.check(Step("restore_duplicate", {"transaction_id": 2}, {}), call, memory) is None


def items_with(amounts: list[int]) -> list[Item]:
    rng = random.Random(3)
    return [Item(i, rng.randint(0, 20), amount, kind=0) for i, amount in enumerate(amounts, start=1)]


@pytest.mark.parametrize(
    ("opts", "scale"),
    # amounts from 2**41 yen: past the range where the vectorised search's int64 steps are exact
    [
        (Options(date_tolerance_days=2, amount_tolerance_abs=100, min_similarity_score=0.0), 2**41),
        (
            Options(date_tolerance_days=1, amount_tolerance_pct=100, min_similarity_score=0.0),
            2**41,
        ),  # the spec's largest
        (Options(date_tolerance_days=3, amount_tolerance_pct=5, min_similarity_score=0.5), 2**41),
        (Options(date_tolerance_days=0, min_similarity_score=0.0), 2**41),  # exact amounts only
    ],
)
def test_the_python_search_outside_the_exact_range_equals_pairwise(opts: Options, scale: int) -> None:
    rng = random.Random(11)
    items = items_with([-(scale + rng.randint(0, 40) * 50) for _ in range(150)])
    found = find_candidates(items, opts)
    assert found == find_candidates_pairwise(items, opts)
    assert found, "the case should find some pairs"
