"""Admission (kumitate.serving.admission): a service at its bound of calls in flight answers 503 at once,
admitted calls still succeed, another service is never refused (over HTTP, with health:
tests/e2e/test_stays_wire.py)."""

from __future__ import annotations

import asyncio
import functools
import time
from typing import Any

import pytest

from generated.errors import CATALOGUE
from kumitate.bindings import Annotations, ServiceBinding, ToolBinding
from kumitate.context import CallContext
from kumitate.pipeline import CallRequest, Pipeline, Policies
from kumitate.policies.spec import Policy
from tests.runtime.test_pipeline import INPUT, OUTPUT, EchoInput

pytestmark = pytest.mark.anyio

HTTP = CallRequest(transport="http", ids=("run-1", "trace-1"))


class Holding:
    """An async tool that holds its call until `gate` opens."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.started = 0

    async def hold(self, input: EchoInput, ctx: CallContext) -> dict[str, Any]:
        self.started += 1
        await self.gate.wait()
        return {"n": input.n}


def tool(service: str) -> ToolBinding:
    return ToolBinding(
        service=service,
        name="hold",
        summary="s",
        description="d",
        input_schema=INPUT,
        output_schema=OUTPUT,
        input_model=EchoInput,
        errors=[],
        http_method="POST",
        http_path=f"/v1/{service}/hold",
        content_types=["application/json"],
        annotations=Annotations(),
        policy=Policy(),
        deprecated=None,
    )


def pipeline(bound: int, wait_s: float) -> tuple[Pipeline, dict[str, Holding]]:
    handlers = {name: Holding() for name in ("busy", "other")}
    services = {
        name: ServiceBinding(
            name=name,
            title=name,
            version="1.0.0",
            description="d",
            instructions="",
            versions={},
            success_envelope=[],
            tools=(),
            resources=(),
            create_handlers=functools.partial(lambda h, _settings: h, h),
        )
        for name, h in handlers.items()
    }
    policies = Policies(in_flight={"busy": bound, "other": bound}, admission_wait_s=wait_s)
    return Pipeline(CATALOGUE, services, handlers, policies), handlers


async def test_a_full_service_refuses_at_once_unread_and_its_admitted_calls_succeed() -> None:
    pipe, handlers = pipeline(bound=2, wait_s=0.05)
    held = [asyncio.ensure_future(pipe.call_tool(tool("busy"), {"n": i}, HTTP)) for i in range(2)]
    await asyncio.sleep(0.05)
    assert handlers["busy"].started == 2

    read = 0

    async def body() -> Any:
        nonlocal read
        read += 1
        return {"n": 9}

    started = time.monotonic()
    refused = await pipe.call_tool(tool("busy"), None, HTTP, read=body)
    assert time.monotonic() - started < 1.0  # the bounded wait (50 ms), not the held calls' time
    assert (refused.status, refused.code, refused.retryable) == (503, "SERVICE_UNAVAILABLE", True)
    assert refused.headers["Retry-After"] == "1" and refused.body["error"]["retry_after_ms"] == 1000
    assert read == 0, "a refused call's body is never read"

    other = asyncio.ensure_future(pipe.call_tool(tool("other"), {"n": 7}, HTTP))  # its own slots
    await asyncio.sleep(0.05)
    assert handlers["other"].started == 1
    handlers["other"].gate.set()
    assert (await other).status == 200

    handlers["busy"].gate.set()
    assert [(o.status, o.body) for o in await asyncio.gather(*held)] == [(200, {"n": 0}), (200, {"n": 1})]
    assert pipe.admissions["busy"].in_flight == 0
    assert (await pipe.call_tool(tool("busy"), {"n": 3}, HTTP)).status == 200  # the slots came back


async def test_a_call_that_finds_the_bound_full_is_admitted_when_a_slot_frees_within_the_wait() -> None:
    pipe, handlers = pipeline(bound=1, wait_s=2.0)
    first = asyncio.ensure_future(pipe.call_tool(tool("busy"), {"n": 1}, HTTP))
    await asyncio.sleep(0.05)
    second = asyncio.ensure_future(pipe.call_tool(tool("busy"), {"n": 2}, HTTP))
    await asyncio.sleep(0.05)
    assert handlers["busy"].started == 1  # the second waits for admission
    handlers["busy"].gate.set()
    assert [(await first).status, (await second).status] == [200, 200]
