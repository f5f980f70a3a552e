"""Deprecation signals on every outcome of a deprecated tool, refusals included."""

from __future__ import annotations

from kumitate.policies import deprecation
from kumitate.steps import Call, CallNext, Outcome


class Deprecated:
    """RFC 9745/8594 headers (HTTP) and a warning (MCP `_meta`), computed once per tool."""

    def __init__(self, name: str, deprecated: deprecation.Deprecation) -> None:
        self.headers = deprecation.headers(deprecated)
        self.note = deprecation.warning(name, deprecated)

    async def __call__(self, call: Call, call_next: CallNext) -> Outcome:
        """Add the deprecation headers and warning to the outcome the rest of the chain gives."""
        outcome = await call_next(call)
        outcome.headers.update(self.headers)
        if self.note:
            outcome.warnings.append(self.note)
        return outcome
