"""Where exceptions become outcomes: the catalogue's body, or INTERNAL with the traceback logged.

A code the catalogue does not hold (a misspelling mypy did not see: a code built at run time, or
a catalogue that lost an entry the runtime needs) is refused loudly: an `unknown_error_code` line
at ERROR naming the code, with its traceback, and INTERNAL on the wire; never a silent INTERNAL."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kumitate import faults
from kumitate.catalogue import CatalogueEntry
from kumitate.context import CallContext
from kumitate.errors import ToolError
from kumitate.observability import calllog
from kumitate.policies import discovery
from kumitate.steps import Call, CallNext, Outcome


class ErrorMap:
    """ToolError -> Outcome, by the error catalogue; one per pipeline."""

    def __init__(self, catalogue: Mapping[str, CatalogueEntry]) -> None:
        self.catalogue = catalogue

    def outcome(self, exc: ToolError, run_id: str, trace_id: str) -> Outcome:
        """The error outcome for `exc`, its body the catalogue's `{code, message, retryable}` and details;
        a code the catalogue does not hold becomes INTERNAL (and is logged), never an uncatalogued answer."""
        if exc.code != "STORAGE_UNAVAILABLE" and faults.storage_failure(exc) is not None:
            exc = faults.storage_error()  # a handler's own code for it (SQL_ERROR, NOT_FOUND) would mislead
        entry = self.catalogue.get(exc.code)
        if entry is None:
            calllog.log_crash("unknown_error_code", exc, code=exc.code, run_id=run_id)
            exc, entry = ToolError(f"internal error; quote run_id {run_id}"), self.catalogue["INTERNAL"]
        error: dict[str, Any] = {"code": entry.code, "message": exc.message, "retryable": entry.retryable}
        error.update(exc.details)
        headers = dict(exc.headers)
        if entry.code == "UNAUTHORIZED":  # RFC 6750 section 3: a 401 names its scheme
            headers.setdefault("WWW-Authenticate", discovery.www_authenticate({}, None))
        if "retry_after_ms" in exc.details:
            headers["Retry-After"] = str(max(1, -(-int(exc.details["retry_after_ms"]) // 1000)))
        return Outcome(
            ok=False,
            status=entry.status,
            code=entry.code,
            body={"error": error, "run_id": run_id, "trace_id": trace_id},
            run_id=run_id,
            trace_id=trace_id,
            retryable=entry.retryable,
            headers=headers,
        )

    @staticmethod
    def unexpected(exc: BaseException, ctx: CallContext) -> ToolError:
        """The last resort: an exception no handler caught. A storage failure or an input number
        out of machine range gets its catalogued code (faults.classify) and one log line;
        anything else is a bug: INTERNAL, logged with its traceback, never in the body."""
        known = faults.classify(exc)
        where = {"service": ctx.service, "tool": ctx.tool, "run_id": ctx.run_id}
        if known is not None:
            if known.code == "STORAGE_UNAVAILABLE":  # the operator's problem: say which layer failed
                calllog.log_event("storage_failed", **where, error_type=faults.describe(exc))
            return known
        calllog.log_crash("handler_crashed", exc, **where)
        return internal(ctx)


def internal(ctx: CallContext) -> ToolError:
    """The INTERNAL error a client gets for a fault of ours: only the run id, to quote in a report
    (the fault itself goes to the log, never to the client)."""
    return ToolError(f"internal error; quote run_id {ctx.run_id}", code="INTERNAL")


class Errors:
    """Turns what the rest of the chain raises into an error outcome, so the steps before it
    (deprecation headers, the idempotency store) see every call end as an Outcome."""

    def __init__(self, errors: ErrorMap) -> None:
        self.errors = errors

    async def __call__(self, call: Call, call_next: CallNext) -> Outcome:
        """Run the rest of the chain; whatever it raises comes back as an error outcome."""
        ctx = call.ctx
        try:
            return await call_next(call)
        except ToolError as exc:
            return self.errors.outcome(exc, ctx.run_id, ctx.trace_id)
        except Exception as exc:  # e.g. reading the body, the idempotency store's disk, a handler's bug
            return self.errors.outcome(self.errors.unexpected(exc, ctx), ctx.run_id, ctx.trace_id)
