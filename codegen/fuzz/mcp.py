"""`make fuzz` (MCP side): every tool over MCP streamable HTTP against a real server, fixed seed.

`python -m codegen.fuzz.mcp` in a project (this repository, or one made by `kumitate init`) serves it
with `kumitate serve`; needs schemathesis (the dev extra) for its JSON Schema generator.

Valid arguments come from the tool's advertised inputSchema through schemathesis's JSON Schema
generator (hypothesis-jsonschema does not run on the pinned hypothesis); schema-violating ones are
explicit mutations of a valid case (a required field dropped, an unknown field, wrong types, values
past 64 bits, out-of-enum values), each confirmed invalid by the schema itself. A mutation the schema
still accepts (e.g. 2**70 for an unbounded integer) is fuzzed as valid input.

Checks: a success's structuredContent validates against the tool's outputSchema; an error has no
structuredContent (a strict client would check it against the outputSchema) and its text content
is the catalogue body with a catalogued code; valid input gets success or a code
the tool (or its policy) declares; invalid input gets a client error; never INTERNAL, never a
protocol exception, never a hang.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema_rs
from hypothesis import HealthCheck, Phase, given, seed, settings
from schemathesis.generation.jsonschema.builder import build

from codegen.fuzz.contract import Case, check_result

if TYPE_CHECKING:
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    from codegen.fuzz.stateful import Stats

HANG_SLACK_S = 30.0
WRONG_BY_TYPE: dict[str, list[Any]] = {
    "integer": ["1", 1.5, True, 2**64, -(2**64), 2**70],
    "number": ["1.5", True, [1]],
    "string": [1, True, ["x"], {"x": "y"}],
    "boolean": ["true", 1, None],
    "array": ["x", {"x": 1}, 7],
    "object": ["x", [], 7],
    "null": [0, "null"],
}


@dataclass
class Report:
    """What a fuzz run found: how many calls it made, each failure in words, and per tool
    the (valid, invalid) cases it tried, for the summary `make fuzz` prints."""

    calls: int = 0
    failures: list[str] = field(default_factory=list)
    per_tool: dict[str, tuple[int, int]] = field(default_factory=dict)


def valid_cases(schema: Mapping[str, Any], count: int, fixed_seed: int) -> list[dict[str, Any]]:
    """Up to `count` distinct schema-valid argument objects, the same for the same seed."""
    found: list[dict[str, Any]] = []
    seen: set[str] = set()
    strategy = build(dict(schema), draft=jsonschema_rs.Draft202012, formats={})

    @seed(fixed_seed)
    @settings(
        max_examples=count * 3,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    @given(strategy)
    def collect(value: object) -> None:
        key = json.dumps(value, sort_keys=True, ensure_ascii=False)
        if isinstance(value, dict) and key not in seen and len(found) < count:
            seen.add(key)
            found.append(value)

    collect()
    return found


def _types(schema: Mapping[str, Any]) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [str(k) for k in kind]
    return []


def wrong_values(schema: Mapping[str, Any]) -> list[Any]:
    """Values of the wrong type or out of range for one property's schema."""
    values: list[Any] = []
    for kind in _types(schema):
        values += WRONG_BY_TYPE.get(kind, [])
    if "enum" in schema or "const" in schema:
        values.append("__not_one_of_the_allowed_values__")
    if "maxLength" in schema:
        values.append("x" * (int(schema["maxLength"]) + 1))
    for bound, step in (("maximum", 1), ("minimum", -1)):
        if isinstance(schema.get(bound), int | float):
            values.append(schema[bound] + step)
    values.append([[[[[[[[[[["deep"]]]]]]]]]]])
    return values


def mutations(schema: Mapping[str, Any], base: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Variants of a valid object that break one rule of its top-level schema each."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    variants: list[dict[str, Any]] = [
        {k: v for k, v in base.items() if k != name} for name in schema.get("required", [])
    ]
    if schema.get("additionalProperties") is False:
        variants.append({**base, "__unexpected_field__": 1})
    for name, sub in properties.items():
        variants += [{**base, name: value} for value in wrong_values(sub)]
    return variants


def cases_for(tool: str, schema: Mapping[str, Any], count: int, fixed_seed: int) -> list[Case]:
    """The valid cases for `tool` and the mutations of the first one, each confirmed by the schema;
    raises AssertionError when the generator cannot produce what the schema asks (a fuzz that
    fuzzes nothing would pass silently)."""
    validator = jsonschema_rs.Draft202012Validator(dict(schema))
    positives = valid_cases(schema, count, fixed_seed)
    if not positives:
        raise AssertionError(f"{tool}: the generator produced no valid arguments")
    bad = [p for p in positives if not validator.is_valid(p)]
    if bad:
        raise AssertionError(f"{tool}: the generator produced arguments its schema rejects: {bad[0]!r:.200}")
    cases = [Case(tool, p, True) for p in positives]
    variants = mutations(schema, positives[0])
    random.Random(fixed_seed).shuffle(variants)
    cases += [Case(tool, v, validator.is_valid(v)) for v in variants[: count * 2]]
    return cases


