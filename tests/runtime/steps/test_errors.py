"""The errors step: a ToolError becomes the catalogue's body; a crash INTERNAL, its traceback logged."""

from __future__ import annotations

import json

import pytest

from generated.errors import CATALOGUE, NotFoundError
from kumitate.errors import ToolError
from kumitate.observability import calllog
from kumitate.steps import Call, Outcome
from kumitate.steps.errors import ErrorMap, Errors
from tests.runtime.steps.helpers import make_call

pytestmark = pytest.mark.anyio


async def test_tool_error_is_the_catalogues_body() -> None:
    async def missing(call: Call) -> Outcome:
        raise NotFoundError("no object 5", details={"id": 5})

    outcome = await Errors(ErrorMap(CATALOGUE))(make_call(), missing)
    assert (outcome.status, outcome.code, outcome.ok) == (404, "NOT_FOUND", False)
    assert outcome.body == {
        "error": {"code": "NOT_FOUND", "message": "no object 5", "retryable": False, "id": 5},
        "run_id": "run-1",
        "trace_id": "trace-1",
    }


async def test_retry_after_header_from_details() -> None:
    async def limited(call: Call) -> Outcome:
        raise ToolError("slow down", code="RATE_LIMITED", details={"retry_after_ms": 1500})

    assert (await Errors(ErrorMap(CATALOGUE))(make_call(), limited)).headers["Retry-After"] == "2"


async def test_crash_is_internal_and_its_traceback_is_logged_without_the_message(
    capsys: pytest.CaptureFixture[str],
) -> None:
    calllog.configure()

    async def crash(call: Call) -> Outcome:
        raise ValueError(f"bad input {call.arguments}")

    outcome = await Errors(ErrorMap(CATALOGUE))(make_call("hidden-42"), crash)
    assert outcome.code == "INTERNAL" and outcome.status == 500
    assert "hidden-42" not in json.dumps(outcome.body)
    err = capsys.readouterr().err
    line = json.loads(next(x for x in err.splitlines() if "handler_crashed" in x))
    assert line["error_type"] == "ValueError" and "crash" in line["traceback"]
    assert "hidden-42" not in err


async def test_an_uncatalogued_code_is_refused_loudly(capsys: pytest.CaptureFixture[str]) -> None:
    """A code the catalogue lacks (built at run time, where mypy cannot see it) never passes silently:
    INTERNAL on the wire, without the refused error's message or details, and an ERROR line naming it."""
    calllog.configure()
    misspelt = "RATE_LIMTED"

    async def raises(call: Call) -> Outcome:
        raise ToolError("slow down, secret-7", code=misspelt, details={"retry_after_ms": 1500})  # type: ignore[arg-type]

    outcome = await Errors(ErrorMap(CATALOGUE))(make_call(), raises)
    assert (outcome.status, outcome.code) == (500, "INTERNAL")
    assert outcome.body["error"] == {
        "code": "INTERNAL",
        "message": "internal error; quote run_id run-1",
        "retryable": False,
    }
    assert "Retry-After" not in outcome.headers
    line = json.loads(next(x for x in capsys.readouterr().err.splitlines() if "unknown_error_code" in x))
    assert (line["code"], line["level"]) == (misspelt, "error") and "raises" in line["traceback"]
