"""summarize_stays as a pure function over JSON-shaped data.

Input and output are exactly the dicts the spec's schemas describe
(specs/stays/types/stays.json); no I/O, no logging, no clock, so the same input
always gives the same output.
"""

from __future__ import annotations

from typing import Any

from handlers.stays.core.validate import INVALID_REF, ResultRow, check_records
from handlers.stays.core.wording import SUMMARY_LIMIT, aggregate_clause, join_clauses, sequence_clause

SEQUENCE = "sequence"
AGGREGATE = "aggregate"


def summarize(payload: dict[str, Any]) -> dict[str, Any]:
    """Validate every record, then summarise the valid ones in `sequence` or `aggregate` mode."""
    granularity = payload.get("granularity", "admin")
    mode = payload.get("mode", SEQUENCE)
    records = payload["stays"]

    stays, errors = check_records(records)

    if mode == AGGREGATE:
        results, summary = _aggregate(stays)
    else:
        results, summary = _sequence(stays)

    known = [d for s in stays if (d := s["duration_sec"]) is not None]
    return {
        "granularity": granularity,
        "mode": mode,
        "summary": summary,
        "results": results,
        "errors": errors,
        "stats": {
            "input_records": len(records),
            "valid_records": len(stays),
            "rejected_records": len(records) - len(stays),
            "dropped_refs": sum(1 for e in errors if e["reason"] == INVALID_REF),
            "unknown_duration_records": len(stays) - len(known),
            "total_duration_sec": sum(known),
        },
    }


def _sequence(stays: list[ResultRow]) -> tuple[list[dict[str, Any]], str]:
    """One result per valid record, in input order (the checker's rows as they are)."""
    results = stays
    clauses = [sequence_clause(r["name"], r["duration_sec"]) for r in results[:SUMMARY_LIMIT]]
    return results, join_clauses(clauses, len(results), "→", "件")


def _aggregate(stays: list[ResultRow]) -> tuple[list[dict[str, Any]], str]:
    """One result per code, first-seen order and name; refs are not carried (rows merge records).

    The sum covers the known durations; a code none of whose stays has a duration
    gets null, and a code with some unknown durations is flagged in the summary.
    """
    by_code: dict[str, dict[str, Any]] = {}
    partly_unknown: set[str] = set()
    for stay in stays:
        code, duration = stay["code"], stay["duration_sec"]
        row = by_code.get(code)
        if row is None:
            by_code[code] = {"code": code, "name": stay["name"], "duration_sec": duration}
        elif duration is None:
            if row["duration_sec"] is not None:
                partly_unknown.add(code)
        elif row["duration_sec"] is None:
            row["duration_sec"] = duration
            partly_unknown.add(code)
        else:
            row["duration_sec"] += duration
    results = list(by_code.values())
    clauses = [
        aggregate_clause(r["name"], r["duration_sec"], r["code"] in partly_unknown) for r in results[:SUMMARY_LIMIT]
    ]
    return results, join_clauses(clauses, len(results), "、", "地区")
