"""A TTL cache for chart PNGs: in memory, mirrored to files so a restart or another worker can serve them.

Ids are the first 32 hex digits of the PNG's SHA-256, so the same chart gets
the same id, and ids are safe as file names (validated before any file access).
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
        self._memory: dict[str, tuple[float, bytes]] = {}
        directory.mkdir(parents=True, exist_ok=True)

    def now(self) -> float:
        return self._clock()  # type: ignore[operator,no-any-return]

    def put(self, png: bytes) -> str:
        chart_id = hashlib.sha256(png).hexdigest()[:32]
        now = self.now()
        with self._lock:
            self._memory[chart_id] = (now, png)
            path = self.directory / f"{chart_id}.png"
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(png)
            tmp.replace(path)
            self._evict(now)
        return chart_id

    def get(self, chart_id: str) -> bytes | None:
        if not ID_RE.match(chart_id):
            return None
        now = self.now()
        with self._lock:
            hit = self._memory.get(chart_id)
            if hit is not None:
                if now - hit[0] <= self.ttl:
                    return hit[1]
                self._memory.pop(chart_id, None)
            path = self.directory / f"{chart_id}.png"
            try:
                created = path.stat().st_mtime
                if now - created > self.ttl:
                    path.unlink(missing_ok=True)
                    return None
                data = path.read_bytes()
            except OSError:
                return None
            self._memory[chart_id] = (created, data)
            return data

    def _evict(self, now: float) -> None:
        for key in [k for k, (t, _) in self._memory.items() if now - t > self.ttl]:
            self._memory.pop(key, None)
        while len(self._memory) > self.max_items:
            oldest = min(self._memory, key=lambda k: self._memory[k][0])
            self._memory.pop(oldest, None)
        for path in self.directory.glob("*.png"):
            try:
                if now - path.stat().st_mtime > self.ttl:
                    path.unlink(missing_ok=True)
            except OSError:
                continue
