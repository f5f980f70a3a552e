"""The analytics workflow invariant (handlers/analytics/invariants.py), which the stateful fuzz checks over
a server subprocess, here over a service in process: a dropped view is gone for profile, histogram and
export; a view that still reads is reported."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from handlers.analytics.core.service import AnalyticsService
from handlers.analytics.invariants import INVARIANTS
from kumitate.errors import ToolError
from kumitate.invariants import Step

[GONE_EVERYWHERE] = INVARIANTS
VIEW = "SELECT 1 AS rows UNION ALL SELECT 2"


def caller(service: AnalyticsService) -> Any:
    def call(tool: str, arguments: Mapping[str, Any]) -> Step:
        try:
            return Step(tool, arguments, getattr(service, tool)(dict(arguments)))
        except ToolError as exc:
            return Step(tool, arguments, error=exc.code)

    return call


def test_a_dropped_view_is_gone_and_one_still_there_is_reported(service: AnalyticsService) -> None:
    call = caller(service)
    service.materialize({"name": "gone", "query": VIEW})
    service.materialize({"name": "kept", "query": VIEW})
    dropped = call("drop_materialized", {"view": "mat_gone"})
    assert dropped.result == {"view": "mat_gone", "dropped": True}
    assert GONE_EVERYWHERE.check(dropped, call, {}) is None
    claimed = Step("drop_materialized", {"view": "mat_kept"}, {"view": "mat_kept", "dropped": True})
    assert GONE_EVERYWHERE.check(claimed, call, {}) == "profile still reads the dropped view mat_kept"
    not_dropped = call("drop_materialized", {"view": "mat_gone"})
    assert not_dropped.result == {"view": "mat_gone", "dropped": False}
    assert GONE_EVERYWHERE.check(not_dropped, call, {}) is None
