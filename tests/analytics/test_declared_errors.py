"""Each analytics tool and resource fails only with codes its spec declares (issue 19).

Inputs that pass the schema but fail in the core, one per way of failing, through the handlers
(the typed contract); the code of every refusal must be in the binding's `errors`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from generated.analytics import bindings
from generated.analytics.models import (
    DropMaterializedInput,
    ExportInput,
    HistogramInput,
    MaterializeInput,
    ProfileInput,
)
from handlers.analytics import AnalyticsHandlers
from handlers.analytics.core.service import AnalyticsService
from kumitate.context import CallContext, state_of
from kumitate.errors import ToolError

from .conftest import call_context

BIG = "SELECT * FROM time_series_metrics"
PAST = -1.0  # a deadline already passed


def declared(name: str) -> set[str]:
    for binding in (*bindings.SERVICE.tools, *bindings.SERVICE.resources):
        if binding.name == name:
            return set(binding.errors)
    raise KeyError(name)


CASES: list[tuple[str, Callable[[AnalyticsHandlers, CallContext], Any], float | None]] = [
    ("export", lambda h, c: h.export(ExportInput(query="DROP TABLE splits"), c), None),
    ("export", lambda h, c: h.export(ExportInput(query="SELECT nope FROM splits"), c), None),
    ("export", lambda h, c: h.export(ExportInput(query=BIG, max_rows=10), c), None),
    ("export", lambda h, c: h.export(ExportInput(query="SELECT 1"), c), PAST),
    ("profile", lambda h, c: h.profile(ProfileInput(table_or_query="no_such_table"), c), None),
    ("profile", lambda h, c: h.profile(ProfileInput(table_or_query="splits", columns=["nope"]), c), None),
    ("profile", lambda h, c: h.profile(ProfileInput(table_or_query="SELECT read_text('x')"), c), None),
    ("profile", lambda h, c: h.profile(ProfileInput(table_or_query="splits"), c), PAST),
    ("histogram", lambda h, c: h.histogram(HistogramInput(table_or_query="splits", column="nope"), c), None),
    ("histogram", lambda h, c: h.histogram(HistogramInput(table_or_query="nope", column="x"), c), None),
    ("histogram", lambda h, c: h.histogram(HistogramInput(table_or_query="SELECT 'a' AS x", column="x"), c), None),
    ("materialize", lambda h, c: h.materialize(MaterializeInput(name="q", query="DELETE FROM splits"), c), None),
    ("materialize", lambda h, c: h.materialize(MaterializeInput(name="q", query="SELECT x FROM nowhere"), c), None),
    ("materialize", lambda h, c: h.materialize(MaterializeInput(name="q", query="SELECT 1 AS a"), c), PAST),
    ("drop_materialized", lambda h, c: h.drop_materialized(DropMaterializedInput(view="a"), c), PAST),
    ("export_file", lambda h, c: h.read_export_file(c, handle="0" * 32), None),
    ("export_file", lambda h, c: h.read_export_file(c, handle="../etc/passwd"), None),
]


@pytest.mark.parametrize(("name", "call", "deadline"), CASES, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(CASES)])
def test_refusals_use_only_declared_codes(
    service: AnalyticsService, name: str, call: Callable[[AnalyticsHandlers, CallContext], Any], deadline: float | None
) -> None:
    handlers = AnalyticsHandlers(service, sweep_interval_s=None)
    ctx = call_context(name)
    if deadline is not None:
        state_of(ctx).deadline = time.monotonic() + deadline  # as the deadline step sets it
    with pytest.raises(ToolError) as info:
        call(handlers, ctx)
    assert info.value.code in declared(name), (name, info.value.code, info.value.message)
    assert type(info.value) is not ToolError, "raised as a bare ToolError, not a generated error class"
