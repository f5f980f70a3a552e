"""The pipeline's steps, one concern each, chained the way fastmcp chains its middleware.

A step is an awaitable `step(call, call_next) -> Outcome`: it may act before the rest of
the chain (refuse by raising a ToolError), call `call_next(call)`, and act on the outcome.
`compose` builds one chain per tool or resource, once, with only the steps its policy needs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Protocol

from kumitate.steps.base import Call, CallRequest, Outcome

CallNext = Callable[[Call], Awaitable[Outcome]]


class Step(Protocol):
    """What a step is to `compose` (module docstring): the pipeline's steps are plain classes with this
    `__call__`, built once per binding."""

    async def __call__(self, call: Call, call_next: CallNext) -> Outcome:
        """Act on `call` before and after `call_next`, or refuse it by raising a ToolError."""


def compose(steps: Sequence[Step], last: CallNext) -> CallNext:
    """`steps[0]` runs first; `last` (the handler's invocation) runs at the end of the chain."""
    chain = last
    for step in reversed(steps):
        chain = partial(step, call_next=chain)
    return chain


__all__ = ["Call", "CallNext", "CallRequest", "Outcome", "Step", "compose"]
