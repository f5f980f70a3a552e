"""Correlation ids: read from the caller (headers, W3C traceparent, MCP `_meta`) or minted.

Ids travel back to the client verbatim, so only short, printable values are
accepted; anything else is replaced by a fresh id rather than rejected.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Any

_SAFE_ID = re.compile(r"^[A-Za-z0-9._:@/+=-]{1,128}$")
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")

RUN_ID_KEYS = ("run_id", "runId", "x-run-id")
TRACE_ID_KEYS = ("trace_id", "traceId", "x-trace-id")


def new_id() -> str:
    return uuid.uuid4().hex


def clean(value: Any) -> str | None:
    """A caller-supplied id if it is safe to echo, else None."""
    if isinstance(value, str) and _SAFE_ID.match(value):
        return value
    return None


def trace_from_traceparent(value: str | None) -> str | None:
    if not value:
        return None
    match = _TRACEPARENT.match(value.strip().lower())
    if not match or match.group(1) == "0" * 32:
        return None
    return match.group(1)


def from_headers(headers: Mapping[str, str]) -> tuple[str, str]:
    """(run_id, trace_id) from lower-cased HTTP headers."""
    run_id = clean(headers.get("x-run-id")) or new_id()
    trace_id = clean(headers.get("x-trace-id")) or trace_from_traceparent(headers.get("traceparent")) or new_id()
    return run_id, trace_id


def from_meta(meta: Mapping[str, Any] | None, fallback: tuple[str, str] | None = None) -> tuple[str, str]:
    """(run_id, trace_id) from an MCP request's `_meta`, falling back to the HTTP ids."""
    meta = meta or {}
    run_id = next((v for k in RUN_ID_KEYS if (v := clean(meta.get(k)))), None)
    trace_id = next((v for k in TRACE_ID_KEYS if (v := clean(meta.get(k)))), None)
    trace_id = trace_id or trace_from_traceparent(
        meta.get("traceparent") if isinstance(meta.get("traceparent"), str) else None
    )
    fb_run, fb_trace = fallback or (None, None)
    return run_id or fb_run or new_id(), trace_id or fb_trace or new_id()
