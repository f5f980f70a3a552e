"""The one result path of tools and resources: the success envelope, then the output check."""

from __future__ import annotations

from typing import Any

from kumitate import calllog, tracing
from kumitate.bindings import ServiceBinding
from kumitate.context import CallContext
from kumitate.errors import ToolError
from kumitate.intake import first_error, pointer
from kumitate.steps import Call, CallNext, Outcome


class OutputCheck:
    """The output schema, compiled once: a result that breaks it is never sent (fail closed)."""

    def __init__(self, validator: Any) -> None:
        self.validator = validator

    def __call__(self, body: Any, ctx: CallContext) -> None:
        err = first_error(self.validator, body)
        if err is not None:  # the path only: the message may quote output data
            path = pointer(err.instance_path)
            calllog.log_event("output_invalid", service=ctx.service, tool=ctx.tool, run_id=ctx.run_id, paths=[path])
            raise ToolError("the tool produced an invalid result; it was not sent", code="INTERNAL")


class Result:
    """A JSON success body gets the service's envelope fields (run_id, trace_id, versions, as
    the service declares), then must match the output schema. Bytes (a resource's file) pass."""

    def __init__(self, service: ServiceBinding, check: OutputCheck | None) -> None:
        self.envelope = tuple(service.success_envelope)
        self.versions = {k: v for k, v in service.versions.items() if k in self.envelope}
        self.check = check

    async def __call__(self, call: Call, call_next: CallNext) -> Outcome:
        outcome = await call_next(call)
        body = outcome.body
        if isinstance(body, bytes):
            return outcome
        with tracing.stage("output"):
            if self.envelope and isinstance(body, dict):
                ctx = call.ctx
                values = {"run_id": ctx.run_id, "trace_id": ctx.trace_id, **self.versions}
                outcome.body = body = {**body, **{k: values[k] for k in self.envelope if k in values}}
            if self.check is not None:
                self.check(body, call.ctx)
        return outcome