async def fuzz(url: str, token: str, count: int, fixed_seed: int, only: set[str] | None = None) -> Report:
    """Call every tool (or those in `only`) of the server at `url` with its cases over streamable HTTP
    and check each answer against the contract (codegen.fuzz.contract)."""
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    from generated.errors import CATALOGUE
    from generated.registry import SERVICES

    bindings = {t.name: t for svc in SERVICES.values() for t in svc.tools}
    report = Report()
    transport = StreamableHttpTransport(f"{url}/mcp", headers={"Authorization": f"Bearer {token}"})
    async with Client(transport, timeout=600) as client:
        for tool in await client.list_tools():
            if only and tool.name not in only:
                continue
            binding = bindings[tool.name]
            declared = {*binding.errors, *binding.policy.codes(), "RATE_LIMITED"}
            hang_s = (binding.policy.timeout_ms or 10_000) / 1000 + HANG_SLACK_S
            cases = cases_for(tool.name, tool.input_schema, count, fixed_seed)
            report.per_tool[tool.name] = (sum(c.valid for c in cases), sum(not c.valid for c in cases))
            for case in cases:
                report.calls += 1
                problem = await _call(client, case, tool.output_schema, declared, CATALOGUE, hang_s)
                if problem:
                    args = json.dumps(case.arguments, ensure_ascii=False)[:300]
                    kind = "valid" if case.valid else "invalid"
                    report.failures.append(f"{case.tool} ({kind} {args}): {problem}")
    return report


async def _call(
    client: Client[Any],
    case: Case,
    output_schema: Mapping[str, Any] | None,
    declared: set[str],
    catalogue: Mapping[str, Any],
    hang_s: float,
) -> str | None:
    for _attempt in range(4):
        try:
            async with asyncio.timeout(hang_s):
                result = await client.call_tool_mcp(case.tool, case.arguments)
        except TimeoutError:
            return f"no answer within {hang_s:.0f} s"
        except Exception as exc:
            return f"protocol exception {type(exc).__name__}: {str(exc)[:200]}"
        error = (result.meta or {}).get("io.kumitate/error") if result.is_error else None
        if isinstance(error, dict) and error.get("code") == "RATE_LIMITED":
            await asyncio.sleep(min(5.0, int(error.get("retry_after_ms", 1000)) / 1000))
            continue
        return check_result(case, result, output_schema, declared, catalogue)
    return None


def main(argv: list[str] | None = None) -> int:
    """`make fuzz` (MCP side) from the command line: serve the project, fuzz every tool, then walk the
    links (codegen.fuzz.stateful); the exit status says whether the contract held."""
    parser = argparse.ArgumentParser(prog="python -m codegen.fuzz.mcp", description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--max-examples", type=int, default=15, help="valid cases per tool (mutations: twice that)")
    parser.add_argument("--tool", action="append", help="fuzz only this tool (repeatable)")
    parser.add_argument("--sequences", type=int, default=400, help="stateful: sequences walking the links (0: none)")
    parser.add_argument("--steps", type=int, default=6, help="stateful: at most this many steps per sequence")
    args = parser.parse_args(argv)
    from codegen.testing import serve
    from kumitate.project import Project

    project = Project.discover()
    project.activate()
    with tempfile.TemporaryDirectory(prefix="kumitate-mcp-fuzz-") as tmp:
        tokens = '{"fuzz-token": {"principal": "fuzz", "scopes": ["*"]}}'
        with serve(project.root, Path(tmp) / "var", KUMITATE_TOKENS=tokens) as server:
            only = set(args.tool) if args.tool else None
            report = asyncio.run(fuzz(server.url, "fuzz-token", args.max_examples, args.seed, only))
            walked = stateful_fuzz(server.url, "fuzz-token", project.specs, args) if args.sequences else None
    for name, (valid, invalid) in sorted(report.per_tool.items()):
        print(f"{name}: {valid} valid, {invalid} schema-violating")
    for failure in report.failures:
        print("FAIL", failure)
    print(f"MCP fuzz: {report.calls} calls, {len(report.failures)} failures (seed {args.seed})")
    if walked is not None:
        slowest = sorted(walked.seconds.items(), key=lambda kv: -kv[1])[:6]
        print("stateful time per tool:", ", ".join(f"{name} {secs:.1f} s" for name, secs in slowest))
        if walked.failure:
            print("FAIL (stateful)", walked.failure)
        print(
            f"MCP stateful fuzz: {walked.sequences} sequences, {walked.multi_step} multi-step (longest"
            f" {walked.longest} calls), {walked.links_followed} links followed, {walked.calls} calls,"
            f" {walked.invariant_words}, {int(bool(walked.failure))} failures (seed {args.seed},"
            f" {walked.restarts} restarts)"
        )
    return 1 if report.failures or (walked is not None and walked.failure) else 0


def stateful_fuzz(url: str, token: str, spec_dir: Path, args: argparse.Namespace) -> Stats:
    """The link graph walked over MCP streamable HTTP (codegen.fuzz.stateful)."""
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    from codegen import specs
    from codegen.fuzz import stateful

    def connect() -> Client[StreamableHttpTransport]:
        return Client(StreamableHttpTransport(f"{url}/mcp", headers={"Authorization": f"Bearer {token}"}), timeout=600)

    return stateful.run(connect, stateful.Walk(specs.load(spec_dir), args.sequences, args.steps, args.seed))


if __name__ == "__main__":
    sys.exit(main())
