"""What an exception that escaped a handler means for the caller, decided in one place.

Most such exceptions are bugs: INTERNAL, logged with their traceback. Two kinds are not:

- storage failures (disk full, read-only or failing disk) are the operator's, not the
  client's, and pass when space returns: STORAGE_UNAVAILABLE, retryable, with Retry-After.
  They are recognised wherever they surface: SQLite, DuckDB, the OS, and also under a
  catalogued error a handler raised while handling one (analytics reports a DuckDB failure
  as SQL_ERROR `from` it; a disk that fails there is not the query's fault).
- OverflowError: a number from the input does not fit the machine type it is stored or
  computed in (an id of 2^63 or more bound into SQLite). BAD_REQUEST, never a 500.

Tracebacks go to the log without exception messages: a message may quote a tool input.
"""

from __future__ import annotations

import errno
import sqlite3
import traceback
from collections.abc import Iterator

from kumitate.errors import ToolError

__all__ = [
    "ENGINE_STORAGE_TEXT",
    "SQLITE_STORAGE_CODES",
    "SQLITE_STORAGE_TEXT",
    "STORAGE_ERRNOS",
    "STORAGE_RETRY_AFTER_MS",
    "classify",
    "describe",
    "redacted_traceback",
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


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 16:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


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


def storage_failure(exc: BaseException) -> BaseException | None:
    """The storage failure at the root of `exc` (itself, its cause or context), if any."""
    return next((e for e in _chain(exc) if _is_storage(e)), None)


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
    """The catalogued error an unexpected exception stands for, or None for a bug (INTERNAL)."""
    if storage_failure(exc) is not None:
        return storage_error()
    if any(isinstance(e, OverflowError) for e in _chain(exc)):
        return ToolError("a number in the input is out of range (integers must fit in 64 bits)", code="BAD_REQUEST")
    return None


def describe(exc: BaseException) -> str:
    """`module.Type` of an exception, for a log line."""
    kind = type(exc)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def redacted_traceback(exc: BaseException) -> str:
    """The traceback of `exc` and the exceptions it chains, with every message left out."""
    parts: list[str] = []
    for current in reversed(list(_chain(exc))):
        if parts:
            parts.append("\nwhile handling or caused by the above:\n")
        parts.append("Traceback (most recent call last):\n")
        parts.extend(traceback.format_list(traceback.extract_tb(current.__traceback__)))
        parts.append(f"{describe(current)}: <message withheld; it may quote tool input>\n")
    return "".join(parts)
