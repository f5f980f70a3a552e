"""The output-size step: fail, or trim the largest list and say so."""

from __future__ import annotations

import pytest

from kumitate.errors import ToolError
from kumitate.policies import guard
from kumitate.steps import Call, Outcome
from kumitate.steps.output_size import OutputSize
from tests.runtime.steps.helpers import make_call, ok

pytestmark = pytest.mark.anyio

BIG = {"rows": list(range(500))}


async def test_fails_when_over_the_limit() -> None:
    with pytest.raises(ToolError) as refused:
        await OutputSize("echo", 256, "fail", False, None)(make_call(), ok(BIG))
    assert refused.value.code == "OUTPUT_TOO_LARGE" and refused.value.details["limit_bytes"] == 256


@pytest.mark.parametrize("in_body", [True, False])
async def test_trims_and_warns(in_body: bool) -> None:
    call = make_call()
    outcome = await OutputSize("echo", 256, "trim", in_body, None)(call, ok(BIG))
    assert guard.size_of(outcome.body) <= 256
    warning = guard.TRIM_WARNING.format(limit=256)
    assert (outcome.body.get("warnings") == [warning]) is in_body
    assert (call.ctx.warnings == [warning]) is not in_body


async def test_error_outcomes_pass_untouched() -> None:
    async def refused(call: Call) -> Outcome:
        return Outcome(False, 404, "NOT_FOUND", {"error": {"message": "x" * 1000}}, "r", "t")

    assert (await OutputSize("echo", 64, "fail", False, None)(make_call(), refused)).code == "NOT_FOUND"
