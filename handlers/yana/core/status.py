"""Health, version and yana's own call journal (the opt-in logs://today resource).

The journal holds one JSON line per call with ids, counts, durations and warning
codes only; never the user's text, filters or metadata (they may be personal).
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kumitate.observability.correlation import clean

SERVER_VERSION = "1.0.0"  # must equal specs/yana/service.yaml versions (a test checks)
POLICY_VERSION = "say-2025-09-23"
MAX_LOG_ENTRIES = 500


class Journal:
    """Append-only JSONL per UTC day under <service_dir>/logs/."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._lock = threading.Lock()

    def _path(self, day: str) -> Path:
        return self.directory / f"{day}.jsonl"

    def write(self, entry: dict[str, Any]) -> None:
        now = datetime.now(UTC)
        line = json.dumps({"ts": now.isoformat(timespec="milliseconds"), **entry}, ensure_ascii=False)
        with self._lock:
            self.directory.mkdir(parents=True, exist_ok=True)
            with self._path(now.date().isoformat()).open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")

    def today(self) -> dict[str, Any]:
        day = datetime.now(UTC).date().isoformat()
        path = self._path(day)
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        entries = [json.loads(x) for x in lines[-MAX_LOG_ENTRIES:] if x.strip()]
        return {"date": day, "count": len(lines), "entries": entries}


def caller_ids(context: Any) -> dict[str, str]:
    """The caller's ids from chat's `context`, for the journal: `session_id` and `caller_run_id`.

    The seed passes context.sessionId/runId through as they are; the call keeps its own run_id
    (X-Run-Id or MCP _meta), so the caller's run id is journaled beside it. Only ids that pass the
    correlation rule (kumitate.observability.correlation: [A-Za-z0-9._:@/+=-]{1,128}) are kept; anything else is
    left out rather than logged, since it could be arbitrary user text.
    """
    if not isinstance(context, dict):
        return {}
    found = {
        "session_id": clean(context.get("sessionId")) or clean(context.get("session_id")),
        "caller_run_id": clean(context.get("runId")) or clean(context.get("run_id")),
    }
    return {key: value for key, value in found.items() if value}
