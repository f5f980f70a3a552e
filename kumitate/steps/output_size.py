"""The output-size guard: OUTPUT_TOO_LARGE, or the largest list trimmed with a warning."""

from __future__ import annotations

from kumitate.policies import guard
from kumitate.steps import Call, CallNext, Outcome
from kumitate.steps.result import OutputCheck


class OutputSize:
    """Only in the chain of a tool with `max_output_bytes`; acts on the checked success body."""

    def __init__(self, name: str, limit: int, mode: str, warns_in_body: bool, check: OutputCheck | None) -> None:
        self.name = name
        self.limit = limit
        self.mode = mode
        self.warns_in_body = warns_in_body
        """The output schema has a `warnings` property: the trim warning goes there, else to `_meta`."""
        # room for the warning added below (an upper bound: the key may already be there)
        self.reserve = guard.size_of({"warnings": [guard.TRIM_WARNING.format(limit=limit)]}) if warns_in_body else 0
        self.check = check

    async def __call__(self, call: Call, call_next: CallNext) -> Outcome:
        """Hold a successful outcome's body to the size limit: truncated or refused as the spec's mode says,
        with the warning in the body where the body has room for one."""
        outcome = await call_next(call)
        if not outcome.ok:
            return outcome
        body = outcome.body
        in_body = self.warns_in_body and isinstance(body, dict)
        body, warning = guard.enforce(body, self.limit, self.mode, self.name, reserve=self.reserve if in_body else 0)
        if warning:
            if in_body:
                body["warnings"] = [*body.get("warnings", []), warning]
            else:
                call.ctx.warnings.append(warning)
            if self.check is not None:
                self.check(body, call.ctx)
        outcome.body = body
        return outcome
