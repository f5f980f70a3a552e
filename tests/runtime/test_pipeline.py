"""The invocation pipeline on its own: validation semantics, fail-closed output, errors, deadline, logs."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

import pytest
from pydantic import BaseModel

from generated.errors import CATALOGUE, NotFoundError
from kumitate.bindings import Annotations, ResourceBinding, ServiceBinding, ToolBinding
from kumitate.context import CallContext
from kumitate.observability import calllog
from kumitate.pipeline import CallRequest, Pipeline, Policies
from kumitate.policies.spec import Policy
from kumitate.runtime import MissingHandlerError, _check_handlers

pytestmark = pytest.mark.anyio

INPUT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["n"],
    "properties": {"n": {"type": "integer", "minimum": 0}, "secret": {"type": "string"}},
}
OUTPUT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["n"],
    "properties": {
        "n": {"type": "integer"},
        "note": {"type": "string"},
        "inner": {"type": "object", "properties": {"at": {"type": "string"}}},
    },
}


class Inner(BaseModel):
    at: str | None = None


class EchoOutput(BaseModel):
    n: int | None = None
    note: str | None = None
    inner: Inner | None = None


class EchoInput(BaseModel):
    n: int
    secret: str | None = None


class Handlers:
    def __init__(self) -> None:
        self.calls = 0

    def echo(self, input: EchoInput, ctx: CallContext) -> dict[str, Any]:
        self.calls += 1
        return {"n": input.n}

    def broken(self, input: EchoInput, ctx: CallContext) -> dict[str, Any]:
        return {"n": "not an integer", "leak": input.secret}

    def nulled(self, input: EchoInput, ctx: CallContext) -> EchoOutput:
        return EchoOutput(n=input.n, note=None, inner=Inner(at=None))

    def required_none(self, input: EchoInput, ctx: CallContext) -> EchoOutput:
        return EchoOutput(n=None, note="x")

    def missing(self, input: EchoInput, ctx: CallContext) -> dict[str, Any]:
        raise NotFoundError(f"no object {input.n}")

    def crash(self, input: EchoInput, ctx: CallContext) -> dict[str, Any]:
        raise ValueError(f"secret detail {input.secret}")

    async def slow(self, input: EchoInput, ctx: CallContext) -> dict[str, Any]:
        await asyncio.sleep(5)
        return {"n": input.n}


def binding(name: str, **policy: Any) -> ToolBinding:
    return ToolBinding(
        service="demo",
        name=name,
        summary="s",
        description="d",
        input_schema=INPUT,
        output_schema=OUTPUT,
        input_model=EchoInput,
        errors=["NOT_FOUND"],
        http_method="POST",
        http_path=f"/v1/demo/{name}",
        content_types=["application/json"],
        annotations=Annotations(),
        policy=Policy.parse(policy),
        deprecated=None,
    )


def pipeline_with(
    handlers: object,
    policies: Policies | None = None,
    envelope: list[str] | None = None,
    disabled: frozenset[str] | set[str] = frozenset(),
) -> Pipeline:
    """The service `demo` served by `handlers`, everything given at construction as the runtime gives it
    (a chain is built on a binding's first call from what the pipeline holds then)."""
    service = ServiceBinding(
        name="demo",
        title="Demo",
        version="1.0.0",
        description="d",
        instructions="",
        versions={"server_version": "9.9.9", "policy_version": "p1"},
        success_envelope=envelope or [],
        tools=(),
        resources=(),
        create_handlers=lambda s: handlers,
    )
    return Pipeline(CATALOGUE, {"demo": service}, {"demo": handlers}, policies, disabled=disabled)


def make_pipeline(envelope: list[str] | None = None, policies: Policies | None = None) -> tuple[Pipeline, Handlers]:
    handlers = Handlers()
    return pipeline_with(handlers, policies, envelope), handlers


HTTP = CallRequest(transport="http", ids=("run-1", "trace-1"))


@pytest.mark.parametrize(
    ("arguments", "ok"),
    [
        ({"n": 5}, True),
        ({"n": 5.0}, True),  # JSON Schema: 5.0 is an integer
        ({"n": "5"}, False),  # ... and "5" is not
        ({"n": True}, False),
        ({"n": -1}, False),
        ({"n": 1, "extra": 1}, False),
        ({}, False),
        ([1], False),
    ],
)
async def test_input_validation_has_json_semantics(arguments: Any, ok: bool) -> None:
    pipeline, handlers = make_pipeline()
    outcome = await pipeline.call_tool(binding("echo"), arguments, HTTP)
    assert outcome.ok is ok
    if ok:
        assert outcome.body == {"n": 5}
    else:
        assert outcome.status == 400
        assert outcome.body["error"]["code"] == "BAD_REQUEST"
        assert handlers.calls == 0


async def test_invalid_output_fails_closed_and_is_logged_without_data(capsys: pytest.CaptureFixture[str]) -> None:
    calllog.configure()
    pipeline, _ = make_pipeline()
    outcome = await pipeline.call_tool(binding("broken"), {"n": 1, "secret": "hunter2"}, HTTP)
    assert (outcome.status, outcome.body["error"]["code"]) == (500, "INTERNAL")
    assert "hunter2" not in json.dumps(outcome.body)
    err = capsys.readouterr().err
    assert "output_invalid" in err
    assert "hunter2" not in err


async def test_none_in_an_optional_output_field_is_left_out() -> None:
    pipeline, _ = make_pipeline()
    outcome = await pipeline.call_tool(binding("nulled"), {"n": 3}, HTTP)
    assert (outcome.status, outcome.body) == (200, {"n": 3, "inner": {}})


async def test_none_in_a_required_output_field_is_internal_naming_the_field() -> None:
    pipeline, _ = make_pipeline()
    outcome = await pipeline.call_tool(binding("required_none"), {"n": 3}, HTTP)
    assert (outcome.status, outcome.body["error"]["code"]) == (500, "INTERNAL")
    assert "(at <body>)" in outcome.body["error"]["message"]  # "n" is required: left out, the object is invalid
    outcome = await pipeline.call_tool(binding("broken"), {"n": 1}, HTTP)
    assert "(at /n)" in outcome.body["error"]["message"]


async def test_catalogued_error_maps_to_status_and_body() -> None:
    pipeline, _ = make_pipeline()
    outcome = await pipeline.call_tool(binding("missing"), {"n": 7}, HTTP)
    assert outcome.status == 404
    assert outcome.body == {
        "error": {"code": "NOT_FOUND", "message": "no object 7", "retryable": False},
        "run_id": "run-1",
        "trace_id": "trace-1",
    }


async def test_crash_is_internal_without_detail(capsys: pytest.CaptureFixture[str]) -> None:
    calllog.configure()
    pipeline, _ = make_pipeline()
    outcome = await pipeline.call_tool(binding("crash"), {"n": 1, "secret": "hunter2"}, HTTP)
    assert outcome.body["error"]["code"] == "INTERNAL"
    assert "hunter2" not in json.dumps(outcome.body)
    assert "run-1" in outcome.body["error"]["message"]
    assert "hunter2" not in capsys.readouterr().err


async def test_deadline_gives_request_timeout() -> None:
    pipeline, _ = make_pipeline()
    outcome = await pipeline.call_tool(binding("slow", timeout_ms=50), {"n": 1}, HTTP)
    assert (outcome.status, outcome.body["error"]["code"], outcome.body["error"]["retryable"]) == (
        408,
        "REQUEST_TIMEOUT",
        True,
    )


async def test_success_envelope_adds_ids_and_versions() -> None:
    envelope = ["run_id", "trace_id", "server_version", "policy_version"]
    pipeline, _ = make_pipeline(envelope)
    undeclared = await pipeline.call_tool(binding("echo"), {"n": 3}, HTTP)
    assert undeclared.body["error"]["code"] == "INTERNAL"  # OUTPUT forbids the extra keys: fail closed
    declared = {**OUTPUT, "properties": {**OUTPUT["properties"], **{k: {"type": "string"} for k in envelope}}}
    outcome = await pipeline.call_tool(dataclasses.replace(binding("echo"), output_schema=declared), {"n": 3}, HTTP)
    assert outcome.body == {
        "n": 3,
        "run_id": "run-1",
        "trace_id": "trace-1",
        "server_version": "9.9.9",
        "policy_version": "p1",
    }


async def test_mcp_meta_ids_win_over_transport_ids() -> None:
    pipeline, _ = make_pipeline()
    request = CallRequest(transport="mcp", meta={"run_id": "from-meta"}, ids=("http-run", "http-trace"))
    outcome = await pipeline.call_tool(binding("echo"), {"n": 1}, request)
    assert (outcome.run_id, outcome.trace_id) == ("from-meta", "http-trace")


async def test_one_log_line_per_call_without_inputs(capsys: pytest.CaptureFixture[str]) -> None:
    calllog.configure()
    pipeline, _ = make_pipeline()
    await pipeline.call_tool(binding("echo"), {"n": 4, "secret": "hunter2"}, HTTP)
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    calls = [line for line in lines if line["event"] == "call"]
    assert len(calls) == 1
    assert {"service", "tool", "transport", "run_id", "trace_id", "outcome", "duration_ms"} <= set(calls[0])
    assert calls[0]["outcome"] == "OK"
    assert "hunter2" not in json.dumps(lines)


def test_missing_handler_fails_naming_the_tool() -> None:
    service = ServiceBinding(
        name="demo",
        title="Demo",
        version="1.0.0",
        description="d",
        instructions="",
        versions={},
        success_envelope=[],
        tools=(binding("echo"), binding("not_implemented")),
        resources=(),
        create_handlers=lambda s: Handlers(),
    )
    with pytest.raises(MissingHandlerError, match="not_implemented"):
        _check_handlers(service, Handlers())


class Journal(Handlers):
    def read_journal(self, ctx: CallContext) -> bytes:
        return b"today"

    def complete_day(self, ctx: CallContext, prefix: str, arguments: dict[str, str]) -> list[str]:
        return ["monday"]


JOURNAL = ResourceBinding(
    service="demo",
    name="journal",
    errors=[],
    policy=Policy.parse({"public": True}),
    uri="demo://journal",
    params=[],
    summary="s",
    description="d",
    mime_type="text/plain",
    output_schema=None,
    http_path="/v1/demo/journal",
    enabled_by="DEMO_JOURNAL",
)


async def test_a_resource_given_as_disabled_at_construction_answers_not_found() -> None:
    """The pipeline takes the opt-in resources not enabled here when it is built (the runtime passes them),
    so no chain can be built before it knows: a disabled one is NOT_FOUND, an enabled one is read."""
    disabled = pipeline_with(Journal(), disabled={"demo.journal"})
    refused = await disabled.read_resource(JOURNAL, {}, HTTP)
    assert (refused.status, refused.code) == (404, "NOT_FOUND")
    assert await disabled.complete(JOURNAL, "day", "", {}, HTTP) == []
    enabled = pipeline_with(Journal())
    served = await enabled.read_resource(JOURNAL, {}, HTTP)
    assert (served.code, served.body) == ("OK", b"today")
    assert await enabled.complete(JOURNAL, "day", "", {}, HTTP) == ["monday"]
