"""stays service: summarize_stays turns GPS stay records into a Japanese travel summary.

The adapter is a thin shell around the pure domain in core/ (`core.summarize`): the spec
declares `handler_input: data`, so it receives the request's JSON data as validated
against the schema (no model is built for 100,000 records that the core judges one by
one anyway), calls the core, returns its result as JSON data (the spec declares `handler_output: data`:
the pipeline checks it against the output schema; a model of 100k entries would cost more than
the core), and logs
statistics only (counts and total duration; never refs, names or timestamps). It raises
nothing: a bad record is reported in `errors`, a bad request never reaches it.
The service keeps no state and reads no environment variable, so it has no store.py and no
settings.py.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from handlers.stays.core import summarize

if TYPE_CHECKING:  # annotations only: importing the pure core (handlers.stays.core) loads no runtime
    from kumitate.context import CallContext
    from kumitate.service import ServiceSetup

log = logging.getLogger("kumitate.stays")


class StaysHandlers:
    """One method per tool of specs/stays/."""

    def summarize_stays(self, input: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        """Summarise stay records; per-record problems come back in `errors`, never as a failure."""
        result = summarize(input)
        stats = result["stats"]
        log.info(
            "summarize_stays mode=%s input=%d valid=%d rejected=%d dropped_refs=%d unknown_duration=%d total_sec=%d",
            result["mode"],
            stats["input_records"],
            stats["valid_records"],
            stats["rejected_records"],
            stats["dropped_refs"],
            stats["unknown_duration_records"],
            stats["total_duration_sec"],
            extra={"run_id": ctx.run_id, "trace_id": ctx.trace_id},
        )
        return result


def create(setup: ServiceSetup) -> StaysHandlers:
    """Entry point the runtime calls once at start-up (stays needs nothing from `setup`)."""
    return StaysHandlers()
