"""One JSON log line per call: ids, outcome code and duration, never the inputs."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

from kumitate.faults import describe, redacted_traceback

LOGGER = logging.getLogger("kumitate.calls")
_ENCODE = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode
"""One encoder for every line: `json.dumps` with options builds a new one per call."""


class JsonLineFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "event": record.getMessage(),
        }
        payload.update(getattr(record, "fields", {}))
        return _ENCODE(payload)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever sys.stderr is now (test capture, a redirected stream)."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def configure(level: str = "INFO") -> None:
    """Send call logs to stderr as JSON lines (stdout may be the MCP stdio channel)."""
    if any(isinstance(h.formatter, JsonLineFormatter) for h in LOGGER.handlers):
        return
    handler = _StderrHandler()
    handler.setFormatter(JsonLineFormatter())
    LOGGER.addHandler(handler)
    LOGGER.setLevel(level)
    LOGGER.propagate = False


def log_call(**fields: Any) -> None:
    """fields: service, tool, transport, run_id, trace_id, outcome, duration_ms (+ counts)."""
    level = logging.ERROR if fields.get("outcome") == "INTERNAL" else logging.INFO
    LOGGER.log(level, "call", extra={"fields": fields})


def log_event(event: str, **fields: Any) -> None:
    LOGGER.warning(event, extra={"fields": fields})


def log_crash(event: str, exc: BaseException, **fields: Any) -> None:
    """An unexpected exception: one JSON line whose `traceback` field names every frame
    and exception type, but no exception message (a message may quote a tool input)."""
    fields = {**fields, "error_type": describe(exc), "traceback": redacted_traceback(exc)}
    LOGGER.error(event, extra={"fields": fields})
