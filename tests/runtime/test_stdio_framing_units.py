"""Content-Length framing for `kumitate mcp --stdio` (kumitate/stdio_framing.py) on real pipes, in process.

The e2e stdio tests run the command as a subprocess; here: the frame reader's edge cases (stray blank
lines, header case, a truncated body), the bridge's handshake completion (a pre-standard initialize
filled in, `notifications/initialized` sent once on the client's behalf and the client's own dropped),
a body that is not JSON handed on for the server to answer, and adapt_stdio's choice on the first byte.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO

import mcp_types
import pytest

from kumitate.stdio_framing import INITIALIZED, FramingBridge, adapt_stdio, read_frame, write_frame


def frame(message: Any) -> bytes:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_read_frame_skips_blank_lines_and_other_headers() -> None:
    stream = io.BytesIO(b"\r\n\ncontent-length: 2\r\nContent-Type: application/json\r\n\r\n{}" + frame(b"[1]"))
    assert read_frame(stream) == b"{}"
    assert read_frame(stream) == b"[1]"
    assert read_frame(stream) is None


def test_read_frame_gives_none_for_a_truncated_body_or_headers_cut_off() -> None:
    assert read_frame(io.BytesIO(b"Content-Length: 10\r\n\r\n{}")) is None
    assert read_frame(io.BytesIO(b"Content-Length: 10\r\n")) is None


def test_write_frame_is_read_back_whole() -> None:
    stream = io.BytesIO()
    write_frame(stream, '{"é":1}'.encode())
    assert stream.getvalue().startswith(b"Content-Length: 8\r\n\r\n")  # bytes, not characters
    stream.seek(0)
    assert read_frame(stream) == '{"é":1}'.encode()


class Pipes:
    """The bridge between two pairs of real pipes: the test plays the client and the MCP server."""

    def __init__(self) -> None:
        client_r, self.client = self._pipe()
        self.from_bridge, client_w = self._pipe()
        server_r, server_in = self._pipe()
        server_out, self.server = self._pipe()
        self.server_lines = server_r
        self.bridge = FramingBridge(client_r, client_w, server_in, server_out)
        self.bridge.start()

    @staticmethod
    def _pipe() -> tuple[BinaryIO, BinaryIO]:
        read_fd, write_fd = os.pipe()
        return os.fdopen(read_fd, "rb"), os.fdopen(write_fd, "wb", buffering=0)

    def to_server(self) -> Any:
        return json.loads(self.server_lines.readline())

    def close(self) -> None:
        self.client.close()
        self.server.close()


@pytest.fixture
def pipes() -> Iterator[Pipes]:
    bridge = Pipes()
    yield bridge
    bridge.close()


def test_a_pre_standard_initialize_is_completed_and_initialized_is_sent_once(pipes: Pipes) -> None:
    pipes.client.write(frame({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {}}))
    initialize = pipes.to_server()
    assert initialize["params"] == {
        "protocolVersion": mcp_types.DEFAULT_NEGOTIATED_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "unknown", "version": "0"},
    }
    pipes.server.write(b'{"jsonrpc":"2.0","id":7,"result":{"ok":true}}\n\n')
    assert pipes.to_server() == INITIALIZED  # sent for the client, before the result reaches it
    assert json.loads(read_frame(pipes.from_bridge) or b"") == {"jsonrpc": "2.0", "id": 7, "result": {"ok": True}}
    # the client's own late notice is dropped; what follows passes through unchanged
    pipes.client.write(frame({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    pipes.client.write(frame([{"jsonrpc": "2.0", "id": 8, "method": "tools/list"}]))
    assert pipes.to_server() == [{"jsonrpc": "2.0", "id": 8, "method": "tools/list"}]


def test_a_body_that_is_not_json_goes_to_the_server_on_one_line(pipes: Pipes) -> None:
    pipes.client.write(frame(b"{not\njson"))
    assert pipes.server_lines.readline() == b"{not json\n"
    pipes.server.write(b"this is not json either\n")
    assert read_frame(pipes.from_bridge) == b"this is not json either"


def test_the_server_sees_end_of_input_when_the_client_closes(pipes: Pipes) -> None:
    pipes.client.close()
    assert pipes.server_lines.readline() == b""


@pytest.fixture
def stdio(monkeypatch: pytest.MonkeyPatch) -> Iterator[BinaryIO]:
    """sys.stdin on a real pipe (the test holds its write end) and sys.stdout on another. The test keeps
    the original wrappers alive, as sys.__stdin__ does for a real process (a dropped wrapper closes its fd)."""
    read_fd, write_fd = os.pipe()
    stdin = io.TextIOWrapper(os.fdopen(read_fd, "rb"), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    out_r, out_w = os.pipe()
    stdout = io.TextIOWrapper(os.fdopen(out_w, "wb"), encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", stdout)
    with os.fdopen(write_fd, "wb", buffering=0) as feed, os.fdopen(out_r, "rb"), stdin, stdout:
        yield feed


def test_adapt_stdio_passes_newline_json_through(stdio: BinaryIO) -> None:
    stdio.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    assert adapt_stdio() == "newline"
    assert sys.stdin.readline() == '{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    stdio.close()
    assert sys.stdin.read() == ""


def test_adapt_stdio_bridges_content_length_frames(stdio: BinaryIO) -> None:
    stdio.write(frame({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
    assert adapt_stdio() == "content-length"
    assert json.loads(sys.stdin.readline()) == {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    stdio.close()
    assert sys.stdin.read() == ""


def test_adapt_stdio_on_a_stream_that_cannot_peek_keeps_newlines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"C")))  # BytesIO has no peek
    assert adapt_stdio() == "newline"
