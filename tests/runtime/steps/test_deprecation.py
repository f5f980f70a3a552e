"""The deprecation step: headers and a warning on every outcome, refusals included."""

from __future__ import annotations

import pytest

from kumitate.policies.deprecation import Deprecation
from kumitate.steps import Call, Outcome
from kumitate.steps.deprecation import Deprecated
from tests.runtime.steps.helpers import make_call, ok

pytestmark = pytest.mark.anyio

DEPRECATED = Deprecation("2026-01-01", sunset="2027-01-01", replacement="echo2")


async def test_success_gets_headers_and_warning() -> None:
    outcome = await Deprecated("echo", DEPRECATED)(make_call(), ok())
    assert outcome.headers["Deprecation"] == "@1767225600"
    assert outcome.headers["Sunset"] == "Fri, 01 Jan 2027 00:00:00 GMT"
    assert outcome.warnings == [
        "deprecated: echo is deprecated since 2026-01-01 and will be removed after 2027-01-01; use echo2"
    ]


async def test_refusal_gets_them_too() -> None:
    async def refused(call: Call) -> Outcome:
        return Outcome(False, 401, "UNAUTHORIZED", {}, "r", "t")

    assert "Deprecation" in (await Deprecated("echo", DEPRECATED)(make_call(), refused)).headers
