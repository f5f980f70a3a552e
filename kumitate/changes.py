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
    """The listeners of one process and the changes said to them (module docstring); the pipeline holds
    one, safe to use from any thread."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()

    def listen(self, listener: Listener) -> None:
        """Hear every change said from now on (MCP subscriptions listen once their server is built)."""
        with self._lock:
            self._listeners.append(listener)

    def publish(self, uri: str) -> None:
        """Tell every listener that the resource at `uri` changed, on the caller's thread; a listener that
        reaches the event loop must hand the change over itself."""
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener(uri)
