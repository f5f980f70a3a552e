"""Chart PNGs with a TTL, kept in the runtime's shared cache and mirrored to files.

The shared cache (`setup.cache`) is Redis when KUMITATE_REDIS_URL is set, so a chart rendered by one
instance is served by every other, else the process's memory. The files under the service's data
directory let a restart, or another worker on the same machine, serve a chart too, and list the
live charts for completion.

Each chart belongs to the principals whose calls rendered it (issue 21): their ids are kept
beside the PNG (`<id>.owners`, a JSON list; in the cache, one value with the PNG, never apart)
and returned with it. Ids are the first 32 hex digits of the PNG's SHA-256, so the same chart gets
the same id on every transport; a principal who renders the very same chart becomes one more owner
(they hold those bytes already). Ids are safe as file names (validated before any file access).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

from kumitate.cache import SharedCache
from kumitate.storage.carry import UNOWNED, announce

ID_RE = re.compile(r"^[0-9a-f]{32}$")
CACHE_PREFIX = "household:chart:"


class ChartCache:
    def __init__(
        self,
        directory: Path,
        cache: SharedCache,
        ttl_seconds: float = 3600.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cache = cache
        self.directory = directory
        self.ttl = ttl_seconds
        self._clock = clock
        self._lock = threading.Lock()
        directory.mkdir(parents=True, exist_ok=True)

    def put(self, png: bytes, owner: str) -> str:
        chart_id = hashlib.sha256(png).hexdigest()[:32]
        now = self._clock()
        with self._lock:
            cached = self._cached(chart_id)
            stored = cached or self._from_files(chart_id, now)
            owners = (stored[1] if stored else frozenset()) | {owner}
            # the owners first: a PNG on disk is never readable without them
            self._write(self.directory / f"{chart_id}.owners", json.dumps(sorted(owners)).encode())
            self._write(self.directory / f"{chart_id}.png", png)
            self._evict(now)
        self.cache.set(CACHE_PREFIX + chart_id, _pack(owners, png), self.ttl)
        return chart_id

    def get(self, chart_id: str) -> tuple[bytes, frozenset[str]] | None:
        """(PNG, owners), or None when unknown, expired, or stored without owners."""
        if not ID_RE.match(chart_id):
            return None
        found = self._cached(chart_id)
        if found is not None:
            return found
        now = self._clock()
        with self._lock:
            stored = self._from_files(chart_id, now, unlink_expired=True)
        if stored is None:
            return None
        png, owners, created = stored
        # back into the cache for what is left of its life
        self.cache.set(CACHE_PREFIX + chart_id, _pack(owners, png), self.ttl - (now - created))
        return png, owners

    def ids(self, owner: str, prefix: str = "", *, every: bool = False, limit: int = 100) -> list[str]:
        """Live chart ids `owner` rendered (`every`: anyone's) that start with `prefix`, newest first."""
        if prefix and not ID_RE.match(prefix.ljust(32, "0")):
            return []
        now = self._clock()
        found: list[tuple[float, str]] = []
        for path in self.directory.glob(f"{prefix}*.png"):
            chart_id = path.stem
            try:
                created = path.stat().st_mtime
                if now - created > self.ttl or not (every or owner in self._read_owners(chart_id)):
                    continue
            except (OSError, ValueError):
                continue
            found.append((created, chart_id))
        return [chart_id for _, chart_id in sorted(found, reverse=True)[:limit]]

    def adopt_unowned(self) -> int:
        """Live charts of a release before owners (a PNG without `.owners`) become UNOWNED's
        (kumitate.storage.carry), so their ids keep working; returns how many."""
        now = self._clock()
        adopted = 0
        for path in self.directory.glob("*.png"):
            owners = path.with_suffix(".owners")
            try:
                if not ID_RE.match(path.stem) or owners.exists() or now - path.stat().st_mtime > self.ttl:
                    continue
            except OSError:
                continue
            self._write(owners, json.dumps([UNOWNED]).encode())
            adopted += 1
        if adopted:
            announce(
                "household",
                f"gave {adopted} unexpired charts of an earlier release in {self.directory} the owner (unowned):"
                " readable by principals with scope admin or *, every caller when authentication is off",
                rows=adopted,
            )
        return adopted

    def _cached(self, chart_id: str) -> tuple[bytes, frozenset[str]] | None:
        """(PNG, owners) from the shared cache (it expires them), or None."""
        value = self.cache.get(CACHE_PREFIX + chart_id)
        try:
            return _unpack(value) if value is not None else None
        except ValueError:
            return None

    def _from_files(
        self, chart_id: str, now: float, *, unlink_expired: bool = False
    ) -> tuple[bytes, frozenset[str], float] | None:
        """(PNG, owners, written at) from the files, or None when absent, expired or without owners."""
        path = self.directory / f"{chart_id}.png"
        try:
            created = path.stat().st_mtime
            if now - created > self.ttl:
                if unlink_expired:
                    self._unlink(chart_id)
                return None
            return path.read_bytes(), self._read_owners(chart_id), created
        except (OSError, ValueError):
            return None

    def _read_owners(self, chart_id: str) -> frozenset[str]:
        owners = json.loads((self.directory / f"{chart_id}.owners").read_bytes())
        if not isinstance(owners, list) or not all(isinstance(o, str) for o in owners):
            raise ValueError("not a list of principal ids")
        return frozenset(owners)

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)

    def _unlink(self, chart_id: str) -> None:
        for suffix in (".png", ".owners"):
            (self.directory / f"{chart_id}{suffix}").unlink(missing_ok=True)

    def _evict(self, now: float) -> None:
        for path in self.directory.glob("*.png"):
            try:
                if now - path.stat().st_mtime > self.ttl:
                    self._unlink(path.stem)
            except OSError:
                continue


def _pack(owners: frozenset[str], png: bytes) -> bytes:
    """The owners as one JSON line (JSON never holds a raw newline), then the PNG."""
    return json.dumps(sorted(owners)).encode() + b"\n" + png


def _unpack(value: bytes) -> tuple[bytes, frozenset[str]]:
    head, sep, png = value.partition(b"\n")
    owners = json.loads(head) if sep else None
    if not isinstance(owners, list) or not all(isinstance(o, str) for o in owners):
        raise ValueError("not a packed chart")
    return png, frozenset(owners)
