"""The process's log: one line per event on stderr, JSON by default, text for humans.

Every line has one format, whoever writes it: the pipeline's call lines (ids, outcome code and
duration, never the inputs), uvicorn's start-up and error lines, fastmcp's and the MCP SDK's.
KUMITATE_LOG_FORMAT=text gives `HH:MM:SS level event key=value ...` instead of JSON objects.
stdout is never used: it may be the MCP stdio channel.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, TextIO

from kumitate.observability.tracebacks import describe, redacted_traceback

LOGGER = logging.getLogger("kumitate.calls")
FOREIGN = ("uvicorn", "uvicorn.error", "fastmcp", "mcp", "docket", "sse_starlette")
"""Libraries' loggers whose lines join ours (uvicorn.access stays off: raw paths carry handles)."""
QUIET = {"mcp.server.streamable_http_manager": logging.WARNING}
"""Per-endpoint chatter: one "session manager started" line per MCP endpoint (seven of them);
the app logs one `mcp_endpoints_started` line instead."""


def _fields(record: logging.LogRecord) -> dict[str, object]:
    fields: dict[str, object] = dict(getattr(record, "fields", {}))
    if record.name != LOGGER.name:
        fields["logger"] = record.name
    if record.exc_info and record.exc_info[1] is not None and "traceback" not in fields:
        exc = record.exc_info[1]  # a library's exception: its type and frames, never its message
        fields |= {"error_type": describe(exc), "traceback": redacted_traceback(exc)}
    return fields


_ENCODE = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str).encode
"""One encoder for every line: `json.dumps` with options builds a new one per call."""


class JsonLineFormatter(logging.Formatter):
    """One JSON object per line (the default log format): time, level, event and the record's fields."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one JSON line: `ts`, `level`, `event`, then its fields."""
        payload: dict[str, object] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "event": record.getMessage(),
        }
        payload.update(_fields(record))
        return _ENCODE(payload)


class TextFormatter(logging.Formatter):
    """`12:00:01 info call service=stays tool=... duration_ms=3` (KUMITATE_LOG_FORMAT=text)."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one readable line: clock, level, event, then `key=value` fields sorted."""
        clock = time.strftime("%H:%M:%S", time.localtime(record.created))
        fields = _fields(record)
        trace = fields.pop("traceback", None)
        pairs = " ".join(f"{k}={v}" for k, v in sorted(fields.items()))
        line = f"{clock} {record.levelname.lower():<7} {record.getMessage()}" + (f" {pairs}" if pairs else "")
        return line + (f"\n{trace}" if isinstance(trace, str) else "")


FORMATTERS: dict[str, type[logging.Formatter]] = {"json": JsonLineFormatter, "text": TextFormatter}


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever sys.stderr is now (test capture, a redirected stream)."""

    @property  # type: ignore[override]
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass


def handler(fmt: str = "json") -> logging.Handler:
    """A stderr handler in the format `fmt` (json or text): what every logger of the process gets."""
    out = _StderrHandler()
    out.setFormatter(FORMATTERS[fmt]())
    return out


def configure(fmt: str = "json", level: str = "INFO") -> None:
    """Send the call log and the libraries' logs to stderr in one format (idempotent).

    fastmcp installs its own (rich) handlers when it is imported; they are replaced here, so it is
    imported first."""
    import fastmcp  # noqa: F401  (its import-time logging set-up must come before ours)

    for name in (LOGGER.name, *FOREIGN):
        logger = logging.getLogger(name)
        for old in logger.handlers[:]:
            logger.removeHandler(old)
        logger.addHandler(handler(fmt))
        logger.propagate = False
    LOGGER.setLevel(level)
    # No line carries the thread or process (the logging HOWTO's "Optimization"); `log_call` skips
    # the caller's file and line itself: finding them was a third of a call line's cost.
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    root = logging.getLogger()  # any other library (alembic, sqlalchemy, httpx): warnings and errors only
    for old in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(old)
    root.addHandler(handler(fmt))
    root.setLevel(logging.WARNING)
    for name, quiet in QUIET.items():
        logging.getLogger(name).setLevel(quiet)


def uvicorn_log_config(fmt: str, level: str = "info") -> dict[str, Any]:
    """uvicorn's `log_config`: its loggers write through our formatter (also in worker processes,
    which apply it themselves)."""
    formatter = {"()": f"{__name__}.{FORMATTERS[fmt].__name__}"}
    stderr = {"class": "logging.StreamHandler", "formatter": "kumitate", "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"kumitate": formatter},
        "handlers": {"stderr": stderr},
        "loggers": {
            "uvicorn": {"handlers": ["stderr"], "level": level.upper(), "propagate": False},
            "uvicorn.error": {"handlers": ["stderr"], "level": level.upper(), "propagate": False},
            "uvicorn.access": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
        },
    }


def log_call(**fields: object) -> None:
    """fields: service, tool, transport, run_id, trace_id, outcome, duration_ms (+ counts)."""
    level = logging.ERROR if fields.get("outcome") == "INTERNAL" else logging.INFO
    if LOGGER.isEnabledFor(level):  # the record made directly: no stack walk for a caller no line prints
        LOGGER.handle(
            LOGGER.makeRecord(LOGGER.name, level, "(unknown file)", 0, "call", (), None, extra={"fields": fields})
        )


def log_info(event: str, **fields: object) -> None:
    """Log an event at info level with its fields (ids, codes, durations; never tool input)."""
    LOGGER.info(event, extra={"fields": fields})


def log_event(event: str, **fields: object) -> None:
    """Log an event an operator should see (warning level) with its fields; never tool input."""
    LOGGER.warning(event, extra={"fields": fields})


def log_crash(event: str, exc: BaseException, **fields: object) -> None:
    """An unexpected exception: one JSON line whose `traceback` field names every frame
    and exception type, but no exception message (a message may quote a tool input)."""
    fields = {**fields, "error_type": describe(exc), "traceback": redacted_traceback(exc)}
    LOGGER.error(event, extra={"fields": fields})
