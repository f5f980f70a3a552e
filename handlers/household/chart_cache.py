"""A TTL cache for chart PNGs: in memory, mirrored to files so a restart or another worker can serve them,
and, when Redis is configured (KUMITATE_REDIS_URL), to kumitate's shared cache, so that a chart rendered
by one instance is served by every other (each instance has its own data directory).

Each chart belongs to the principals whose calls rendered it (issue 21): their ids
are kept beside the PNG (`<id>.owners`, a JSON list) and returned with it. Ids are
the first 32 hex digits of the PNG's SHA-256, so the same chart gets the same id on
every transport; a principal who renders the very same chart becomes one more owner
(they hold those bytes already). Ids are safe as file names (validated before any
file access).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from pathlib import Path

from kumitate.cache import SharedCache

ID_RE = re.compile(r"^[0-9a-f]{32}$")
SHARED_PREFIX = "household:chart:"


class ChartCache:
    def __init__(
        self,
        directory: Path,
        ttl_seconds: float = 3600.0,
        max_items: int = 200,
        clock: object = time.time,
        shared: SharedCache | None = None,
    ) -> None:
        self.shared = shared
        self.directory = directory
        self.ttl = ttl_seconds
        self.max_items = max_items
        self._clock = clock
        self._lock = threading.Lock()
        self._memory: dict[str, tuple[float, bytes, frozenset[str]]] = {}
        directory.mkdir(parents=True, exist_ok=True)

    def now(self) -> float:
        return self._clock()  # type: ignore[operator,no-any-return]

    def put(self, png: bytes, owner: str) -> str:
        chart_id = hashlib.sha256(png).hexdigest()[:32]
        now = self.now()
        with self._lock:
            owners = self._owners_locked(chart_id, now) | {owner}
            self._memory[chart_id] = (now, png, owners)
            # the owners first: a PNG on disk is never readable without them
            self._write(self.directory / f"{chart_id}.owners", json.dumps(sorted(owners)).encode())
            self._write(self.directory / f"{chart_id}.png", png)
            self._evict(now)
        if self.shared is not None:  # one value: the owners travel with the PNG, never apart
            self.shared.set(SHARED_PREFIX + chart_id, _pack(owners, png), self.ttl)
        return chart_id

    def _owners_locked(self, chart_id: str, now: float) -> frozenset[str]:
        """The owners of a chart still alive (in memory, else on disk), or none."""
        hit = self._memory.get(chart_id)
        if hit is not None and now - hit[0] <= self.ttl:
            return hit[2]
        found = self._shared_get(chart_id)
        if found is not None:
            return found[1]
        try:
            if now - (self.directory / f"{chart_id}.png").stat().st_mtime > self.ttl:
                return frozenset()
            return self._read_owners(chart_id)
        except (OSError, ValueError):
            return frozenset()

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

    def ids(self, owner: str, prefix: str = "", *, every: bool = False, limit: int = 100) -> list[str]:
        """Live chart ids `owner` rendered (`every`: anyone's) that start with `prefix`, newest first."""
        if prefix and not ID_RE.match(prefix.ljust(32, "0")):
            return []
        now = self.now()
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

    def get(self, chart_id: str) -> tuple[bytes, frozenset[str]] | None:
        """(PNG, owners), or None when unknown, expired, or stored without owners."""
        if not ID_RE.match(chart_id):
            return None
        now = self.now()
        with self._lock:
            hit = self._memory.get(chart_id)
            if hit is not None:
                if now - hit[0] <= self.ttl:
                    return hit[1], hit[2]
                self._memory.pop(chart_id, None)
            found = self._shared_get(chart_id)
            if found is not None:
                self._memory[chart_id] = (now, *found)
                return found
            path = self.directory / f"{chart_id}.png"
            try:
                created = path.stat().st_mtime
                if now - created > self.ttl:
                    self._unlink(chart_id)
                    return None
                data = path.read_bytes()
                owners = self._read_owners(chart_id)
            except (OSError, ValueError):
                return None
            self._memory[chart_id] = (created, data, owners)
            return data, owners

    def _shared_get(self, chart_id: str) -> tuple[bytes, frozenset[str]] | None:
        """(PNG, owners) from the shared cache (Redis expires it), or None."""
        if self.shared is None:
            return None
        value = self.shared.get(SHARED_PREFIX + chart_id)
        try:
            return _unpack(value) if value is not None else None
        except ValueError:
            return None

    def _unlink(self, chart_id: str) -> None:
        for suffix in (".png", ".owners"):
            (self.directory / f"{chart_id}{suffix}").unlink(missing_ok=True)

    def _evict(self, now: float) -> None:
        for key in [k for k, (t, _, _) in self._memory.items() if now - t > self.ttl]:
            self._memory.pop(key, None)
        while len(self._memory) > self.max_items:
            oldest = min(self._memory, key=lambda k: self._memory[k][0])
            self._memory.pop(oldest, None)
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
