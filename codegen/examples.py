"""Run a project's spec examples against any transport and compare with what the spec declares.

Used by this repository's end-to-end tests and by the tests `kumitate init` writes into a new
project: an example is a contract that every transport must keep.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from codegen.refs import JsonT
from codegen.specs import Example, SpecTree, ToolSpec

VOLATILE = frozenset({"run_id", "trace_id", "elapsed_ms", "uptime_s"})


@dataclass
class Result:
    """What a call of an example gave, whichever transport ran it: success or not, and the body."""

    ok: bool
    body: Any


Caller = Callable[[ToolSpec, Any], Awaitable[Result]]


def strip_volatile(value: JsonT) -> JsonT:
    """`value` without the fields that differ on every call (run and trace ids, durations), recursively."""
    if isinstance(value, dict):
        return {k: strip_volatile(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [strip_volatile(v) for v in value]
    return value


def is_subset(expected: object, actual: object) -> bool:
    """Whether `actual` holds `expected`: its keys (recursively) in objects, item by item in lists of the
    same length, equality for the rest. An example's output names what matters, the rest may vary."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and is_subset(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and all(map(is_subset, expected, actual))
    return bool(expected == actual)


def check(example: Example, result: Result) -> str | None:
    """None when the result is what the example declares, else a description of the difference."""
    if example.error is not None:
        code = (result.body or {}).get("error", {}).get("code") if isinstance(result.body, dict) else None
        if result.ok or code != example.error:
            return f"expected error {example.error}, got ok={result.ok} body={str(result.body)[:300]}"
        return None
    if not result.ok:
        return f"expected success, got {str(result.body)[:300]}"
    actual = strip_volatile(result.body)
    expected = strip_volatile(example.output)
    good = is_subset(expected, actual) if example.match == "subset" else actual == expected
    return None if good else f"expected {str(expected)[:400]}\n   got {str(actual)[:400]}"


def all_examples(tree: SpecTree) -> list[tuple[ToolSpec, Example]]:
    """Examples of the services the server runs by default (the drift check keeps that equal to
    specs/; an `opt_in` service's examples run where it is served, tests/conformance), in the order they
    run: a service's examples share its server and data, its `examples_order` tools first, then by name."""
    from generated.registry import SERVICES

    served = {name for name, svc in SERVICES.items() if not svc.opt_in}
    return [(tool, ex) for tool in tree.tools_in_example_order() if tool.service in served for ex in tool.examples]


async def run_all(tree: SpecTree, call: Caller) -> tuple[list[str], dict[str, Any]]:
    """Run every example through `call`; return the failures and the bodies by example id."""
    failures, bodies = [], {}
    for tool, example in all_examples(tree):
        result = await call(tool, example.input)
        problem = check(example, result)
        key = f"{tool.service}.{tool.name}:{example.name}"
        bodies[key] = strip_volatile(result.body)
        if problem:
            failures.append(f"{key}: {problem}")
    return failures, bodies
