"""The pipeline's last resort: storage failures, out-of-range numbers and bugs, each with its code and log."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from kumitate.context import CallContext
from kumitate.errors import ToolError
from kumitate.observability import calllog
from kumitate.pipeline import CallRequest, Pipeline, Policies
from kumitate.policies.idempotency_store import IdempotencyStore
from kumitate.storage import open_database
from tests.runtime.test_pipeline import EchoInput, Handlers, binding, make_pipeline, pipeline_with

pytestmark = pytest.mark.anyio
HTTP = CallRequest(transport="http", ids=("run-1", "trace-1"))


def full_database() -> sqlite3.Connection:
    """A real SQLite database that has run out of pages: every further insert is SQLITE_FULL."""
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.execute("CREATE TABLE t (x BLOB)")
    db.execute("PRAGMA max_page_count = 3")
    return db


class Faulty(Handlers):
    def __init__(self) -> None:
        super().__init__()
        self.db = full_database()
        self.fail_first = 1

    def store_id(self, input: EchoInput, ctx: CallContext) -> dict[str, Any]:
        sqlite3.connect(":memory:").execute("SELECT ?", (input.n,))  # OverflowError past 2^63 - 1
        return {"n": input.n}

    def disk_full(self, input: EchoInput, ctx: CallContext) -> dict[str, Any]:
        self.db.execute("INSERT INTO t VALUES (zeroblob(100000))")
        return {"n": input.n}

    def engine_full(self, input: EchoInput, ctx: CallContext) -> dict[str, Any]:
        try:
            with open("/dev/full", "wb") as out:  # a real ENOSPC from the kernel
                out.write(b"x" * 10)
        except OSError as exc:
            raise ToolError("the engine rejected the query", code="SQL_ERROR") from exc
        return {"n": input.n}

    def flaky(self, input: EchoInput, ctx: CallContext) -> dict[str, Any]:
        self.calls += 1
        if self.fail_first:
            self.fail_first -= 1
            raise RuntimeError("transient bug")
        return {"n": input.n}


def faulty_pipeline(policies: Policies | None = None) -> tuple[Pipeline, Faulty]:
    handlers = Faulty()
    return pipeline_with(handlers, policies), handlers


def idempotent_faulty_pipeline(tmp_path: Path) -> tuple[Pipeline, Faulty]:
    return faulty_pipeline(Policies(idempotency=IdempotencyStore(open_database(tmp_path))))


def log_lines(err: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in err.splitlines() if line.startswith("{")]


async def test_an_integer_past_64_bits_is_bad_request_not_internal(capsys: pytest.CaptureFixture[str]) -> None:
    calllog.configure()
    pipeline, _ = faulty_pipeline()
    outcome = await pipeline.call_tool(binding("store_id"), {"n": 2**63}, HTTP)
    assert (outcome.status, outcome.code) == (400, "BAD_REQUEST")
    assert "64 bits" in outcome.body["error"]["message"]
    assert "traceback" not in capsys.readouterr().err  # an expected error: one line, no traceback


async def test_a_full_database_is_storage_unavailable_with_retry_after() -> None:
    pipeline, _ = faulty_pipeline()
    outcome = await pipeline.call_tool(binding("disk_full"), {"n": 1}, HTTP)
    assert (outcome.status, outcome.code, outcome.retryable) == (503, "STORAGE_UNAVAILABLE", True)
    assert outcome.headers["Retry-After"] == "5"
    assert "disk" not in outcome.body["error"]["message"].split(";")[1]  # no engine internals beyond the summary


async def test_a_storage_failure_under_a_handlers_own_code_is_storage_unavailable() -> None:
    pipeline, _ = faulty_pipeline()
    outcome = await pipeline.call_tool(binding("engine_full"), {"n": 1}, HTTP)
    assert (outcome.status, outcome.code) == (503, "STORAGE_UNAVAILABLE")


async def test_a_crash_is_logged_with_its_traceback_but_not_its_message(capsys: pytest.CaptureFixture[str]) -> None:
    calllog.configure()
    pipeline, _ = make_pipeline()
    outcome = await pipeline.call_tool(binding("crash"), {"n": 1, "secret": "hunter2"}, HTTP)
    assert outcome.code == "INTERNAL" and "Traceback" not in json.dumps(outcome.body)
    err = capsys.readouterr().err
    crash = next(line for line in log_lines(err) if line["event"] == "handler_crashed")
    assert crash["run_id"] == "run-1" and crash["error_type"] == "ValueError"
    assert "Traceback (most recent call last)" in crash["traceback"]
    assert "in crash" in crash["traceback"]  # the handler's frame
    assert "hunter2" not in err


async def test_a_server_fault_releases_the_idempotency_key(tmp_path: Path) -> None:
    pipeline, handlers = idempotent_faulty_pipeline(tmp_path)
    tool = binding("flaky", idempotency=True)
    first = await pipeline.call_tool(tool, {"n": 5}, CallRequest("http", ids=("r1", "t"), idempotency_key="k"))
    assert first.code == "INTERNAL"
    retry = await pipeline.call_tool(tool, {"n": 5}, CallRequest("http", ids=("r2", "t"), idempotency_key="k"))
    assert retry.ok and not retry.replayed and retry.body == {"n": 5}
    again = await pipeline.call_tool(tool, {"n": 5}, CallRequest("http", ids=("r3", "t"), idempotency_key="k"))
    assert again.replayed and handlers.calls == 2


async def test_a_storage_failure_releases_the_idempotency_key(tmp_path: Path) -> None:
    pipeline, _ = idempotent_faulty_pipeline(tmp_path)
    tool = binding("disk_full", idempotency=True)
    for run in ("r1", "r2"):
        outcome = await pipeline.call_tool(tool, {"n": 1}, CallRequest("http", ids=(run, "t"), idempotency_key="k"))
        assert outcome.code == "STORAGE_UNAVAILABLE" and not outcome.replayed


async def test_a_client_error_is_kept_by_the_idempotency_key(tmp_path: Path) -> None:
    pipeline, _ = idempotent_faulty_pipeline(tmp_path)
    tool = binding("missing", idempotency=True)
    for run, replayed in (("r1", False), ("r2", True)):
        outcome = await pipeline.call_tool(tool, {"n": 1}, CallRequest("http", ids=(run, "t"), idempotency_key="k"))
        assert outcome.code == "NOT_FOUND" and outcome.replayed is replayed


def test_the_http_last_resort_logs_a_traceback_and_the_route_template(capsys: pytest.CaptureFixture[str]) -> None:
    from types import SimpleNamespace

    from litestar import Litestar, Request, Response, get
    from litestar.testing import TestClient

    from kumitate.transports.http import error_response

    calllog.configure()
    pipeline, _ = make_pipeline()
    runtime: Any = SimpleNamespace(pipeline=pipeline)

    @get("/boom/{secret:str}", sync_to_thread=False)
    def boom(secret: str) -> None:
        raise RuntimeError(f"leaked {secret}")

    def on_error(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
        return error_response(runtime, request, exc)

    app = Litestar([boom], exception_handlers={Exception: on_error}, logging_config=None)
    with TestClient(app) as client:
        response = client.get("/boom/hunter2")
    assert response.status_code == 500 and response.json()["error"]["code"] == "INTERNAL"
    assert "hunter2" not in response.text
    err = capsys.readouterr().err
    crash = next(line for line in log_lines(err) if line["event"] == "request_crashed")
    assert crash["route"] == "/boom/{secret:str}" and crash["error_type"] == "RuntimeError"
    assert "in boom" in crash["traceback"] and "hunter2" not in json.dumps(log_lines(err))  # (httpx logs its URL)
