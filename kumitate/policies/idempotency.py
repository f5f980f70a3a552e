"""Idempotency keys on the storage layer: exactly once per key, across every instance.

Keyed by (tool, principal, key) with a fingerprint of the request. The same key with the
same request replays the first response; with a different request it is CONFLICT.

Exactly once, also across processes: the first call inserts a *claim* row (INSERT … ON
CONFLICT DO NOTHING, so the database picks one winner), runs, and turns the claim into the
stored response. A claim is a *lease* bound to the tool's deadline: it ends at the tool's
timeout plus LEASE_MARGIN_S, when the call has either answered or been timed out; a lease longer
than KUMITATE_IDEMPOTENCY_LEASE_MS (a tool without a timeout, a task) is written that long and
renewed every third of it while the call runs, so a dead instance's key is free within it. A repeat
that finds the claim waits up to WAIT_S for the response, then answers IN_PROGRESS (409,
retryable, Retry-After) instead of hanging. Once the lease has passed without a stored
response (its instance died mid-call), the next call deletes the stale claim and inserts its
own in one transaction: the database again picks exactly one winner, which runs the call.
A claim is identified by its `created_at` (the lease's token): a holder that outlived its
lease can neither store into nor release the claim that took over.

The store's rows commit outside the call's commit gate: claiming a key is bookkeeping, not the
call's change (through the gate it would count as "a commit has begun", and the call could no
longer be timed out at its deadline). They are bounded all the same (kumitate.storage.bounds.until):
the claim by the call's deadline (or the tool's, or KUMITATE_DB_TIMEOUT_MS, whichever is sooner),
storing the answer and releasing the key by what is left of it (at least the commit grace), so a
frozen database answers a keyed call the same retryable STORAGE_UNAVAILABLE as an unkeyed one.

Retryable failures (timeouts, upstream errors) are not stored: the claim is released and a
retry runs. A response that cannot be stored (disk full, database gone) is still returned:
the handler has run and may have committed, so failing the call would tell the client the
opposite of what happened. The failure is logged; a retry with that key runs again. A claim
that cannot be written is STORAGE_UNAVAILABLE (503, retryable): nothing has run.

The store itself (its SQL, on SQLAlchemy) is `idempotency_store.IdempotencyStore`, imported from there by
what opens one (the runtime, when a tool it serves declares `idempotency`): the constants and helpers here
are what the transports, the drain and the store read, without SQLAlchemy, and this module imports
nothing above it.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

from kumitate.errors import ToolError

MAX_KEY_LENGTH = 255
KEY_ARGUMENT = "idempotency_key"
"""MCP carries the key as this tool argument (HTTP as the Idempotency-Key header)."""
KEY_ARGUMENT_SCHEMA: dict[str, str | int] = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_KEY_LENGTH,
    "description": "Optional. Repeat a call with the same key to get the first result back instead of running it twice.",
}
UNBOUNDED_LEASE_S = 300.0
"""The longest a claim of a tool that declares no timeout (and no KUMITATE_MAX_TIMEOUT_MS caps it) holds its key:
what the drain waits for such a call. Held in renewed pieces (RENEWED_LEASE_S), not at once."""
RENEWED_LEASE_S = 30.0
"""KUMITATE_IDEMPOTENCY_LEASE_MS's default: a lease longer than this is written this long and renewed every
third of it while the call runs, so the key of an instance that died mid-call is free again within it (not
after the tool's whole deadline: 305 s for a tool without one), which a client retrying with Retry-After
can wait out. The default of KUMITATE_TASK_LEASE_MS too, whose task leases are renewed the same way."""
LEASE_MARGIN_S = 5.0
"""Added to the tool's timeout: the commit that may finish at the deadline, and clock skew between instances."""
WAIT_S = 0.5
"""How long a repeat waits for the first call's response before answering IN_PROGRESS."""
RETRY_AFTER_MAX_S = 2.0
"""The longest Retry-After of an IN_PROGRESS: the first call usually answers well before its lease ends."""
SWEEP_EVERY_S = 60.0

Ident = tuple[str, str, str]


def with_key_argument(input_schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's MCP input schema with the `idempotency_key` argument added: what `tools/list` shows for
    a tool whose policy has idempotency (the server builds it, codegen's docs and lockfile mirror it)."""
    return {**input_schema, "properties": {**input_schema.get("properties", {}), KEY_ARGUMENT: KEY_ARGUMENT_SCHEMA}}


def lease_s(timeout_s: float | None) -> float:
    """How long a claim holds its key: the tool's deadline (timeout_s) plus the margin."""
    return (timeout_s or UNBOUNDED_LEASE_S) + LEASE_MARGIN_S


def fingerprint(arguments: object) -> str:
    """A hash of the arguments (canonical JSON): the same key with other arguments is a CONFLICT."""
    canonical = json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(slots=True)
class Stored:
    """A finished call's answer kept under its idempotency key, replayed to a retry."""

    status: int
    body: Any


@dataclass(slots=True)
class _Seen:
    """What a claim attempt found: our own claim (`token`, its created_at), or another call's
    claim (with its `expires_at`) or stored response."""

    token: float | None
    fingerprint: str = ""
    stored: Stored | None = None
    expires_at: float = 0.0


def in_progress(remaining_s: float) -> ToolError:
    """The retryable IN_PROGRESS answer to a retry whose first call still holds the key's lease."""
    retry_ms = math.ceil(1000 * max(0.001, min(remaining_s, RETRY_AFTER_MAX_S)))
    return ToolError(
        "a call with this idempotency key is still running (or its instance stopped: its lease ends in "
        f"{math.ceil(max(remaining_s, 0))} s); retry with the same key after Retry-After",
        code="IN_PROGRESS",
        details={"retry_after_ms": retry_ms},
    )
