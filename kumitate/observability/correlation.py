"""Correlation ids: read from the caller (headers, W3C traceparent, MCP `_meta`) or minted.

Ids travel back to the client verbatim, so only short, printable values are
accepted; anything else is replaced by a fresh id rather than rejected. A caller's
X-Run-Id is echoed as received when it is printable ASCII (spaces inside allowed) of at
most 128 characters, as the seed asks (受領した X-Run-Id をそのまま反射返送); when it is
not, the response says so in X-Run-Id-Replaced (see `run_id_replaced`), so a client can
tell "my id was replaced" from "my id was lost".
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Mapping

__all__ = [
    "RUN_ID_KEYS",
    "RUN_ID_REPLACED_HEADER",
    "TRACE_ID_KEYS",
    "clean",
    "clean_run_id",
    "from_headers",
    "from_meta",
    "new_id",
    "run_id_replaced",
    "trace_from_traceparent",
]

_SAFE_ID = re.compile(r"^[A-Za-z0-9._:@/+=-]{1,128}$")
_PRINTABLE_ID = re.compile(r"^[\x21-\x7e](?:[\x20-\x7e]{0,126}[\x21-\x7e])?$")
RUN_ID_REPLACED_HEADER = "X-Run-Id-Replaced"
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")

RUN_ID_KEYS = ("run_id", "runId", "x-run-id")
TRACE_ID_KEYS = ("trace_id", "traceId", "x-trace-id")


_IDS = random.Random()
"""Ids are for correlation, not secrets: a generator seeded from the OS once (and again in each forked
worker) mints them without a system call per id. `uuid4` read os.urandom twice per request, and each
read released the GIL to a worker thread on the busiest path of the server. Its own instance: a test
seeding `random` never makes two runs mint the same ids."""
os.register_at_fork(after_in_child=_IDS.seed)


def new_id() -> str:
    """32 lowercase hex digits (a W3C trace-id's form), never all zeros."""
    return f"{_IDS.getrandbits(128) or 1:032x}"


def clean(value: object) -> str | None:
    """A caller-supplied id if it is safe to echo, else None."""
    if isinstance(value, str) and _SAFE_ID.match(value):
        return value
    return None


def clean_run_id(value: object) -> str | None:
    """A caller's X-Run-Id if it can be echoed as received: printable ASCII, 1–128, no outer spaces."""
    if isinstance(value, str) and _PRINTABLE_ID.match(value):
        return value
    return None


def run_id_replaced(headers: Mapping[str, str]) -> bool:
    """True when the request carried an X-Run-Id that was not echoed (the response then sets
    RUN_ID_REPLACED_HEADER: "invalid"). An absent or empty header is not a replacement."""
    given = headers.get("x-run-id")
    return bool(given) and clean_run_id(given) is None


def trace_from_traceparent(value: str | None) -> str | None:
    """The trace id of a W3C `traceparent` header, or None when it is missing, malformed or all zeros."""
    if not value:
        return None
    match = _TRACEPARENT.match(value.strip().lower())
    if not match or match.group(1) == "0" * 32:
        return None
    return match.group(1)


def from_headers(headers: Mapping[str, str]) -> tuple[str, str]:
    """(run_id, trace_id) from lower-cased HTTP headers."""
    run_id = clean_run_id(headers.get("x-run-id")) or new_id()
    trace_id = clean(headers.get("x-trace-id")) or trace_from_traceparent(headers.get("traceparent")) or new_id()
    return run_id, trace_id


def from_meta(meta: Mapping[str, object] | None, fallback: tuple[str, str] | None = None) -> tuple[str, str]:
    """(run_id, trace_id) from an MCP request's `_meta`, falling back to the HTTP ids."""
    meta = meta or {}
    run_id = next((v for k in RUN_ID_KEYS if (v := clean(meta.get(k)))), None)
    trace_id = next((v for k in TRACE_ID_KEYS if (v := clean(meta.get(k)))), None)
    traceparent = meta.get("traceparent")
    trace_id = trace_id or trace_from_traceparent(traceparent if isinstance(traceparent, str) else None)
    fb_run, fb_trace = fallback or (None, None)
    return run_id or fb_run or new_id(), trace_id or fb_trace or new_id()
