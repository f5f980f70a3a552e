"""What an exception that escaped a handler means for the caller, decided in one place.

Most such exceptions are bugs: INTERNAL, logged with their traceback. Three kinds are not:

- storage failures (disk full, read-only or failing disk) are the operator's, not the
  client's, and pass when space returns: STORAGE_UNAVAILABLE, retryable, with Retry-After.
  They are recognised wherever they surface: SQLite, DuckDB, the OS, and also under a
  catalogued error a handler raised while handling one (analytics reports a DuckDB failure
  as SQL_ERROR `from` it; a disk that fails there is not the query's fault).
- a damaged database file (SQLite "database disk image is malformed" or "file is not a
  database", DuckDB's "not a valid DuckDB database file" or a truncated file, PostgreSQL's
  data_corrupted): STORAGE_DAMAGED (500, not retryable: a retry fails the same way until the
  operator restores a backup), and the call's service is marked damaged in `DAMAGE`, so
  /readyz reports it not ready (kumitate.serving.health) while the other services stay ready.
- OverflowError: a number from the input does not fit the machine type it is stored or
  computed in (an id of 2^63 or more bound into SQLite). BAD_REQUEST, never a 500.

Tracebacks go to the log without exception messages: a message may quote a tool input.
"""

from __future__ import annotations

import errno
import sqlite3
import threading
from collections.abc import Iterable

from kumitate.context import current_call
from kumitate.errors import ToolError
from kumitate.observability.calllog import log_event
from kumitate.observability.tracebacks import chain, describe, redacted_traceback

__all__ = [
    "DAMAGE",
    "ENGINE_DAMAGE_TEXT",
    "ENGINE_STORAGE_TEXT",
    "SQLITE_DAMAGE_CODES",
    "SQLITE_DAMAGE_TEXT",
    "SQLITE_STORAGE_CODES",
    "SQLITE_STORAGE_TEXT",
    "STORAGE_ERRNOS",
    "STORAGE_RETRY_AFTER_MS",
    "Damage",
    "classify",
    "damage_reason",
    "damaged_error",
    "describe",
    "redacted_traceback",
    "storage_damage",
    "storage_error",
    "storage_failure",
    "storage_reason",
]

STORAGE_RETRY_AFTER_MS = 5000
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EROFS, errno.EIO, errno.EDQUOT, errno.EFBIG})
SQLITE_STORAGE_CODES = ("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_READONLY", "SQLITE_CANTOPEN")
SQLITE_STORAGE_TEXT = ("database or disk is full", "disk i/o error", "readonly database", "unable to open database")
ENGINE_STORAGE_TEXT = (
    "no space left on device",
    "read-only file system",
    "input/output error",
    "disk quota exceeded",
    "database or disk is full",
    "file too large",
    "could not write",
)
"""How DuckDB (and other engines that wrap the OS error in text) report a storage failure."""
SQLITE_DAMAGE_CODES = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
SQLITE_DAMAGE_TEXT = ("database disk image is malformed", "file is not a database")
ENGINE_DAMAGE_TEXT = (
    "is not a valid duckdb database file",
    "could not read enough bytes from file",
    "corrupt database file",
)
"""How DuckDB reports a damaged file: a garbage or empty header, a file shorter than its blocks (truncated),
a block whose checksum does not match."""
POSTGRES_DAMAGE_STATES = ("XX001", "XX002")
"""data_corrupted, index_corrupted."""


class Damage:
    """The services found with a damaged database file in this process (at a call, or by the start-up check),
    each with what is damaged, in words. Damage does not heal by itself: a mark stays until the process ends
    (the operator restores a backup, which needs a restart)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._found: dict[str, str] = {}

    def mark(self, service: str, what: str) -> None:
        """Record `service`'s damage (the first description found is kept: the start-up check names the table)."""
        with self._lock:
            if service in self._found:
                return
            self._found[service] = what
        log_event("storage_damaged", service=service, damaged=what)

    def of(self, service: str) -> str | None:
        """What is damaged for `service`, or None."""
        return self._found.get(service)

    def forget(self, services: Iterable[str]) -> None:
        """Clear the marks of `services`: a runtime starting over them checks afresh (tests build several
        runtimes in one process)."""
        with self._lock:
            for service in services:
                self._found.pop(service, None)


