"""The data directory: usable at start-up, and still writable while serving.

`kumitate serve` and `kumitate mcp --stdio` refuse to start on a directory they cannot create or
write, with one line naming the path and the reason (no traceback). /healthz writes a small probe
file on each call, so a full, read-only or failing disk shows there (503) and clears when it passes.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from pathlib import Path

from kumitate import faults

__all__ = ["PROBE_BYTES", "PROBE_NAME", "DataDirError", "check", "probe", "reason", "startup_error"]

PROBE_NAME = ".kumitate-health-probe"
PROBE_BYTES = b"k" * 4096
"""One page: a disk with room for a new inode but no data block still counts as full."""


class DataDirError(RuntimeError):
    """The data directory cannot be used; the message is one line for the operator."""


def reason(exc: BaseException) -> str:
    """`No space left on device`, `Read-only file system`... without the errno number or the path."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def probe(path: Path) -> str | None:
    """Write, sync and remove a small file under `path`; the failure's reason, or None if writable.

    Each probe gets its own file name, so instances sharing a data directory (and concurrent
    /healthz calls) never remove one another's probe mid-check.
    """
    target: Path | None = None
    try:
        fd, name = tempfile.mkstemp(prefix=PROBE_NAME + ".", dir=path)
        target = Path(name)
        try:
            os.write(fd, PROBE_BYTES)
            os.fsync(fd)
        finally:
            os.close(fd)
        target.unlink()
    except OSError as exc:
        if target is not None:
            with contextlib.suppress(OSError):
                target.unlink(missing_ok=True)
        return reason(exc)
    return None


def check(path: Path) -> None:
    """Raise DataDirError unless `path` exists (or can be created) and can be written."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataDirError(f"cannot use the data directory {path}: {reason(exc)}") from None
    problem = probe(path)
    if problem is not None:
        raise DataDirError(f"cannot use the data directory {path}: {problem}")


def startup_error(path: Path, exc: BaseException) -> str | None:
    """The one-line message for a start-up failure caused by storage, or None if it is something else.

    A disk that fills during the first start (the sample import writes more than the probe) fails
    in whichever engine was writing: SQLite, DuckDB (whose errors are not OSErrors) or the OS."""
    if isinstance(exc, DataDirError):
        return str(exc)
    if isinstance(exc, OSError) and exc.filename:
        return f"cannot start: {exc.filename}: {reason(exc)}"
    if isinstance(exc, OSError | sqlite3.Error):
        return f"cannot use the data directory {path}: {reason(exc)}"
    failure = faults.storage_failure(exc)
    if failure is not None:
        return f"cannot use the data directory {path}: {faults.storage_reason(failure)}"
    return None
