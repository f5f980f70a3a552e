"""The one result path of tools and resources: the success envelope, then the output check."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import jsonschema_rs

from kumitate.bindings import ServiceBinding
from kumitate.context import CallContext
from kumitate.errors import ToolError
from kumitate.intake import first_error, pointer
from kumitate.observability import calllog, tracing
from kumitate.steps import Call, CallNext, Outcome

MAX_DROPPED_NULLS = 32
"""How many None values of optional properties one result may have left out (each costs a check)."""


class OutputCheck:
    """The output schema, compiled once: a result that breaks it is never sent (fail closed).

    One rule for None: an optional property whose schema refuses null, given None by the handler (a model
    field `X | None` set explicitly, or a dict value), is left out of the answer, as a field never set is.
    What is still invalid after that answers INTERNAL with the first offending path in its message (and the
    call log), never the data there."""

    def __init__(self, validator: jsonschema_rs.Draft202012Validator) -> None:
        self.validator = validator

    def violation(self, body: object) -> str | None:
        """The JSON pointer of the first place `body` breaks the output schema (after leaving out the None
        values of optional properties, as the answer would), or None when it holds."""
        err, dropped = first_error(self.validator, body), 0
        while err is not None and dropped < MAX_DROPPED_NULLS and _left_out(body, err):
            err, dropped = first_error(self.validator, body), dropped + 1
        return None if err is None else pointer(err.instance_path)

    def __call__(self, body: object, ctx: CallContext) -> None:
        """Raise INTERNAL when `body` does not match the output schema: an invalid result is never sent
        (the paths that fail go to the log)."""
        path = self.violation(body)
        if path is None:
            return
        calllog.log_event("output_invalid", service=ctx.service, tool=ctx.tool, run_id=ctx.run_id, paths=[path])
        raise ToolError(f"the tool produced an invalid result (at {path}); it was not sent", code="INTERNAL")


def _left_out(body: object, err: jsonschema_rs.ValidationError) -> bool:
    """Leave out the None that `err` is about when it is a property's value; whether there was one."""
    path = err.instance_path
    if err.instance is not None or not path or not isinstance(path[-1], str):
        return False
    *parents, name = path
    container = body
    for step in parents:  # the path the validator walked in `body`: an object's key or an array's index
        if isinstance(container, Mapping):
            container = container[step]
            continue
        if not (isinstance(container, Sequence) and isinstance(step, int)):
            return False
        container = container[step]
    if not isinstance(container, dict) or container.get(name, ...) is not None:
        return False
    del container[name]
    return True


class Result:
    """A JSON success body gets the service's envelope fields (run_id, trace_id, versions, as
    the service declares), then must match the output schema. Bytes (a resource's file) pass."""

    def __init__(self, service: ServiceBinding, check: OutputCheck | None) -> None:
        self.envelope = tuple(service.success_envelope)
        self.versions = {k: v for k, v in service.versions.items() if k in self.envelope}
        self.check = check

    async def __call__(self, call: Call, call_next: CallNext) -> Outcome:
        """Add the envelope fields the spec asks for to a JSON result and check it against the output schema."""
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
