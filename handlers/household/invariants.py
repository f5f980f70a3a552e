"""Household workflow invariants (kumitate.invariants): confirming a duplicate and restoring it leaves the
month's figures as they were."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kumitate.invariants import Caller, Invariant, Step

FIGURES = ("total_expense", "total_income", "transaction_count")
KEY = "household.month_before_confirm"


def _month_figures(call: Caller, year: int, month: int) -> tuple[Any, ...] | None:
    got = call("get_monthly_household", {"year": year, "month": month})
    return tuple(got.result.get(k) for k in FIGURES) if got.ok and got.result is not None else None


def _note_month(tool: str, arguments: Mapping[str, Any], call: Caller, memory: dict[str, Any]) -> None:
    """Before a confirm as duplicate: the figures of the month of the transaction it will mark."""
    memory.pop(KEY, None)
    if tool != "confirm_duplicate" or arguments.get("decision") != "duplicate":
        return
    detail = call("get_duplicate_candidate_detail", {"check_id": arguments["check_id"]})
    if not detail.ok or detail.result is None:
        return
    marked = detail.result["transaction_2"]
    if marked.get("is_duplicate"):
        return  # already marked: the confirm will fail, nothing changes
    year, month = (int(part) for part in str(marked["date"])[:7].split("-"))
    memory[KEY] = (marked["id"], year, month, _month_figures(call, year, month))


def _restored_month_unchanged(step: Step, call: Caller, memory: dict[str, Any]) -> str | None:
    """After restore_duplicate of the transaction the previous call marked: the figures are back."""
    if step.tool != "restore_duplicate":
        return None
    noted = memory.pop("household.confirmed", None)
    if noted is None or noted[0] != step.arguments.get("transaction_id"):
        return None
    _, year, month, before = noted
    after = _month_figures(call, year, month)
    if before is not None and after != before:
        was, now = dict(zip(FIGURES, before, strict=True)), dict(zip(FIGURES, after or before, strict=True))
        return f"{year}-{month:02d}: {now} after confirm + restore, {was} before" if after else "the month is gone"
    return None


def _track(step: Step, call: Caller, memory: dict[str, Any]) -> str | None:
    noted = memory.pop(KEY, None)
    marked = (step.result or {}).get("marked_transaction_id")
    if step.tool == "confirm_duplicate" and noted is not None and marked == noted[0]:
        memory["household.confirmed"] = noted
        return None
    if step.tool in ("confirm_duplicate", "import_household_data"):
        memory.pop("household.confirmed", None)  # the figures changed in between: nothing to compare to
    return _restored_month_unchanged(step, call, memory)


INVARIANTS = (
    Invariant(
        "confirm_then_restore_keeps_month_figures",
        "confirm_duplicate(duplicate) then restore_duplicate of the marked transaction leaves the month's"
        " total_expense, total_income and transaction_count as before the confirm.",
        frozenset({"confirm_duplicate", "restore_duplicate", "import_household_data"}),
        _track,
        before=_note_month,
    ),
)
