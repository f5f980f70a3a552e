"""OpenTelemetry spans (issue 18 item 5), read from an in-memory exporter.

Every call gets a `kumitate.call` span with the pipeline's stages as children, joined to the
caller's traceparent (HTTP header or MCP `_meta`); attributes carry ids and the outcome, never
a tool's inputs; nothing is recorded or exported while tracing is off.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import httpx
import pytest
from fastmcp import Client
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from kumitate.app import create_app
from kumitate.observability import tracing
from kumitate.runtime import Runtime
from kumitate.settings import Settings
from kumitate.transports.mcp import build_server
from tests.conftest import start_server, stop_server

pytestmark = pytest.mark.anyio

SECRET_NAME = "秘密区"
STAYS = {"stays": [{"code": "13101", "name": SECRET_NAME}]}
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE}-{PARENT}-01"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(provider)
    yield exporter
    tracing.use(None)


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    rt = Runtime(Settings(data_dir=tmp_path / "var", sample_dir=tmp_path / "s", public_base_url="http://x"), ["stays"])
    yield rt
    rt.close()


def by_name(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {s.name: s for s in exporter.get_finished_spans()}


def assert_call_tree(found: dict[str, ReadableSpan], call: str, stages: tuple[str, ...]) -> ReadableSpan:
    root = found[f"kumitate.call {call}"]
    for stage in stages:
        child = found[stage]
        assert child.parent is not None and child.parent.span_id == root.context.span_id, stage
        assert child.context.trace_id == root.context.trace_id
    return root


def assert_no_inputs(exporter: InMemorySpanExporter) -> None:
    for span in exporter.get_finished_spans():
        values = " ".join(str(v) for v in (span.attributes or {}).values())
        events = " ".join(str(e.attributes) for e in span.events)
        assert SECRET_NAME not in values + events and "13101" not in values + events, span.name


async def test_an_mcp_call_has_a_span_with_its_stages_and_no_inputs(
    runtime: Runtime, spans: InMemorySpanExporter
) -> None:
    async with Client(build_server(runtime, ["stays"])) as client:
        result = await client.call_tool("summarize_stays", STAYS)
    root = assert_call_tree(by_name(spans), "stays.summarize_stays", ("admit", "validate", "handler", "output"))
    attrs = root.attributes or {}
    assert attrs["kumitate.transport"] == "mcp" and attrs["kumitate.outcome"] == "OK"
    assert attrs["kumitate.run_id"] == result.meta["kumitate"]["run_id"]  # type: ignore[index]
    assert_no_inputs(spans)


async def test_a_commit_is_a_storage_span_under_the_handler(tmp_path: Path, spans: InMemorySpanExporter) -> None:
    settings = Settings(data_dir=tmp_path / "var", sample_dir=tmp_path / "s", public_base_url="http://x")
    runtime = Runtime(settings, ["attendance"])
    try:
        async with Client(build_server(runtime, ["attendance"])) as client:
            invitees = [{"user_id": "1", "display_name": "山田 太郎"}, {"user_id": "2", "display_name": "佐藤 花子"}]
            parsed = await client.call_tool("parse_attendance_intent", {"text": "全員必須", "invitees": invitees})
            rule = parsed.structured_content["attendance_rule"]
            saved = await client.call_tool("save_attendance_rule", {"thread_id": "t-1", "rule": rule})
    finally:
        runtime.close()
    assert not saved.is_error
    commit = by_name(spans)["storage.commit"]
    handlers = {s.context.span_id: s for s in spans.get_finished_spans() if s.name == "handler"}
    assert commit.parent is not None and commit.parent.span_id in handlers
    call = handlers[commit.parent.span_id].parent
    assert call is not None
    assert next(s for s in spans.get_finished_spans() if s.context.span_id == call.span_id).name == (
        "kumitate.call attendance.save_attendance_rule"
    )


async def test_an_mcp_call_joins_the_traceparent_in_meta(runtime: Runtime, spans: InMemorySpanExporter) -> None:
    async with Client(build_server(runtime, ["stays"])) as client:
        await client.call_tool("summarize_stays", STAYS, meta={"traceparent": TRACEPARENT})
    root = by_name(spans)["kumitate.call stays.summarize_stays"]
    assert f"{root.context.trace_id:032x}" == TRACE
    assert root.parent is not None and f"{root.parent.span_id:016x}" == PARENT


async def test_an_http_call_joins_the_traceparent_header_and_failures_are_errors(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    settings = Settings(data_dir=tmp_path / "var", sample_dir=tmp_path / "s", public_base_url="http://x")
    app = create_app(settings, ["stays"])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
        ok = await http.post("/v1/stays/summarize_stays", json=STAYS, headers={"traceparent": TRACEPARENT})
        bad = await http.post("/v1/stays/summarize_stays", json={"stays": SECRET_NAME})
    assert ok.status_code == 200 and bad.status_code == 400
    calls = [s for s in spans.get_finished_spans() if s.name == "kumitate.call stays.summarize_stays"]
    joined, failed = calls
    assert f"{joined.context.trace_id:032x}" == TRACE and (joined.attributes or {})["kumitate.transport"] == "http"
    assert f"{failed.context.trace_id:032x}" != TRACE  # no traceparent: a trace of its own
    assert failed.status.status_code.name == "ERROR"
    assert (failed.attributes or {})["kumitate.outcome"] == bad.json()["error"]["code"]
    assert_no_inputs(spans)


async def test_nothing_is_recorded_while_tracing_is_off(runtime: Runtime) -> None:
    assert not tracing.enabled()
    assert tracing.configure({}) is False  # no OTLP endpoint: stays off
    assert tracing.stage("handler") is tracing.call("a.b", "mcp", {}, None)  # one shared no-op
    async with Client(build_server(runtime, ["stays"])) as client:
        assert not (await client.call_tool("summarize_stays", STAYS)).is_error


class Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: keeps the span names of every export request."""

    names: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                Collector.names.extend(span.name for span in scope.spans)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return


