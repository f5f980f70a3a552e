"""Every phrase the attendance tests, docs, spec examples and the seed use, parsed as it was: a golden file.

The rule-based grammar is order-dependent; this pins what `parse_attendance_intent` makes of ~1,000
requests (each phrase against the six-person TEAM and five anonymous users, plus every request the
attendance tests sent) so a refactor of the grammar cannot change a reading unnoticed. The file
keeps what the grammar decides (type, rule, excluded, sets, policy, confidence, questions, missing,
pattern), not the side channels (slot hint, share intent) that hints.py owns.

After an intended change of the grammar's behaviour:
`UPDATE_GOLDEN=1 /work/main/.venv/bin/python -m pytest tests/attendance/test_grammar_golden.py`, then
review the diff of tests/attendance/golden/grammar.jsonl.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from handlers.attendance.core.parse import parse_attendance_intent
from kumitate.errors import ToolError
from tests.attendance.conftest import TEAM, users

GOLDEN = Path(__file__).parent / "golden" / "grammar.jsonl"
DIRECTORIES: dict[str, list[dict[str, Any]]] = {"TEAM": TEAM, "FIVE": users(5)}


def reading(request: dict[str, Any]) -> dict[str, Any]:
    """What the grammar made of one request (or the error it raised)."""
    try:
        out = parse_attendance_intent(request)
    except ToolError as exc:
        return {"error": exc.code, "message": exc.message}
    rule = out["attendance_rule"]
    return {
        "type": rule["type"],
        "rule": rule["rule"],
        "excluded": rule["invitee_scope"]["exclude_invitee_keys"],
        "policy": rule["finalize_policy"],
        "sets": out["invitee_sets"],
        "confidence": out["confidence"],
        "questions": out["needs_clarification"],
        "missing": out["missing"],
        "pattern": out["matched_pattern"],
    }


def _request(case: dict[str, Any]) -> dict[str, Any]:
    invitees = case.get("invitees") or DIRECTORIES[case["directory"]]
    return {"text": case["text"], "invitees": invitees, "defaults": case.get("defaults", {})}


def _cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line]


def test_every_golden_phrase_parses_as_recorded() -> None:
    cases = _cases()
    assert len(cases) > 500
    if os.environ.get("UPDATE_GOLDEN"):
        for case in cases:
            case["expected"] = reading(_request(case))
        GOLDEN.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), encoding="utf-8")
    changed = [
        (case["text"], case.get("directory", "inline"), got)
        for case in cases
        if (got := reading(_request(case))) != case["expected"]
    ]
    assert not changed, f"{len(changed)} readings changed; first: {changed[:3]}"
