"""export: query results written to files under an opaque, expiring handle.

A handle is 32 random hex digits (`secrets.token_hex(16)`), never a path: the
caller fetches the bytes through the `export://{handle}` resource. On disk each
export is `<handle>.<ext>` plus a `<handle>.json` sidecar with its metadata; the
sidecar is written last (atomically), so a data file without one is an unfinished
export. Metadata lives on disk rather than in memory so handles survive a restart
and `safe_load_export` can open an export directly from the exports directory.

Expiry is checked on every access and by `sweep()`, which the service also runs
periodically.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb

from kumitate.context import commit_gate
from kumitate.errors import ToolError

from .source import wrap_query

HANDLE = re.compile(r"^[0-9a-f]{32}$")
FORMATS = {
    "parquet": ("parquet", "application/vnd.apache.parquet", "(FORMAT parquet, COMPRESSION zstd)"),
    "csv": ("csv", "text/csv", "(FORMAT csv, HEADER true)"),
}


def rfc3339(moment: datetime) -> str:
    """UTC, second precision, with a Z suffix."""
    return moment.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def parse_rfc3339(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def not_found(handle: str) -> ToolError:
    return ToolError(
        "No export with that handle: it never existed or has expired (exports live for "
        "a limited time). Run export again to get a fresh handle.",
        code="EXPORT_NOT_FOUND",
    )


class ExportStore:
    """Exports on disk with TTL; all methods are safe to call from several threads."""

    def __init__(self, directory: Path, *, clock: Callable[[], datetime], ttl_seconds: int = 3600):
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.clock = clock
        self.ttl_seconds = ttl_seconds

    def _paths(self, handle: str, ext: str) -> tuple[Path, Path]:
        return self.directory / f"{handle}.{ext}", self.directory / f"{handle}.json"

    def write(self, con: duckdb.DuckDBPyConnection, sql: str, *, fmt: str, max_rows: int) -> dict[str, Any]:
        """COPY at most max_rows + 1 rows; refuse (and delete) when the limit is crossed."""
        ext, mime, options = FORMATS[fmt]
        handle = secrets.token_hex(16)
        data_path, meta_path = self._paths(handle, ext)
        columns = [str(r[0]) for r in con.execute(f"DESCRIBE SELECT * FROM {wrap_query(sql)} AS q").fetchall()]
        target = str(data_path).replace("'", "''")
        copy = f"COPY (SELECT * FROM {wrap_query(sql)} AS q LIMIT {int(max_rows) + 1}) TO '{target}' {options}"
        try:
            rows = int(con.execute(copy).fetchall()[0][0])
        except BaseException:
            data_path.unlink(missing_ok=True)
            raise
        if rows > max_rows:
            data_path.unlink(missing_ok=True)
            exact = self._count(con, sql)
            size = f"{exact:,} rows" if exact is not None else f"more than {max_rows:,} rows"
            raise ToolError(
                f"The query returns {size}, over max_rows={max_rows:,}. Refine it with a WHERE clause "
                "(activity_id, a time range) or a LIMIT, or aggregate in SQL (GROUP BY) before exporting.",
                code="ROW_LIMIT_EXCEEDED",
                details={"max_rows": max_rows, "rows": exact},
            )
        now = self.clock()
        meta = {
            "handle": handle,
            "format": fmt,
            "mime_type": mime,
            "rows": rows,
            "size_bytes": data_path.stat().st_size,
            "columns": columns,
            "created_at": rfc3339(now),
            "expires_at": rfc3339(now + timedelta(seconds=self.ttl_seconds)),
        }
        tmp = meta_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(meta), encoding="utf-8")
        try:
            with commit_gate():
                os.replace(tmp, meta_path)  # the handle exists from here on
        except BaseException:
            tmp.unlink(missing_ok=True)
            data_path.unlink(missing_ok=True)
            raise
        return meta

    @staticmethod
    def _count(con: duckdb.DuckDBPyConnection, sql: str) -> int | None:
        """Exact row count for the error message; None if it cannot be had cheaply."""
        try:
            return int(con.execute(f"SELECT count(*) FROM {wrap_query(sql)} AS q").fetchall()[0][0])
        except duckdb.InterruptException:
            raise
        except duckdb.Error:
            return None

    def get(self, handle: str) -> dict[str, Any]:
        """Metadata of a live export; expired ones are deleted and reported as not found."""
        if not HANDLE.match(handle or ""):
            raise not_found(handle)
        meta_path = self.directory / f"{handle}.json"
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise not_found(handle) from None
        if parse_rfc3339(meta["expires_at"]) <= self.clock():
            self._remove(handle)
            raise not_found(handle)
        return dict(meta)

    def path(self, handle: str) -> Path:
        meta = self.get(handle)
        data_path, _ = self._paths(handle, FORMATS[meta["format"]][0])
        if not data_path.exists():
            raise not_found(handle)
        return data_path

    def read_bytes(self, handle: str) -> tuple[bytes, str]:
        """The file's bytes and its MIME type."""
        meta = self.get(handle)
        data_path, _ = self._paths(handle, FORMATS[meta["format"]][0])
        try:
            return data_path.read_bytes(), meta["mime_type"]
        except OSError:
            raise not_found(handle) from None

    def _remove(self, handle: str) -> None:
        for path in self.directory.glob(f"{handle}.*"):
            path.unlink(missing_ok=True)

    def sweep(self) -> int:
        """Delete expired exports and orphans older than the TTL; return how many handles went."""
        now = self.clock()
        removed = 0
        seen: set[str] = set()
        for path in self.directory.iterdir():
            handle = path.name.split(".", 1)[0]
            if handle in seen or not HANDLE.match(handle):
                continue
            seen.add(handle)
            meta_path = self.directory / f"{handle}.json"
            try:
                expires = parse_rfc3339(json.loads(meta_path.read_text(encoding="utf-8"))["expires_at"])
            except (OSError, ValueError, KeyError):
                age = now.timestamp() - path.stat().st_mtime
                if age <= self.ttl_seconds:
                    continue  # possibly an export being written right now
                expires = now
            if expires <= now:
                self._remove(handle)
                removed += 1
        return removed
