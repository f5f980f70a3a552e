"""Resource changes within this process: a handler says one of its resources changed
(`CallContext.changed`), and what serves subscriptions hears it (MCP `resources/subscribe`,
kumitate/transports/mcp/subscriptions.py). Per process: a change on one instance is heard by the
clients subscribed on that instance."""

from __future__ import annotations

import threading
from collections.abc import Callable

Listener = Callable[[str], None]
"""Called with the URI of a resource that changed, on the thread that says so (often a worker's)."""


class ResourceChanges:
    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()

    def listen(self, listener: Listener) -> None:
        with self._lock:
            self._listeners.append(listener)

    def publish(self, uri: str) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener(uri)
