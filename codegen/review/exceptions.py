"""Exception matching: which findings a reasoned entry of specs/review-exceptions.yaml accepts.

Only exceptions new in HEAD's file count; those already in BASE's file were written for earlier
changes, so they excuse nothing in this diff (the report leaves them out).
"""

from __future__ import annotations

from dataclasses import replace

from codegen.review.findings import Finding
from codegen.review.rules import Exception_


def apply_exceptions(findings: list[Finding], exceptions: list[Exception_]) -> tuple[list[Finding], list[Exception_]]:
    """Mark findings an exception accepts; return them and the exceptions that matched nothing."""
    used: set[int] = set()
    out = []
    for f in findings:
        for exc in exceptions:
            if exc.matches(f.rule, f.caused_by, f.service, f.subject, f.field):
                f = replace(f, excused=exc.reason)
                used.add(exc.index)
                break
        out.append(f)
    return out, [e for e in exceptions if e.index not in used]
