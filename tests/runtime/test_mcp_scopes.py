"""Which scopes an MCP request over HTTP needs (kumitate/transports/mcp/scopes.py), and the body replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kumitate.runtime import Runtime
from kumitate.settings import Settings
from kumitate.transports.edge.asgi import Message
from kumitate.transports.mcp.scopes import ScopeMap, read_body

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def scopes(tmp_path_factory: pytest.TempPathFactory) -> ScopeMap:
    root = tmp_path_factory.mktemp("scopes")
    runtime = Runtime(
        Settings(data_dir=root / "var", sample_dir=Path("data"), public_base_url="http://x"), ["stays", "household"]
    )
    try:
        return ScopeMap.of(runtime)
    finally:
        runtime.close()


def body(method: str, **params: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()


def test_a_call_or_read_needs_its_scope_and_nothing_else_does(scopes: ScopeMap) -> None:
    assert scopes.required(body("tools/call", name="summarize_stays", arguments={})) == {"stays"}
    assert scopes.required(body("resources/read", uri="chart://0123abcd")) == {"household"}
    assert scopes.required(body("resources/read", uri="chart://a/b")) == set()  # no such resource
    assert scopes.required(body("tools/call", name="no_such_tool")) == set()
    assert scopes.required(body("tools/list")) == set()
    assert scopes.required(b"not json") == set()
    assert scopes.required(b"[" + body("tools/call", name="summarize_stays") + b"]") == {"stays"}
    assert scopes.every >= {"stays", "household"}


def receiver(*chunks: bytes) -> tuple[list[Message], object]:
    messages: list[Message] = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)
    ]
    sent = list(messages)

    async def receive() -> Message:
        return sent.pop(0) if sent else {"type": "http.disconnect"}

    return messages, receive


async def test_the_body_is_read_and_replayed_unchanged() -> None:
    messages, receive = receiver(b"ab", b"cd")
    data, replay = await read_body(receive, 10)  # type: ignore[arg-type]
    assert data == b"abcd"
    assert [await replay(), await replay()] == messages


async def test_a_body_over_the_cap_is_not_parsed_but_still_passed_on() -> None:
    messages, receive = receiver(b"abc", b"def", b"ghi")
    data, replay = await read_body(receive, 4)  # type: ignore[arg-type]
    assert data is None
    assert [await replay() for _ in range(3)] == messages  # the MCP app refuses it with its own 413
