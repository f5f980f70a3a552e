"""Tasks that ask their client something (SEP-2663 with SEP-2322), on the conformance service's
fixtures, spoken as raw 2026-07-28 JSON-RPC to the app's /mcp in process: the task reads
`input_required` with its questions, `tasks/update` brings answers (one at a time if it likes),
and questions the spec asks first (`execution.asks_first`) are rounds of the tools/call itself."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests import stateless_mcp
from tests.conftest import InProcessApp, serve_in_process
from tests.stateless_mcp import TASKS, meta

pytestmark = pytest.mark.anyio

META = meta("tasks-input-test", elicitation={}, extensions={TASKS: {}})
ACCEPT = {"action": "accept", "content": {"confirm": True}}


@pytest.fixture(scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[InProcessApp]:
    var = tmp_path_factory.mktemp("tasksinput") / "var"
    async with serve_in_process(var, KUMITATE_SERVICES="conformance") as served:
        yield served


async def rpc(app: InProcessApp, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return await stateless_mcp.rpc(app, method, params, META)


async def result(app: InProcessApp, method: str, params: dict[str, Any]) -> dict[str, Any]:
    reply = await rpc(app, method, params)
    assert "result" in reply, reply
    return dict(reply["result"])


async def until(app: InProcessApp, task_id: str, *statuses: str, within_s: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        task = await result(app, "tasks/get", {"taskId": task_id})
        if task["status"] in statuses:
            return task
        await asyncio.sleep(0.05)
    raise AssertionError(f"task {task_id} not {statuses} after {within_s} s")


async def test_a_task_that_asks_waits_input_required_and_tasks_update_resumes_it(app: InProcessApp) -> None:
    created = await result(app, "tools/call", {"name": "confirm_delete", "arguments": {"filename": "a.txt"}})
    assert created["resultType"] == "task"
    waiting = await until(app, created["taskId"], "input_required")
    assert list(waiting["inputRequests"]) == ["confirm"]
    assert waiting["inputRequests"]["confirm"]["method"] == "elicitation/create"
    assert "result" not in waiting
    ack = await result(app, "tasks/update", {"taskId": created["taskId"], "inputResponses": {"confirm": ACCEPT}})
    assert ack == {"resultType": "complete"} or set(ack) <= {"resultType", "_meta"}
    done = await until(app, created["taskId"], "completed", "failed", "cancelled")
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "a.txt: confirmed, kept"
    # the same task as an HTTP operation
    operation = (await app.http.get(f"/v1/operations/{created['taskId']}")).json()
    assert operation["response"] == {"text": "a.txt: confirmed, kept"}


async def test_questions_answered_one_at_a_time_keep_the_task_waiting_on_the_rest(app: InProcessApp) -> None:
    created = await result(app, "tools/call", {"name": "multi_input", "arguments": {}})
    task_id = created["taskId"]
    waiting = await until(app, task_id, "input_required")
    assert sorted(waiting["inputRequests"]) == ["first", "second"]
    first = {"action": "accept", "content": {"name": "one"}}
    ignored = {"unknown-key": {"ignored": True}}  # a key it does not wait on is no error
    await result(app, "tasks/update", {"taskId": task_id, "inputResponses": {"first": first} | ignored})
    still = await result(app, "tasks/get", {"taskId": task_id})
    assert still["status"] == "input_required" and list(still["inputRequests"]) == ["second"]
    bad = await rpc(app, "tasks/update", {"taskId": task_id, "inputResponses": {"second": {"content": 1}}})
    assert bad["error"]["code"] == -32602  # not a response to an elicitation
    await result(app, "tasks/update", {"taskId": task_id, "inputResponses": {"second": ACCEPT}})
    done = await until(app, task_id, "completed")
    assert done["result"]["content"][0]["text"] == 'first: {"name": "one"}; second: {"confirm": true}'


async def test_a_task_waiting_for_input_is_cancelled(app: InProcessApp) -> None:
    created = await result(app, "tools/call", {"name": "confirm_delete", "arguments": {"filename": "b.txt"}})
    await until(app, created["taskId"], "input_required")
    await result(app, "tasks/cancel", {"taskId": created["taskId"]})
    assert (await until(app, created["taskId"], "cancelled", "completed", "failed"))["status"] == "cancelled"
    late = await result(app, "tasks/update", {"taskId": created["taskId"], "inputResponses": {"confirm": ACCEPT}})
    assert late.get("resultType") == "complete"  # acked, and nothing more happens
    assert (await result(app, "tasks/get", {"taskId": created["taskId"]}))["status"] == "cancelled"


async def test_questions_asked_first_are_rounds_of_the_call_then_the_task_has_the_answers(app: InProcessApp) -> None:
    first = await result(app, "tools/call", {"name": "test_tool_with_task", "arguments": {}})
    assert first["resultType"] == "input_required" and "taskId" not in first
    assert list(first["inputRequests"]) == ["user_name"]
    retry = {
        "name": "test_tool_with_task",
        "arguments": {},
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}},
        **({"requestState": first["requestState"]} if "requestState" in first else {}),
    }
    created = await result(app, "tools/call", retry)
    assert created["resultType"] == "task" and not {"requestState", "inputRequests"} & set(created)
    done = await until(app, created["taskId"], "completed", "failed", "cancelled")
    assert done["result"]["content"][0]["text"] == "Hello from the task, Alice!"


async def test_answers_written_through_another_instance_reach_the_waiting_task(app: InProcessApp) -> None:
    created = await result(app, "tools/call", {"name": "confirm_delete", "arguments": {"filename": "c.txt"}})
    task_id = created["taskId"]
    await until(app, task_id, "input_required")
    operation = (await app.http.get(f"/v1/operations/{task_id}")).json()
    assert operation["done"] is False and operation["metadata"]["status"] == "input_required"
    # the row written as another instance's tasks/update would: this one is not woken, it reads the row
    store = app.runtime.tasks.store
    row = await asyncio.to_thread(store.get, task_id, "anonymous")
    assert row is not None
    await asyncio.to_thread(store.answer, task_id, row.principal, {"confirm": {"confirm": False}})
    done = await until(app, task_id, "completed", within_s=5)
    assert done["result"]["content"][0]["text"] == "c.txt: declined, kept"
