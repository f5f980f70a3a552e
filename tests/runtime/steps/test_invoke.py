"""The handler's invocation: thread or loop, cancellation, and no undeclared code ever answered."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
from typing import Any

import pytest

from generated.errors import CATALOGUE, ConflictError, NotFoundError
from kumitate.context import CallContext
from kumitate.errors import ToolError
from kumitate.intake import JsonBody
from kumitate.observability import calllog
from kumitate.serving.bulkhead import Bulkhead
from kumitate.steps.invoke import Handler
from tests.runtime.test_pipeline import HTTP, Handlers, binding, pipeline_with

pytestmark = pytest.mark.anyio

WORKERS = Bulkhead("demo", 2, wait_s=1.0)
ALLOWED = frozenset({"NOT_FOUND", "INTERNAL"})


def ctx() -> CallContext:
    return CallContext(service="demo", tool="echo", transport="http", run_id="run-1", trace_id="trace-1")


def raising(exc: BaseException) -> Any:
    def method() -> Any:
        raise exc

    return method


async def test_runs_sync_in_a_thread_and_async_on_the_loop() -> None:
    import threading

    async def on_loop() -> str:
        return threading.current_thread().name

    assert await Handler(on_loop, WORKERS, ALLOWED)(ctx()) == threading.current_thread().name
    assert (
        await Handler(lambda: threading.current_thread().name, WORKERS, ALLOWED)(ctx())
        != threading.current_thread().name
    )


async def test_declared_code_passes() -> None:
    with pytest.raises(NotFoundError):
        await Handler(raising(NotFoundError("no 5")), WORKERS, ALLOWED)(ctx())


@pytest.mark.parametrize("exc", [ToolError("no stay 5", code="NOT_FUOND"), ConflictError("taken 5")])
async def test_undeclared_code_answers_internal_and_is_logged(
    exc: ToolError, capsys: pytest.CaptureFixture[str]
) -> None:
    calllog.configure()
    with pytest.raises(ToolError) as answered:
        await Handler(raising(exc), WORKERS, ALLOWED)(ctx())
    assert answered.value.code == "INTERNAL" and "5" not in answered.value.message
    line = json.loads(next(x for x in capsys.readouterr().err.splitlines() if "undeclared_code" in x))
    assert (line["tool"], line["code"], line["run_id"]) == ("echo", exc.code, "run-1")


async def test_a_storage_failure_under_any_code_stays_storage_unavailable() -> None:
    try:
        raise sqlite3.OperationalError("disk I/O error")
    except sqlite3.OperationalError as cause:
        exc = ToolError("could not read", code="SQL_ERROR")
        exc.__cause__ = cause
    with pytest.raises(ToolError) as answered:
        await Handler(raising(exc), WORKERS, ALLOWED)(ctx())
    assert answered.value is exc  # the error map turns it into STORAGE_UNAVAILABLE


async def test_cancelled_caller_stops_the_gate_and_is_logged(capsys: pytest.CaptureFixture[str]) -> None:
    calllog.configure()
    call = ctx()
    task = asyncio.ensure_future(Handler(asyncio.Event().wait, WORKERS, ALLOWED)(call))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert call.cancelled()
    assert "call_cancelled" in capsys.readouterr().err


class Misspelling(Handlers):
    def echo(self, input: Any, ctx: CallContext) -> dict[str, Any]:
        raise ToolError(f"no object {input.n}", code="NOT_FUOND")


async def test_the_pipeline_answers_the_catalogues_internal_body() -> None:
    pipeline = pipeline_with(Misspelling())
    outcome = await pipeline.call_tool(binding("echo"), {"n": 7}, HTTP)
    assert (outcome.status, outcome.code) == (500, "INTERNAL")
    assert outcome.body == {
        "error": {"code": "INTERNAL", "message": "internal error; quote run_id run-1", "retryable": False},
        "run_id": "run-1",
        "trace_id": "trace-1",
    }
    assert CATALOGUE["INTERNAL"].status == 500


@pytest.mark.parametrize(
    ("arguments", "on_loop"),
    [(JsonBody(b'{"n": 5}'), True), (JsonBody(b'{"n": 5}' + b" " * 64), False), ({"n": 5}, False)],
    ids=["small HTTP body", "body over inline_max_bytes", "decoded (MCP) arguments"],
)
async def test_a_small_call_of_an_inline_tool_runs_on_the_loop(arguments: Any, on_loop: bool) -> None:
    """Spec `inline_max_bytes`: a JSON body that small runs the sync handler on the loop, else a thread."""
    import threading

    seen: list[str] = []

    class Threads:
        def echo(self, input: Any, ctx: CallContext) -> dict[str, Any]:
            seen.append(threading.current_thread().name)
            return {"n": input.n}

    inline = dataclasses.replace(binding("echo"), inline_max_bytes=len(b'{"n": 5}') + 8)
    pipeline = pipeline_with(Threads())
    outcome = await pipeline.call_tool(inline, arguments, HTTP)
    assert outcome.ok and outcome.body == {"n": 5}
    assert (seen == [threading.current_thread().name]) is on_loop
