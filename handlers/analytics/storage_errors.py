"""Disk and IO failures: one catalogued, retryable answer without engine internals.

A full disk, an exhausted quota or an IO error is the server's problem, not the
query's: the caller gets STORAGE_UNAVAILABLE (503, retryable, with Retry-After), never
SQL_ERROR with DuckDB's message (which names server paths). The operator finds the
cause in the log (error class and errno name only, no query text or path).
"""

from __future__ import annotations

import errno
import logging

import duckdb

from generated.errors import StorageUnavailableError
from kumitate import faults

log = logging.getLogger("kumitate.analytics")

RETRY_AFTER_MS = faults.STORAGE_RETRY_AFTER_MS
"""One storage code, one retry hint: the runtime's (kumitate.faults)."""


def is_storage_failure(exc: BaseException) -> bool:
    """True for out-of-space / IO failures of the disk (DuckDB or OS), False for anything the query caused.

    The runtime's rules (kumitate.faults: errno, SQLite codes, engine messages), plus DuckDB's
    IOException, which it raises for the disk failing under a query."""
    return isinstance(exc, duckdb.IOException) or faults.storage_failure(exc) is not None


def storage_unavailable(exc: BaseException | None = None) -> StorageUnavailableError:
    """The catalogued answer; logs the failure's class (and errno name) only."""
    if exc is not None:
        code = errno.errorcode.get(exc.errno or 0, "") if isinstance(exc, OSError) else ""
        log.warning("analytics storage failure class=%s errno=%s", type(exc).__name__, code or "-")
    return StorageUnavailableError(
        "The analytics service cannot write or read its storage right now (for example the disk is full). "
        "Nothing was saved; retry later.",
        details={"retry_after_ms": RETRY_AFTER_MS},
    )
