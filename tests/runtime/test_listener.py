"""The eager listener: connections queued while the loop was busy are all taken at its next turns.

uvloop's own server takes one per turn, so on a busy loop a connection could wait seconds in the
kernel's queue before the server saw it (issue 32's p99 stalls under wrk -c256).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

import pytest
import uvloop

from kumitate.transports.listener import EagerListener

QUEUED = 100


class Counting(asyncio.Protocol):
    made: list[asyncio.BaseTransport]

    def __init__(self, made: list[asyncio.BaseTransport]) -> None:
        self.made = made

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.made.append(transport)


def bound() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


async def connected_after_a_busy_spell(listen: Callable[[socket.socket, list[asyncio.BaseTransport]], object]) -> int:
    """QUEUED clients connect while the loop runs nothing else (their handshakes complete in the kernel's
    queue), then the loop gets five turns: how many connections did the server take?"""
    made: list[asyncio.BaseTransport] = []
    sock = bound()
    server = listen(sock, made)
    if asyncio.iscoroutine(server):
        server = await server
    clients = [socket.create_connection(sock.getsockname()) for _ in range(QUEUED)]
    try:
        for _ in range(5):
            await asyncio.sleep(0)
        return len(made)
    finally:
        for client in clients:
            client.close()
        for transport in made:
            transport.close()
        server.close()  # type: ignore[attr-defined]


def eager(sock: socket.socket, made: list[asyncio.BaseTransport]) -> EagerListener:
    return EagerListener(sock, lambda: Counting(made), backlog=2048)


async def uvloops_own(sock: socket.socket, made: list[asyncio.BaseTransport]) -> asyncio.Server:
    return await asyncio.get_running_loop().create_server(lambda: Counting(made), sock=sock, backlog=2048)


def test_every_queued_connection_is_taken_within_a_few_turns_of_a_busy_loop() -> None:
    assert uvloop.run(connected_after_a_busy_spell(eager)) == QUEUED


def test_uvloops_own_server_takes_them_one_turn_at_a_time() -> None:
    """The reason for the listener: if uvloop starts accepting in batches, this fails and the listener can go."""
    assert uvloop.run(connected_after_a_busy_spell(uvloops_own)) < QUEUED // 2


def test_a_closed_listener_refuses_new_connections() -> None:
    async def scenario() -> None:
        sock = bound()
        address = sock.getsockname()
        listener = EagerListener(sock, lambda: Counting([]), backlog=16)
        assert listener.is_serving()
        listener.close()
        await listener.wait_closed()
        assert not listener.is_serving()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(address, timeout=2)

    uvloop.run(scenario())
