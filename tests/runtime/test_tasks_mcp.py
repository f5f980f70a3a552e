"""Long tools as tasks over MCP: the io.modelcontextprotocol/tasks extension (SEP-2663), spoken as
raw 2026-07-28 JSON-RPC to the app's /mcp in process (fastmcp's own client drives tasks only with
the fastmcp-tasks package, which pins another fastmcp). The task is the row HTTP's operations read."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp_types import CallToolRequestParams

from kumitate.tasks.mcp import TasksExtension
from tests import stateless_mcp
from tests.conftest import InProcessApp, serve_in_process
from tests.slowcall import slow_query
from tests.stateless_mcp import TASKS, meta

pytestmark = pytest.mark.anyio

META = meta("tasks-test")
OPTED_IN = meta("tasks-test", extensions={TASKS: {}})


@pytest.fixture(scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path) -> AsyncIterator[InProcessApp]:
    async with serve_in_process(tmp_path_factory.mktemp("mcptasks") / "var", seeded_data_dir) as served:
        yield served


async def rpc(
    app: InProcessApp, method: str, params: dict[str, Any], meta: dict[str, Any] = OPTED_IN, name: str | None = None
) -> dict[str, Any]:
    return await stateless_mcp.rpc(app, method, params, meta, name)


async def call(
    app: InProcessApp, tool: str, arguments: dict[str, Any], meta: dict[str, Any] = OPTED_IN
) -> dict[str, Any]:
    reply = await rpc(app, "tools/call", {"name": tool, "arguments": arguments}, meta)
    return dict(reply["result"])


async def settled(app: InProcessApp, task_id: str, within_s: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        task = (await rpc(app, "tasks/get", {"taskId": task_id}))["result"]
        if task["status"] != "working":
            return dict(task)
        await asyncio.sleep(0.05)
    raise AssertionError(f"task {task_id} still working after {within_s} s")


async def test_a_long_tool_runs_as_a_task_and_its_result_is_inlined(app: InProcessApp) -> None:
    created = await call(app, "import_household_data", {})
    assert created["resultType"] == "task" and created["status"] == "working"
    assert isinstance(created["ttlMs"], int) and isinstance(created["pollIntervalMs"], int)
    assert not {"result", "error", "task", "requestState"} & set(created)
    task = await settled(app, created["taskId"])
    assert task["status"] == "completed" and task["resultType"] == "complete"
    assert task["result"]["isError"] is False
    assert task["result"]["structuredContent"]["files_processed"] >= 0
    # the same task, read as an HTTP operation
    operation = (await app.http.get(f"/v1/operations/{created['taskId']}")).json()
    assert operation["done"] and operation["response"] == task["result"]["structuredContent"]


async def test_without_the_extension_the_call_is_synchronous(app: InProcessApp) -> None:
    result = await call(app, "import_household_data", {}, META)
    assert "taskId" not in result and result["structuredContent"]["files_processed"] >= 0


async def test_a_tool_error_is_a_completed_task_with_is_error(app: InProcessApp) -> None:
    created = await call(app, "export", {"query": "SELECT * FROM no_such_table"})
    task = await settled(app, created["taskId"])
    assert task["status"] == "completed" and task["result"]["isError"] is True
    assert task["result"]["_meta"]["io.kumitate/error"]["code"] == "SQL_ERROR"


async def test_cancel_acks_empty_and_the_task_reads_cancelled_on_both_transports(app: InProcessApp) -> None:
    created = await call(app, "export", {"query": slow_query(300_000)})
    ack = (await rpc(app, "tasks/cancel", {"taskId": created["taskId"]}))["result"]
    assert ack.get("resultType") == "complete"
    assert not {"taskId", "status", "result", "error"} & set(ack)
    assert (await settled(app, created["taskId"]))["status"] == "cancelled"
    operation = (await app.http.get(f"/v1/operations/{created['taskId']}")).json()
    assert operation["error"]["code"] == "CANCELLED"
    again = (await rpc(app, "tasks/cancel", {"taskId": created["taskId"]}))["result"]
    assert again.get("resultType") == "complete"  # idempotent on a terminal task


async def test_a_lost_task_is_failed_with_a_json_rpc_error(app: InProcessApp) -> None:
    store = app.runtime.tasks.store
    task_id = "feedface" * 4
    await asyncio.to_thread(store.create, task_id, "analytics.export", "anonymous", "run-y", "trace-y")
    store.lease_s, lease = 0.0, store.lease_s
    try:
        await asyncio.to_thread(store.renew, {task_id: None})  # the lease ends now
    finally:
        store.lease_s = lease
    task = await settled(app, task_id)
    assert task["status"] == "failed" and "result" not in task
    assert task["error"]["code"] == -32603 and task["error"]["data"]["error"]["code"] == "TASK_LOST"


async def test_tasks_methods_need_the_extension_and_a_known_task(app: InProcessApp) -> None:
    refused = await rpc(app, "tasks/get", {"taskId": "gate-test"}, META)
    assert refused["error"]["code"] == -32021
    unknown = await rpc(app, "tasks/get", {"taskId": "no-such-task"})
    assert unknown["error"]["code"] == -32602
    mismatched = await rpc(app, "tasks/get", {"taskId": "no-such-task"}, name="another-task")
    assert mismatched["error"]["code"] == -32020


async def test_a_tool_that_cannot_run_as_a_task_goes_straight_on(app: InProcessApp) -> None:
    """Only the tools that may run as tasks are looked up again: any other call is passed on as it came
    (here without a context at all: a lookup would need one)."""
    extension = TasksExtension(app.runtime, frozenset({"import_household_data"}))
    passed_on = object()

    async def call_next() -> Any:
        return passed_on

    params = CallToolRequestParams(name="summarize_stays", arguments={})
    assert await extension.intercept_tool_call(params, None, call_next) is passed_on  # type: ignore[arg-type]
