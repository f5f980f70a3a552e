"""A real MCP client, in memory and session-ful, subscribed to resources, and what it hears.

`notifications/resources/updated` leaves the server in the order the changes were said, so a test
that wants "this call said nothing" makes a call that does say something next and waits for that
one only: whatever the first call said would have arrived before it, and no sleep is needed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as mt
from fastmcp import Client

from kumitate.runtime import Runtime
from kumitate.transports.mcp import build_server


class Heard:
    """The URIs of the updates a subscribed client received, in order."""

    def __init__(self) -> None:
        self.uris: list[str] = []

    async def __call__(self, message: Any) -> None:
        if isinstance(message, mt.ResourceUpdatedNotification):
            self.uris.append(str(message.params.uri))

    async def until(self, uri: str, seconds: float = 5.0) -> list[str]:
        """Wait for an update of `uri`; returns (and forgets) everything heard up to and with it."""
        for _ in range(int(seconds / 0.02)):
            if uri in self.uris:
                upto = self.uris.index(uri) + 1
                heard, self.uris = self.uris[:upto], self.uris[upto:]
                return heard
            await asyncio.sleep(0.02)
        raise AssertionError(f"no update of {uri} within {seconds} s; heard {self.uris}")


@asynccontextmanager
async def subscribed(runtime: Runtime, uris: list[str]) -> AsyncIterator[tuple[Client[Any], Heard]]:
    """A client of `runtime`'s /mcp server (a session, as stdio keeps one) subscribed to `uris`."""
    heard = Heard()
    async with Client(build_server(runtime), message_handler=heard, mode="legacy") as client:
        for uri in uris:
            await client.session.subscribe_resource(uri)
        yield client, heard