DAMAGE = Damage()
"""This process's damaged services (kumitate.serving.health reads it for /readyz)."""


def _is_storage(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS:
        return True
    if isinstance(exc, sqlite3.Error):
        name = getattr(exc, "sqlite_errorname", "") or ""
        if name.startswith(SQLITE_STORAGE_CODES):
            return True
        return any(text in str(exc).lower() for text in SQLITE_STORAGE_TEXT)
    if type(exc).__module__.startswith("duckdb") or type(exc).__module__.startswith("_duckdb"):
        return any(text in str(exc).lower() for text in ENGINE_STORAGE_TEXT)
    return False


def _is_damage(exc: BaseException) -> bool:
    if isinstance(exc, sqlite3.DatabaseError):
        name = getattr(exc, "sqlite_errorname", "") or ""
        return name.startswith(SQLITE_DAMAGE_CODES) or any(t in str(exc).lower() for t in SQLITE_DAMAGE_TEXT)
    module = type(exc).__module__
    if module.startswith(("duckdb", "_duckdb")):
        return any(text in str(exc).lower() for text in ENGINE_DAMAGE_TEXT)
    if module.startswith("psycopg"):
        return getattr(exc, "sqlstate", None) in POSTGRES_DAMAGE_STATES
    return False


def storage_damage(exc: BaseException) -> BaseException | None:
    """The damaged-file error at the root of `exc` (itself, its cause or context), if any. Not a storage
    failure (`storage_failure`): a full disk passes when space returns, a damaged file does not."""
    return next((e for e in chain(exc) if _is_damage(e)), None)


def damage_reason(exc: BaseException) -> str:
    """The engine and the kind of damage in a few words (`SQLite: database disk image is malformed`), no path."""
    text = str(exc).lower()
    if isinstance(exc, sqlite3.DatabaseError):
        return "SQLite: " + next((t for t in SQLITE_DAMAGE_TEXT if t in text), "damaged file")
    if type(exc).__module__.startswith("psycopg"):
        return "PostgreSQL: data corrupted"
    if "could not read enough bytes" in text:
        return "DuckDB: the file is shorter than its data (truncated)"
    if "corrupt database file" in text:
        return "DuckDB: a block does not match its checksum"
    return "DuckDB: not a valid DuckDB database file"


def damaged_error(service: str, what: str) -> ToolError:
    """The STORAGE_DAMAGED a call of `service` gets: what is damaged, and that a retry will not help."""
    return ToolError(
        f"the {service} service cannot read its data: {what}. Nothing was saved; a retry fails the same way until "
        "the operator restores the database from a backup (kumitate db restore)",
        code="STORAGE_DAMAGED",
        details={"damaged": what},
    )


def storage_failure(exc: BaseException) -> BaseException | None:
    """The storage failure at the root of `exc` (itself, its cause or context), if any."""
    return next((e for e in chain(exc) if _is_storage(e)), None)


def storage_reason(exc: BaseException) -> str:
    """What failed, in a few words (`No space left on device`), without the path or the engine's text."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc).lower()
    found = next((t for t in (*ENGINE_STORAGE_TEXT, *SQLITE_STORAGE_TEXT) if t in text), "storage failure")
    return found[0].upper() + found[1:]


def storage_error() -> ToolError:
    """The retryable 503 STORAGE_UNAVAILABLE a call gets when the disk or database failed under it."""
    return ToolError(
        "storage is unavailable (disk full, read-only or failing); nothing more was saved; retry later",
        code="STORAGE_UNAVAILABLE",
        details={"retry_after_ms": STORAGE_RETRY_AFTER_MS},
    )


def classify(exc: BaseException) -> ToolError | None:
    """The catalogued error an unexpected exception stands for, or None for a bug (INTERNAL). A damaged
    database file marks the current call's service damaged (`DAMAGE`) as it is classified."""
    damage = storage_damage(exc)
    if damage is not None:
        call = current_call()
        service = call.service if call is not None else "server"
        DAMAGE.mark(service, f"its database ({damage_reason(damage)})")
        return damaged_error(service, DAMAGE.of(service) or damage_reason(damage))
    if storage_failure(exc) is not None:
        return storage_error()
    if any(isinstance(e, OverflowError) for e in chain(exc)):
        return ToolError("a number in the input is out of range (integers must fit in 64 bits)", code="BAD_REQUEST")
    return None
