"""A TTL cache for chart PNGs: in memory, mirrored to files so a restart or another worker can serve them.

Each chart belongs to the principal that rendered it (issue 21): the owner is
kept beside the PNG (`<id>.owner`) and returned with it, and the id is the
first 32 hex digits of SHA-256 over owner and PNG, so the same chart gets the
same id for the same principal and another id for anyone else (an id seen by
one principal names nothing another may read). Ids are safe as file names
(validated before any file access).
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from pathlib import Path

ID_RE = re.compile(r"^[0-9a-f]{32}$")


class ChartCache:
    def __init__(
        self, directory: Path, ttl_seconds: float = 3600.0, max_items: int = 200, clock: object = time.time
    ) -> None:
        self.directory = directory
        self.ttl = ttl_seconds
        self.max_items = max_items
        self._clock = clock
        self._lock = threading.Lock()
        self._memory: dict[str, tuple[float, bytes, str]] = {}
        directory.mkdir(parents=True, exist_ok=True)

    def now(self) -> float:
        return self._clock()  # type: ignore[operator,no-any-return]

    def put(self, png: bytes, owner: str) -> str:
        chart_id = hashlib.sha256(owner.encode() + b"\0" + png).hexdigest()[:32]
        now = self.now()
        with self._lock:
            self._memory[chart_id] = (now, png, owner)
            # the owner first: a PNG on disk is never readable without it
            self._write(self.directory / f"{chart_id}.owner", owner.encode())
            self._write(self.directory / f"{chart_id}.png", png)
            self._evict(now)
        return chart_id

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)

    def get(self, chart_id: str) -> tuple[bytes, str] | None:
        """(PNG, owner), or None when unknown, expired, or stored without an owner."""
        if not ID_RE.match(chart_id):
            return None
        now = self.now()
        with self._lock:
            hit = self._memory.get(chart_id)
            if hit is not None:
                if now - hit[0] <= self.ttl:
                    return hit[1], hit[2]
                self._memory.pop(chart_id, None)
            path = self.directory / f"{chart_id}.png"
            try:
                created = path.stat().st_mtime
                if now - created > self.ttl:
                    self._unlink(chart_id)
                    return None
                data = path.read_bytes()
                owner = (self.directory / f"{chart_id}.owner").read_bytes().decode()
            except (OSError, UnicodeDecodeError):
                return None
            self._memory[chart_id] = (created, data, owner)
            return data, owner

    def _unlink(self, chart_id: str) -> None:
        for suffix in (".png", ".owner"):
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
