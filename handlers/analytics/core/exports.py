"""export: query results written to files under an opaque, expiring handle.

A handle is 32 random hex digits (`secrets.token_hex(16)`), never a path: the
caller fetches the bytes through the `export://{handle}` resource. The files live in
the export directory (KUMITATE_EXPORT_DIR: a volume every instance shares), each
export as `<handle>.<ext>` plus a `<handle>.json` descriptor for readers of the
directory (`safe_load_export`'s local mode). What the server trusts is the handle
registry in the database (store.ExportRegistry): the handle exists once its row is
published there, so every instance serves it, and it survives restarts.

Expiry is checked on every access and by `sweep()`, which the service also runs
periodically; files without a registered handle (a crash mid-export) go after the TTL.

Each export belongs to the principal that created it (`owner` in the registry): only
that principal, or one holding scope "admin" or "*", can read it; anyone else gets
EXPORT_NOT_FOUND, as for a handle that never existed. Bytes on disk are bounded per
export and per principal (ExportQuota): the running COPY is watched and interrupted as
soon as its file passes what is left, and the partial file is deleted.

This module is the only one that knows how handles are stored (the sidecar files);
the rest of the service goes through ExportStore.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from generated.errors import ExportNotFoundError, ExportQuotaExceededError, RowLimitExceededError
from kumitate.context import Principal, progress
from kumitate.errors import ToolError
from kumitate.storage.carry import UNOWNED, announce

from ..store import ExportRegistry, ExportRow
from .connection import SqlConnection, WorkerConnection
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


def epoch_rfc3339(seconds: float) -> str:
    return rfc3339(datetime.fromtimestamp(seconds, UTC))


READ_ALL_SCOPES = frozenset({"admin", "*"})
Watch = Callable[[Callable[[], ToolError | None]], AbstractContextManager[None]]


def reads_all(principal: Principal) -> bool:
    """A principal holding scope "admin" or "*" may read every principal's exports."""
    return bool(principal.scopes & READ_ALL_SCOPES)


@dataclass(frozen=True, slots=True)
class ExportQuota:
    """Bytes on disk: at most `per_export` for one file, `per_principal` for one principal's live exports."""

    per_export: int = 100_000_000
    per_principal: int = 500_000_000


def _mb(n: int) -> str:
    return f"{n / 1_000_000:,.1f} MB"


def quota_exceeded(quota: ExportQuota, used: int, allowed: int) -> ExportQuotaExceededError:
    """EXPORT_QUOTA_EXCEEDED naming the limit that bit (one export, or what is left of the principal's)."""
    if allowed >= quota.per_export:
        return ExportQuotaExceededError(
            f"The export would be larger than {_mb(quota.per_export)}, the limit for one export; nothing was "
            "stored. Select fewer columns or rows (WHERE activity_id / a time range), aggregate in SQL, or use "
            "format parquet (compressed).",
            details={"limit_bytes": quota.per_export, "scope": "export"},
        )
    return ExportQuotaExceededError(
        f"Your live exports use {_mb(used)} of your {_mb(quota.per_principal)} on disk, and this export needs "
        f"more than the {_mb(max(allowed, 0))} left; nothing was stored. Exports are deleted when they expire "
        "(see expires_at); export less (fewer columns or rows, parquet) or retry after older exports expire.",
        details={"limit_bytes": quota.per_principal, "used_bytes": used, "scope": "principal"},
    )


def not_found(handle: str) -> ExportNotFoundError:
    return ExportNotFoundError(
        "No export with that handle: it never existed or has expired (exports live for "
        "a limited time). Run export again to get a fresh handle."
    )


