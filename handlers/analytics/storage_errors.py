"""Disk and IO failures, and a damaged database file: catalogued answers without engine internals.

A full disk, an exhausted quota or an IO error is the server's problem, not the
query's: the caller gets STORAGE_UNAVAILABLE (503, retryable, with Retry-After), never
SQL_ERROR with DuckDB's message (which names server paths). The operator finds the
cause in the log (error class and errno name only, no query text or path).

A damaged activities.duckdb (truncated, a garbage header, a block failing its checksum) is
not a query's fault either, nor does it pass when retried: STORAGE_DAMAGED (500, not
retryable), naming the file and the kind of damage, and the service is marked damaged
(kumitate.faults.DAMAGE), so /readyz reports analytics not ready until the file is restored.
The first worker opens the file as the service starts (AnalyticsService._describe), so a
file damaged before start is reported before the first call.
"""

from __future__ import annotations

import errno
import logging
import re

import duckdb

from generated.errors import StorageDamagedError, StorageUnavailableError
from kumitate import faults
from kumitate.context import current_call

log = logging.getLogger("kumitate.analytics")

RETRY_AFTER_MS = faults.STORAGE_RETRY_AFTER_MS
"""One storage code, one retry hint: the runtime's (kumitate.faults)."""
SERVICE = "analytics"
"""The service a damage found outside a call (the start-up worker) is recorded for."""
_QUOTED_FILE = re.compile(r'file "([^"]+)"')


def is_storage_failure(exc: BaseException) -> bool:
    """True for out-of-space / IO failures of the disk (DuckDB or OS) and for a damaged database file,
    False for anything the query caused (`storage_unavailable` tells the two apart).

    The runtime's rules (kumitate.faults: errno, SQLite codes, engine messages), plus DuckDB's
    IOException, which it raises for the disk failing under a query."""
    return (
        isinstance(exc, duckdb.IOException)
        or faults.storage_failure(exc) is not None
        or faults.storage_damage(exc) is not None
    )


def storage_unavailable(exc: BaseException | None = None) -> StorageUnavailableError | StorageDamagedError:
    """The catalogued answer to a storage failure: STORAGE_DAMAGED for a damaged file, else
    STORAGE_UNAVAILABLE; logs the failure's class (and errno name) only."""
    damage = faults.storage_damage(exc) if exc is not None else None
    if damage is not None:
        return storage_damaged(damage)
    if exc is not None:
        code = errno.errorcode.get(exc.errno or 0, "") if isinstance(exc, OSError) else ""
        log.warning("analytics storage failure class=%s errno=%s", type(exc).__name__, code or "-")
    return StorageUnavailableError(
        "The analytics service cannot write or read its storage right now (for example the disk is full). "
        "Nothing was saved; retry later.",
        details={"retry_after_ms": RETRY_AFTER_MS},
    )


def storage_damaged(exc: BaseException) -> StorageDamagedError:
    """STORAGE_DAMAGED for DuckDB's damaged-file error `exc`, naming the file (not its directory); marks
    the service damaged."""
    found = _QUOTED_FILE.search(str(exc))
    name = found.group(1).rsplit("/", 1)[-1] if found else "its DuckDB database"
    what = f"{name} ({faults.damage_reason(exc)})"
    call = current_call()
    service = call.service if call is not None else SERVICE
    faults.DAMAGE.mark(service, what)
    error = faults.damaged_error(service, faults.DAMAGE.of(service) or what)
    return StorageDamagedError(error.message, details=error.details)


def worker_start_error(kind: str, message: str) -> Exception:
    """What a worker that could not open the database stands for (`kind`, `message`: its exception's class
    name and text): STORAGE_DAMAGED or STORAGE_UNAVAILABLE when the file is damaged or the disk failed,
    else a RuntimeError (a bug: INTERNAL)."""
    cause = getattr(duckdb, kind, None)
    if isinstance(cause, type) and issubclass(cause, duckdb.Error):
        exc = cause(message)
        if faults.storage_damage(exc) is not None or faults.storage_failure(exc) is not None:
            return storage_unavailable(exc)
    return RuntimeError(f"the analytics worker did not start: {kind}: {message}")
