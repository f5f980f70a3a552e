"""What a validating MCP client pays per call for a tool's advertised outputSchema (issue 32).

The fastmcp Client checks every structured result twice: the MCP SDK's session validates it with
a compiled (cached) `jsonschema` validator, and fastmcp looks up a pydantic TypeAdapter for the
schema (its cache key is a SHA-256 of the whole schema serialised, recomputed on each call, after a
walk that copies it) and validates the result again. Measured here in-process, CPU time per call,
for summarize_stays' result (5 stays), against the schema kumitate advertises and the one a one-file
FastMCP server derives from the same pydantic output model; the same result is checked against
both. "no descriptions" is kumitate's schema without any description/examples: what it would save.

Run: python -m bench.client_schema_bench  (prints a Markdown table; about 20 s)
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from typing import Any

from bench.foundation_bench import PAYLOAD
from generated.stays.models import SummarizeStaysOutput  # module level: fastmcp resolves the annotation here

N = 2000


def advertised() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(kumitate's outputSchema, the one-file server's, a structured result), over fastmcp's in-memory Client."""
    from fastmcp import Client, FastMCP

    from handlers.stays.core import summarize
    from kumitate.runtime import Runtime
    from kumitate.settings import Settings
    from kumitate.transports.mcp import build_server

    baseline = FastMCP("hand-written")

    @baseline.tool(name="summarize_stays")
    def summarize_stays(
        stays: list[dict[str, Any]], granularity: str = "admin", mode: str = "sequence"
    ) -> SummarizeStaysOutput:
        return SummarizeStaysOutput.model_validate(
            summarize({"stays": stays, "granularity": granularity, "mode": mode})
        )

    with tempfile.TemporaryDirectory() as tmp:
        runtime = Runtime(Settings.from_env({"KUMITATE_DATA_DIR": tmp}), ["stays"])
        try:

            async def listed(server: Any) -> tuple[dict[str, Any], dict[str, Any]]:
                async with Client(server) as client:
                    tool = (await client.list_tools())[0]
                    result = await client.call_tool("summarize_stays", PAYLOAD)
                    return dict(tool.output_schema or {}), dict(result.structured_content or {})

            ours, data = asyncio.run(listed(build_server(runtime, ["stays"])))
            base, _ = asyncio.run(listed(baseline))
        finally:
            runtime.close()
    return ours, base, data


def bare(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: bare(v) for k, v in schema.items() if k not in ("description", "examples", "title")}
    if isinstance(schema, list):
        return [bare(v) for v in schema]
    return schema


def per_call_us(schema: dict[str, Any], data: dict[str, Any]) -> dict[str, float]:
    from fastmcp.utilities.json_schema_type import json_schema_to_type_adapter
    from jsonschema import exceptions
    from jsonschema.validators import validator_for
    from referencing import Registry

    validator = validator_for(schema)(schema, registry=Registry())
    assert exceptions.best_match(validator.iter_errors(data)) is None
    adapter = json_schema_to_type_adapter(schema)
    steps = {
        "MCP SDK jsonschema check": lambda: exceptions.best_match(validator.iter_errors(data)),
        "fastmcp adapter lookup (walk + hash of the schema)": lambda: json_schema_to_type_adapter(schema),
        "fastmcp validate_python": lambda: adapter.validate_python(data),
    }
    out = {}
    for name, step in steps.items():
        for _ in range(50):
            step()
        started = time.process_time()
        for _ in range(N):
            step()
        out[name] = (time.process_time() - started) / N * 1e6
    return out


def main() -> None:
    os.environ.setdefault("FASTMCP_LOG_LEVEL", "CRITICAL")
    ours, base, data = advertised()
    rows = {
        "kumitate": per_call_us(ours, data),
        "one-file FastMCP": per_call_us(base, data),
        "kumitate, no descriptions": per_call_us(bare(ours), data),
    }
    sizes = {"kumitate": ours, "one-file FastMCP": base, "kumitate, no descriptions": bare(ours)}
    steps = list(rows["kumitate"])
    print(f"CPU time per call (µs), {N} calls each after a warm-up; summarize_stays result for 5 stays.\n")
    print("| schema | bytes | " + " | ".join(steps) + " | total |")
    print("|---|---|" + "---|" * len(steps) + "---|")
    for name, parts in rows.items():
        cells = " | ".join(f"{parts[s]:.0f}" for s in steps)
        print(f"| {name} | {len(json.dumps(sizes[name]))} | {cells} | **{sum(parts.values()):.0f}** |")


if __name__ == "__main__":
    main()