class ExportStore:
    """Export files in the shared directory, their handles in the registry; safe from several threads."""

    def __init__(
        self,
        directory: Path,
        registry: ExportRegistry,
        *,
        clock: Callable[[], datetime],
        ttl_seconds: int = 3600,
        quota: ExportQuota | None = None,
        lease_seconds: int = 900,
    ):
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.registry = registry
        self.clock = clock
        self.ttl_seconds = ttl_seconds
        self.quota = quota or ExportQuota()
        self.lease_seconds = lease_seconds
        """How long an export in progress holds its bytes if its instance dies before releasing them."""

    def _now(self) -> float:
        return self.clock().timestamp()

    def usage(self, owner: str) -> int:
        """Bytes of `owner`'s live exports, plus what its exports in progress (on any instance) hold."""
        return self.registry.usage(owner, self._now())

    def _paths(self, handle: str, ext: str) -> tuple[Path, Path]:
        return self.directory / f"{handle}.{ext}", self.directory / f"{handle}.json"

    def write(
        self,
        con: WorkerConnection,
        sql: str,
        *,
        fmt: str,
        max_rows: int,
        owner: str,
        watch: Watch | None = None,
        columns: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """COPY at most max_rows + 1 rows within the byte quota; refuse (and delete) when a limit is crossed.

        `watch(check)` runs the COPY while something polls `check` and interrupts the
        query when it returns an error (QueryRunner.guarded); without it the size is
        checked only once the file is complete. `columns`, when the caller knows them
        (checked.py), spares the worker the DESCRIBE.
        """
        ext, _, options = FORMATS[fmt]
        handle = secrets.token_hex(16)
        data_path, meta_path = self._paths(handle, ext)
        target = str(data_path).replace("'", "''")
        copy = f"COPY (SELECT * FROM {wrap_query(sql)} AS q LIMIT {int(max_rows) + 1}) TO '{target}' {options}"
        now = self._now()
        used, allowed = self.registry.reserve(
            handle,
            owner,
            now=now,
            lease_until=now + self.lease_seconds,
            per_export=self.quota.per_export,
            per_principal=self.quota.per_principal,
        )
        if allowed <= 0:
            raise quota_exceeded(self.quota, used, allowed)

        def too_large() -> ToolError | None:
            try:
                size = data_path.stat().st_size
            except OSError:
                return None
            return quota_exceeded(self.quota, used, allowed) if size > allowed else None

        try:
            with watch(too_large) if watch else nullcontext():
                if columns is None:
                    describe = f"DESCRIBE SELECT * FROM {wrap_query(sql)} AS q"
                    described, copied = con.execute_all([describe, copy])  # one round trip to the worker
                    columns = [str(r[0]) for r in described]
                else:
                    copied = con.execute(copy).fetchall()
            rows = int(copied[0][0])
            error = too_large()
            if error:
                raise error
            progress(2, 3, "publishing the export")
            return self._commit(con, sql, handle, fmt, rows, max_rows, list(columns), owner)
        except BaseException:
            data_path.unlink(missing_ok=True)
            meta_path.unlink(missing_ok=True)
            # Give the reservation back; if the database is gone too, its lease runs out instead, and the
            # caller hears about the first failure, not this one.
            with suppress(ToolError):
                self.registry.remove(handle)
            raise

    def _commit(
        self,
        con: SqlConnection,
        sql: str,
        handle: str,
        fmt: str,
        rows: int,
        max_rows: int,
        columns: list[str],
        owner: str,
    ) -> dict[str, Any]:
        """Check the row limit, then publish the handle (from that commit on, every instance serves it)."""
        ext, mime, _ = FORMATS[fmt]
        data_path, meta_path = self._paths(handle, ext)
        if rows > max_rows:
            data_path.unlink(missing_ok=True)
            exact = self._count(con, sql)
            size = f"{exact:,} rows" if exact is not None else f"more than {max_rows:,} rows"
            raise RowLimitExceededError(
                f"The query returns {size}, over max_rows={max_rows:,}. Refine it with a WHERE clause "
                "(activity_id, a time range) or a LIMIT, or aggregate in SQL (GROUP BY) before exporting.",
                details={"max_rows": max_rows, "rows": exact},
            )
        now = self._now()
        row = ExportRow(
            handle=handle,
            owner=owner,
            format=fmt,
            mime_type=mime,
            rows=rows,
            size_bytes=data_path.stat().st_size,
            columns=columns,
            created_at=now,
            expires_at=now + self.ttl_seconds,
        )
        meta = _public(row)
        tmp = meta_path.with_suffix(".json.tmp")
        try:
            tmp.write_text(json.dumps(meta), encoding="utf-8")
            os.replace(tmp, meta_path)
        finally:
            tmp.unlink(missing_ok=True)
        self.registry.publish(row)  # under the call's commit gate: the handle exists from here on
        return meta

    @staticmethod
    def _count(con: SqlConnection, sql: str) -> int | None:
        """Exact row count for the error message; None if it cannot be had cheaply."""
        try:
            return int(con.execute(f"SELECT count(*) FROM {wrap_query(sql)} AS q").fetchall()[0][0])
        except duckdb.InterruptException:
            raise
        except duckdb.Error:
            return None

    def handles(self, principal: Principal, prefix: str = "", limit: int = 100) -> list[str]:
        """Live handles the principal may read that start with `prefix`, newest first (argument completion)."""
        if not HANDLE.match(prefix.ljust(32, "0")):  # a handle is hex: nothing else can start one
            return []
        found: list[tuple[str, str]] = []
        now = self.clock()
        for meta_path in self.directory.glob(f"{prefix}*.json"):
            try:
                meta = json.loads(meta_path.read_text(encoding="utf-8"))
                alive = parse_rfc3339(meta["expires_at"]) > now
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if alive and (meta.get("owner") == principal.id or reads_all(principal)):
                found.append((str(meta["expires_at"]), meta_path.stem))
        return [handle for _, handle in sorted(found, reverse=True)[:limit]]

    def readable(self, handle: str, principal: Principal) -> dict[str, Any]:
        """Metadata of a live export the principal may read; expired ones are deleted and reported as not found.

        Another principal's export is reported as not found too: a handle reveals nothing
        to someone who may not read it.
        """
        if not HANDLE.match(handle or ""):
            raise not_found(handle)
        row = self.registry.published(handle)
        if row is None:
            raise not_found(handle)
        if row.expires_at <= self._now():
            self._remove(handle)
            raise not_found(handle)
        if row.owner != principal.id and not reads_all(principal):
            raise not_found(handle)
        return _public(row)

    def read_bytes(self, handle: str, principal: Principal) -> tuple[bytes, str]:
        """The file's bytes and its MIME type."""
        meta = self.readable(handle, principal)
        data_path, _ = self._paths(handle, FORMATS[meta["format"]][0])
        try:
            return data_path.read_bytes(), meta["mime_type"]
        except OSError:
            raise not_found(handle) from None

    def _remove(self, handle: str) -> None:
        """Files first, then the row: a row without files reads as not found; files without a row are swept."""
        for path in self.directory.glob(f"{handle}.*"):
            path.unlink(missing_ok=True)
        self.registry.remove(handle)

    def adopt_unowned(self) -> int:
        """Register the unexpired exports of a release before the registry (a `<handle>.json` without an owner),
        owned by UNOWNED (kumitate.storage.carry), so their handles keep working; returns how many."""
        now = self._now()
        adopted = 0
        for meta_path in sorted(self.directory.glob("*.json")):
            try:
                meta = json.loads(meta_path.read_text(encoding="utf-8"))
                if "owner" in meta or not HANDLE.match(meta_path.stem):
                    continue
                ext, mime, _ = FORMATS[meta["format"]]
                data_path = self.directory / f"{meta_path.stem}.{ext}"
                row = ExportRow(
                    handle=meta_path.stem,
                    owner=UNOWNED,
                    format=meta["format"],
                    mime_type=mime,
                    rows=int(meta["rows"]),
                    size_bytes=data_path.stat().st_size,
                    columns=[str(c) for c in meta["columns"]],
                    created_at=parse_rfc3339(meta["created_at"]).timestamp(),
                    expires_at=parse_rfc3339(meta["expires_at"]).timestamp(),
                )
            except (OSError, ValueError, KeyError, TypeError):
                continue  # unreadable, or its data file is gone: the sweep removes what is left
            if row.expires_at <= now or not self.registry.adopt(row):
                continue
            adopted += 1
            tmp = meta_path.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(_public(row)), encoding="utf-8")
            os.replace(tmp, meta_path)
        if adopted:
            announce(
                "analytics",
                f"registered {adopted} unexpired export handles of an earlier release from {self.directory}"
                " (owner (unowned): readable by principals with scope admin or *, every caller when"
                " authentication is off); their files stay where they are",
                rows=adopted,
            )
        return adopted

    def sweep(self) -> int:
        """Delete expired exports (and lapsed reservations), then files no handle owns that are older than
        the TTL (an export whose instance died while writing); return how many handles went."""
        expired = self.registry.expired(self._now())
        for handle in expired:
            self._remove(handle)
        known = self.registry.handles()
        cutoff = self._now() - self.ttl_seconds
        for path in self.directory.iterdir():
            handle = path.name.split(".", 1)[0]
            if not HANDLE.match(handle) or handle in known:
                continue
            try:
                if path.stat().st_mtime < cutoff:
                    path.unlink(missing_ok=True)
            except OSError:
                continue
        return len(expired)


_ROW_FIELDS = tuple(f.name for f in fields(ExportRow))


def _public(row: ExportRow) -> dict[str, Any]:
    """The export's metadata as the service reports it (and as the directory's descriptor holds it)."""
    meta = {name: getattr(row, name) for name in _ROW_FIELDS}  # dataclasses.asdict deep-copies: 4x the time
    meta["columns"] = list(row.columns)
    meta["created_at"] = epoch_rfc3339(row.created_at)
    meta["expires_at"] = epoch_rfc3339(row.expires_at)
    return meta