@pytest.mark.slow
def test_a_server_with_an_otlp_endpoint_exports_its_spans(tmp_path: Path, seeded_data_dir: Path) -> None:
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{receiver.server_address[1]}"
    server = start_server(
        tmp_path / "var",
        tmp_path / "log",
        seeded=seeded_data_dir,
        OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        OTEL_BSP_SCHEDULE_DELAY="100",
    )
    try:
        assert httpx.post(f"{server.url}/v1/stays/summarize_stays", json=STAYS).status_code == 200
        deadline = time.monotonic() + 30
        while "kumitate.call stays.summarize_stays" not in Collector.names and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        stop_server(server)
        receiver.shutdown()
    assert {"kumitate.call stays.summarize_stays", "admit", "validate", "handler", "output"} <= set(Collector.names)


class Upstream(BaseHTTPRequestHandler):
    """Answers 200 and keeps the traceparent each request carried."""

    seen: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        Upstream.seen.append(self.headers.get("traceparent"))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        return


def test_an_outbound_request_is_a_client_span_and_carries_the_traceparent(spans: InMemorySpanExporter) -> None:
    from kumitate.outbound import OutboundClient

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    try:
        with (
            OutboundClient(f"http://127.0.0.1:{upstream.server_address[1]}") as http,
            tracing.call("yana.chat", "http", {"traceparent": TRACEPARENT}, None),
        ):
            assert http.request("GET", "/secret-path?q=秘密").status_code == 200
    finally:
        upstream.shutdown()
    found = by_name(spans)
    call, out = found["kumitate.call yana.chat"], found["outbound GET 127.0.0.1"]
    assert out.parent is not None and out.parent.span_id == call.context.span_id
    assert (out.attributes or {})["http.response.status_code"] == 200
    assert "secret" not in str(out.attributes) and out.kind.name == "CLIENT"
    assert Upstream.seen[-1] is not None and TRACE in Upstream.seen[-1]
