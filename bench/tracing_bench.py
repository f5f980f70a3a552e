"""Tracing's cost: a call through the pipeline with tracing off (the default) and on.

Off, the hooks (one call span, four stage spans) are a shared no-op context manager each; the
first table row times exactly those hooks, per call, against the call itself. On, spans are
recorded by the SDK and handed to a batch processor whose exporter drops them (the cost of
export itself is the collector's). In-process calls of a tiny tool (attendance invitee_key),
so the pipeline's own overhead is what is measured; best of interleaved rounds.
Run: python -m bench.tracing_bench
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import timeit
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from kumitate.observability import tracing
from kumitate.pipeline import CallRequest
from kumitate.runtime import Runtime
from kumitate.settings import Settings

CALLS = 2000
ROUNDS = 5
ARGS = {"kind": "user", "value": "12345"}


class Drop(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


async def per_call_us(runtime: Runtime) -> float:
    binding = next(t for t in runtime.services["attendance"].tools if t.name == "invitee_key")
    pipeline = runtime.pipeline
    loop = asyncio.get_running_loop()
    started = loop.time()
    for _ in range(CALLS):
        outcome = await pipeline.call_tool(binding, ARGS, CallRequest(transport="mcp", local=True))
        assert outcome.ok
    return (loop.time() - started) / CALLS * 1e6


def hooks_off_us() -> float:
    def one_call() -> None:
        with tracing.call("a.b", "mcp", {}, None) as span:
            for stage in ("admit", "validate", "handler", "output"):
                with tracing.stage(stage):
                    pass
            tracing.finish(span, "r", "t", "OK", 200)

    return min(timeit.repeat(one_call, number=20000, repeat=5)) / 20000 * 1e6


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp) / "var", sample_dir=Path(tmp) / "s", public_base_url="http://x")
        runtime = Runtime(settings, ["attendance"])
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(Drop()))
        off: list[float] = []
        on: list[float] = []
        await per_call_us(runtime)  # warm-up
        for _ in range(ROUNDS):
            tracing.use(None)
            off.append(await per_call_us(runtime))
            tracing.use(provider)
            on.append(await per_call_us(runtime))
        tracing.use(None)
        runtime.close()
        provider.shutdown()
    hooks = hooks_off_us()
    best_off, best_on = min(off), min(on)
    print("| What | Measured |")
    print("|---|---|")
    print(
        f"| tracing off: the hooks of one call (1 call span + 4 stages, no-op) | {hooks:.2f} µs, {hooks / best_off:.1%} of a call |"
    )
    print(
        f"| in-process call of a tiny tool, tracing off / on (SDK, 5 spans) | {best_off:.0f} / {best_on:.0f} µs per call, on/off **{best_on / best_off:.2f}** |"
    )


if __name__ == "__main__":
    asyncio.run(main())
