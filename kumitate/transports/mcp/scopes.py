"""The scopes an MCP request over HTTP needs, read from its JSON-RPC body before the MCP app sees it.

The MCP authorization specification has a token that lacks a scope refused with HTTP 403 and
`WWW-Authenticate: Bearer error="insufficient_scope", scope="..."`, so a client can step up its
authorization; a tool result with isError (sent inside a 200) cannot start that. Which scope a
request needs depends on the tool or resource it names, so the body is read (up to the MCP
request cap) and replayed to the MCP app unchanged. Only a caller already authenticated and
not holding every scope the endpoint could need pays for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import msgspec

from kumitate.runtime import Runtime
from kumitate.transports.edge.asgi import Message, Receive


@dataclass(frozen=True, slots=True)
class ScopeMap:
    """Tool names and resource URIs (templates as patterns) to the scopes they require."""

    tools: dict[str, frozenset[str]]
    resources: list[tuple[re.Pattern[str], frozenset[str]]]

    @classmethod
    def of(cls, runtime: Runtime) -> ScopeMap:
        """The scopes of every tool and non-public resource the runtime serves, read once."""
        tools = {t.name: frozenset(t.policy.required_scopes) for s in runtime.services.values() for t in s.tools}
        resources = [
            (_uri_pattern(r.uri), frozenset(r.policy.required_scopes))
            for s in runtime.services.values()
            for r in s.resources
            if not r.policy.public
        ]
        return cls(tools, resources)

    @property
    def every(self) -> frozenset[str]:
        """Every scope some tool or resource needs."""
        return frozenset().union(*self.tools.values(), *(s for _, s in self.resources))

    def required(self, body: bytes) -> frozenset[str]:
        """The scopes the request(s) in `body` need; none for anything that is not a call or a read."""
        try:
            payload = msgspec.json.decode(body)
        except msgspec.DecodeError:
            return frozenset()
        messages = payload if isinstance(payload, list) else [payload]
        return frozenset().union(*(self._of(m) for m in messages if isinstance(m, dict)))

    def _of(self, message: dict[str, object]) -> Iterable[str]:
        params = message.get("params")
        if not isinstance(params, dict):
            return ()
        if message.get("method") == "tools/call" and isinstance(params.get("name"), str):
            return self.tools.get(params["name"], ())
        if message.get("method") == "resources/read" and isinstance(params.get("uri"), str):
            return next((scopes for pattern, scopes in self.resources if pattern.fullmatch(params["uri"])), ())
        return ()


def _uri_pattern(uri: str) -> re.Pattern[str]:
    parts = re.split(r"\{[^}]+\}", uri)
    return re.compile("[^/]+".join(re.escape(p) for p in parts))


async def read_body(receive: Receive, cap: int) -> tuple[bytes | None, Receive]:
    """The request body (None when over `cap` or the client left) and a `receive` that replays it."""
    chunks: list[bytes] = []
    size = 0
    pending: list[Message] = []
    while True:
        message = await receive()
        pending.append(message)
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > cap or not message.get("more_body"):
            break
    complete = pending[-1]["type"] == "http.request" and not pending[-1].get("more_body") and size <= cap

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return (b"".join(chunks) if complete else None), replay
