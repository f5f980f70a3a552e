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

from kumitate.errors import ToolError

log = logging.getLogger("kumitate.analytics")

RETRY_AFTER_MS = 30_000
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EFBIG})
# DuckDB reports OS failures as text inside IOException (or, for some paths, a plain Error).
STORAGE_PHRASES = (
    "no space left on device",
    "disk quota exceeded",
    "input/output error",
    "read-only file system",
    "file too large",
    "could not write",
    "could not write all bytes",
)


def is_storage_failure(exc: BaseException) -> bool:
    """True for out-of-space / IO failures of the disk (DuckDB or OS), False for anything the query caused."""
    if isinstance(exc, OSError):
        return exc.errno in STORAGE_ERRNOS
    if isinstance(exc, duckdb.IOException):
        return True
    if isinstance(exc, duckdb.Error):
        text = str(exc).lower()
        return any(phrase in text for phrase in STORAGE_PHRASES)
    return False


def storage_unavailable(exc: BaseException | None = None) -> ToolError:
    """The catalogued answer; logs the failure's class (and errno name) only."""
    if exc is not None:
        code = errno.errorcode.get(exc.errno or 0, "") if isinstance(exc, OSError) else ""
        log.warning("analytics storage failure class=%s errno=%s", type(exc).__name__, code or "-")
    return ToolError(
        "The analytics service cannot write or read its storage right now (for example the disk is full). "
        "Nothing was saved; retry later.",
        code="STORAGE_UNAVAILABLE",
        details={"retry_after_ms": RETRY_AFTER_MS},
    )
