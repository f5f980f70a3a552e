"""A call on its own, and the ends of a chain, for testing one step at a time."""

from __future__ import annotations

from typing import Any

from kumitate.context import CallContext
from kumitate.steps import Call, CallNext, CallRequest, Outcome
from tests.runtime.test_pipeline import binding


def make_call(arguments: Any = None, request: CallRequest | None = None, **policy: Any) -> Call:
    tool = binding("echo", **policy)
    ctx = CallContext(service="demo", tool="echo", transport="http", run_id="run-1", trace_id="trace-1")
    return Call(tool, request or CallRequest("http", ids=("run-1", "trace-1")), ctx, arguments)


def ok(body: Any = None) -> CallNext:
    """The rest of the chain, answering `body`; counts how often it ran."""

    async def rest(call: Call) -> Outcome:
        rest.calls += 1  # type: ignore[attr-defined]
        return Outcome(
            True, 200, "OK", {"n": 1} if body is None else body, "run-1", "trace-1", warnings=call.ctx.warnings
        )

    rest.calls = 0  # type: ignore[attr-defined]
    return rest
