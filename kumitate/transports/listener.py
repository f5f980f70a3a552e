"""The listening socket of `kumitate serve`, accepted from eagerly: every pending connection at each turn.

uvloop takes one connection from the kernel's accept queue per turn of its event loop. On a busy
loop (256 connections each with a call in hand, one turn lasting 100-400 ms) connections then wait
in that queue for seconds: under `wrk -c256` about a hundred connections sat in it at once and
drained at a few per second, so some clients had their first answer only after 4-6 s, while the
server itself answered every request it had read within about 1 s (issue 32's p99 stalls; the bare
Litestar route, with turns ten times shorter, did not show it). asyncio's own loop accepts a batch
per turn but serves calls at about half uvloop's rate. So uvloop keeps the connections and this
listener does the accepting: up to `batch` connections each time the socket is readable, each handed
to the loop with `connect_accepted_socket`, which builds the same transport uvloop's server would.
`EagerServer` is uvicorn's server with this listener in place of uvloop's (what of `uvicorn.Server` it
overrides and reads is checked at start-up in kumitate/compat/uvicorn.py).

Like asyncio's servers, it stops accepting for a second when the process is out of file descriptors
(or the kernel out of buffers) instead of spinning on the error.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import logging
import socket
from collections.abc import Callable
from typing import Any, cast

import uvicorn

__all__ = ["EagerListener", "EagerServer"]

logger = logging.getLogger("uvicorn.error")

RESOURCE_ERRORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
PAUSE_ON_RESOURCE_ERROR_S = 1.0


class EagerListener:
    """Accepts from a bound socket on the running loop; `close()` and `wait_closed()` as an asyncio server's."""

    def __init__(self, sock: socket.socket, protocol_factory: Callable[[], asyncio.Protocol], backlog: int) -> None:
        self.sock = sock
        self.protocol_factory = protocol_factory
        self.batch = max(1, backlog)
        self._loop = asyncio.get_running_loop()
        self._connecting: set[asyncio.Task[None]] = set()
        self._serving = False
        sock.listen(backlog)
        sock.setblocking(False)
        self._resume()

    def is_serving(self) -> bool:
        """Accepting new connections (False once closed, and during a pause for lack of descriptors)."""
        return self._serving

    def close(self) -> None:
        """Stop accepting and close the socket: new connections are refused; accepted ones go on."""
        self._pause()
        self.sock.close()

    async def wait_closed(self) -> None:
        """Connections accepted but not yet handed to the loop are handed over (or fail) before this returns."""
        if self._connecting:
            await asyncio.gather(*self._connecting, return_exceptions=True)

    def _resume(self) -> None:
        if self.sock.fileno() >= 0 and not self._serving:
            self._loop.add_reader(self.sock.fileno(), self._accept_pending)
            self._serving = True

    def _pause(self) -> None:
        if self._serving:
            self._loop.remove_reader(self.sock.fileno())
            self._serving = False

    def _accept_pending(self) -> None:
        for _ in range(self.batch):
            try:
                conn, _address = self.sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError as exc:
                if exc.errno not in RESOURCE_ERRORS:
                    raise
                logger.error("accepting connections paused for %g s: %s", PAUSE_ON_RESOURCE_ERROR_S, exc)
                self._pause()
                self._loop.call_later(PAUSE_ON_RESOURCE_ERROR_S, self._resume)
                return
            conn.setblocking(False)
            task = self._loop.create_task(self._connect(conn))
            self._connecting.add(task)
            task.add_done_callback(self._connecting.discard)

    async def _connect(self, conn: socket.socket) -> None:
        try:
            await self._loop.connect_accepted_socket(self.protocol_factory, conn)
        except OSError:  # the client went away between accept and set-up
            conn.close()


class EagerServer(uvicorn.Server):
    """uvicorn's server whose sockets are accepted from by EagerListeners."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's start-up (the lifespan first) without its own listener; the socket is bound as uvicorn
        binds it (same log line; a port that cannot be bound still exits with status 3) unless given."""
        await super().startup(sockets=[])
        config = self.config
        if sockets is None:
            try:
                sockets = [config.bind_socket()]
            except SystemExit:
                await self.lifespan.shutdown()
                raise
        protocol_class: Any = config.http_protocol_class
        protocol = functools.partial(
            protocol_class, config=config, server_state=self.server_state, app_state=self.lifespan.state
        )
        self.servers = [cast(Any, EagerListener(sock, protocol, config.backlog)) for sock in sockets]
