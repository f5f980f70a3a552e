"""OpenTelemetry spans for every call: one call span, the pipeline's stages as its children.

Off unless OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set: then
`configure` installs the SDK's tracer provider with an OTLP/HTTP exporter (the `otel` extra;
the standard OTEL_* variables name the service, headers, sampler). While off, `call` and `stage`
hand out one shared do-nothing context manager: no span objects, no context switches.

A call span (`kumitate.call <service>.<tool>`, kind SERVER) is the child of the span current
when the call starts (fastmcp's `tools/call` span, an instrumented ASGI server) or else of
the caller's W3C `traceparent` (an HTTP header, or MCP `_meta`). Its stages are `admit`
(authentication, authorization, rate limit), `validate` (input), `handler` and `output`
(schema check and size guard); an outbound HTTP attempt made by the handler (kumitate.outbound) is
a CLIENT span under `handler` and sends its `traceparent` upstream, and a storage commit
(`context.commit_gate`) is a `storage.commit` span. Attributes carry ids, names and the outcome code, never what
the caller sent: a tool's inputs stay out of traces as they stay out of logs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer

INSTRUMENTATION = "kumitate"
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")

_tracer: Tracer | None = None
_OFF: contextlib.nullcontext[None] = contextlib.nullcontext()


def configure(env: Mapping[str, str]) -> bool:
    """Export spans by OTLP when an endpoint is configured; True if tracing is (now) on."""
    global _tracer
    if _tracer is not None:
        return True
    if not any(env.get(name) for name in ENDPOINT_VARIABLES):
        return False
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise RuntimeError(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK is not installed: "
            "pip install 'kumitate[otel]' (or unset the variable)"
        ) from None

    provider = TracerProvider(resource=Resource.create({"service.name": env.get("OTEL_SERVICE_NAME") or "kumitate"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _tracer = provider.get_tracer(INSTRUMENTATION)
    return True


def use(provider: trace.TracerProvider | None) -> None:
    """Record kumitate's spans with `provider` (None: off again). For tests and embedding
    applications that own their tracer provider; the global provider is left alone."""
    global _tracer
    _tracer = provider.get_tracer(INSTRUMENTATION) if provider is not None else None


def enabled() -> bool:
    """Whether spans are being exported (an OTLP endpoint is configured)."""
    return _tracer is not None


def _parent(headers: Mapping[str, str], meta: Mapping[str, object] | None) -> otel_context.Context | None:
    """The current span's context if there is one, else the caller's traceparent, else a new trace."""
    if trace.get_current_span().get_span_context().is_valid:
        return None
    carrier = {k: v for k, v in (meta or {}).items() if k in ("traceparent", "tracestate") and isinstance(v, str)}
    if not carrier:
        carrier = {k: v for k, v in headers.items() if k in ("traceparent", "tracestate")}
    return propagate.extract(carrier) if carrier else None


@contextlib.contextmanager
def _call_span(
    tracer: Tracer, name: str, transport: str, headers: Mapping[str, str], meta: Mapping[str, object] | None
) -> Iterator[trace.Span]:
    with tracer.start_as_current_span(
        f"kumitate.call {name}",
        context=_parent(headers, meta),
        kind=SpanKind.SERVER,
        attributes={"kumitate.tool": name, "kumitate.transport": transport},
        record_exception=False,
    ) as span:
        yield span


def call(
    name: str, transport: str, headers: Mapping[str, str], meta: Mapping[str, object] | None
) -> contextlib.AbstractContextManager[trace.Span | None]:
    """The span of one call to `name` (`service.tool`); `finish` records how it ended."""
    if _tracer is None:
        return _OFF
    return _call_span(_tracer, name, transport, headers, meta)


def finish(span: trace.Span | None, run_id: str, trace_id: str, code: str, status: int) -> None:
    """Ids and outcome on the call span (`span` is None while tracing is off)."""
    if span is None:
        return
    span.set_attributes(
        {"kumitate.run_id": run_id, "kumitate.trace_id": trace_id, "kumitate.outcome": code, "kumitate.status": status}
    )
    if status >= 400:
        span.set_status(Status(StatusCode.ERROR, code))


def stage(name: str) -> contextlib.AbstractContextManager[trace.Span | None]:
    """A child span of the current call for one pipeline stage (admit, validate, handler, output)."""
    if _tracer is None:
        return _OFF
    return _stage_span(_tracer, name)


def outbound(method: str, host: str) -> contextlib.AbstractContextManager[trace.Span | None]:
    """A CLIENT span around one outbound HTTP attempt (kumitate.outbound); the host, never the path or body."""
    if _tracer is None:
        return _OFF
    attributes = {"http.request.method": method, "server.address": host}
    return _stage_span(_tracer, f"outbound {method} {host}", SpanKind.CLIENT, attributes)


def inject(headers: dict[str, str]) -> dict[str, str]:
    """`headers` plus the current span's `traceparent`, so an upstream joins the trace (while tracing is on)."""
    if _tracer is not None:
        propagate.inject(headers)
    return headers


@contextlib.contextmanager
def _stage_span(
    tracer: Tracer, name: str, kind: SpanKind = SpanKind.INTERNAL, attributes: dict[str, str] | None = None
) -> Iterator[trace.Span]:
    """An exception is recorded by its type and catalogue code only: its message may quote the
    input (a validation error names the offending value), so OpenTelemetry's own recording is off."""
    with tracer.start_as_current_span(
        name, kind=kind, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield span
        except BaseException as exc:
            span.set_attribute("error.type", getattr(exc, "code", None) or type(exc).__name__)
            span.set_status(Status(StatusCode.ERROR))
            raise
