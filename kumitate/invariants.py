"""Invariants a service declares over its workflows, checked along the stateful fuzz's sequences.

A service lists them in `handlers/<service>/invariants.py` as `INVARIANTS`. Each is checked after a
successful call of one of its `tools` and may call tools itself (through `call`, the transport the fuzz
runs on) to look at the state; it returns what is wrong, or None. `memory` is one dict per sequence,
for invariants that compare a state before and after (the `before` hook runs ahead of the call).
Nothing here imports a transport: the same invariant runs over MCP and over HTTP.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Before", "Caller", "Check", "Invariant", "Step"]


@dataclass(frozen=True, slots=True)
class Step:
    """One call of a sequence: its tool, arguments, and either the structured result or an error code."""

    tool: str
    arguments: Mapping[str, Any]
    result: Mapping[str, Any] | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the call succeeded (no error code)."""
        return self.error is None


class Caller(Protocol):
    """How an invariant calls another tool of the service to check its claim (over the transport under test)."""

    def __call__(self, tool: str, arguments: Mapping[str, Any]) -> Step:
        """Call `tool` with `arguments` and return what it answered."""


Check = Callable[[Step, Caller, dict[str, Any]], str | None]
Before = Callable[[str, Mapping[str, Any], Caller, dict[str, Any]], None]


@dataclass(frozen=True, slots=True)
class Invariant:
    """A property of a workflow that must hold after a successful call of some tools, checked by the
    stateful fuzzer on both transports (e.g. what was stored can be read back)."""

    name: str
    description: str
    tools: frozenset[str]
    """Checked after a successful call of one of these."""
    check: Check
    before: Before | None = None
    """Runs ahead of every call of one of `tools` (successful or not), e.g. to note a state to compare."""
