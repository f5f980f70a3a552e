"""Analytics workflow invariants (kumitate.invariants): a dropped view is gone for every tool."""

from __future__ import annotations

from typing import Any

from kumitate.invariants import Caller, Invariant, Step


def _gone_everywhere(step: Step, call: Caller, _memory: dict[str, Any]) -> str | None:
    result = step.result or {}
    if not result.get("dropped"):
        return None
    view = str(result["view"])
    probes = {
        "profile": {"table_or_query": view},
        "histogram": {"table_or_query": view, "column": "rows"},
        "export": {"query": f"SELECT * FROM {view}"},
    }
    for tool, arguments in probes.items():
        if call(tool, arguments).ok:
            return f"{tool} still reads the dropped view {view}"
    return None


INVARIANTS = (
    Invariant(
        "dropped_view_is_gone",
        "After drop_materialized says dropped, profile, histogram and export all fail on the view.",
        frozenset({"drop_materialized"}),
        _gone_everywhere,
    ),
)
