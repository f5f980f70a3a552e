"""MCP over stdio for clients that frame messages like LSP (`Content-Length: N\\r\\n\\r\\n{json}`).

Standard MCP stdio is newline-delimited JSON, and that is what the SDK serves. The duo-talk
client's MCP provider (seed 001's caller) frames every message with a Content-Length header
instead, and speaks a pre-standard handshake: its `initialize` carries only `clientInfo`
(no protocolVersion, no capabilities) and it never sends `notifications/initialized`.

Decision: `kumitate mcp --stdio` accepts both framings, chosen on the first byte the client
sends (a JSON message starts with `{` or `[`; a framed one with the `C` of Content-Length).
Newline-delimited clients get the SDK untouched. For a Content-Length client, a bridge
translates frames to lines and back, and completes the old handshake the way the SDK
requires: it fills in a missing protocolVersion (the SDK's default negotiated version) and
empty capabilities, and sends `notifications/initialized` on the client's behalf right
before relaying the initialize result (dropping the client's own, should it send one later).
Nothing else is changed: tool calls and results pass through as they are.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
from typing import BinaryIO

import mcp_types

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def read_frame(stream: BinaryIO) -> bytes | None:
    """One Content-Length framed message body, or None at end of input."""
    length: int | None = None
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            if length is None:
                continue  # stray blank line between frames
            break
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    body = stream.read(length)
    return body if len(body) == length else None


def write_frame(stream: BinaryIO, body: bytes) -> None:
    """Write one message with its Content-Length header and flush (a frame is whole or not sent)."""
    stream.write(f"Content-Length: {len(body)}\r\n\r\n".encode("ascii") + body)
    stream.flush()


class FramingBridge:
    """Content-Length frames on the real stdin/stdout ⇄ newline-delimited JSON for the MCP server."""

    def __init__(self, client_in: BinaryIO, client_out: BinaryIO, server_in: BinaryIO, server_out: BinaryIO) -> None:
        self.client_in, self.client_out = client_in, client_out
        self.server_in, self.server_out = server_in, server_out
        self._lock = threading.Lock()
        self._initialize_ids: set[object] = set()
        self._initialized_sent = False

    def _to_server(self, message: object) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        with self._lock:
            self.server_in.write(line)
            self.server_in.flush()

    def _complete_handshake(self, message: object) -> bool:
        """Patch an old-style initialize; False for a message to drop (a late initialized notice)."""
        if not isinstance(message, dict):
            return True
        if message.get("method") == "initialize":
            params = message.setdefault("params", {})
            if isinstance(params, dict):
                params.setdefault("protocolVersion", mcp_types.DEFAULT_NEGOTIATED_VERSION)
                params.setdefault("capabilities", {})
                params.setdefault("clientInfo", {"name": "unknown", "version": "0"})
            self._initialize_ids.add(message.get("id"))
        return not (message.get("method") == "notifications/initialized" and self._initialized_sent)

    def pump_client(self) -> None:
        """Copy the client's framed messages to the server as JSON lines, answering the pre-standard
        handshake as the SDK expects it."""
        try:
            while (body := read_frame(self.client_in)) is not None:
                try:
                    message = json.loads(body)
                except ValueError:
                    with self._lock:  # let the server answer the parse error
                        self.server_in.write(body.replace(b"\n", b" ") + b"\n")
                        self.server_in.flush()
                    continue
                if self._complete_handshake(message):
                    self._to_server(message)
        finally:
            self.server_in.close()

    def pump_server(self) -> None:
        """Copy the server's JSON lines back to the client as framed messages."""
        for line in self.server_out:
            body = line.strip()
            if not body:
                continue
            try:
                message = json.loads(body)
            except ValueError:
                message = None
            if (
                isinstance(message, dict)
                and "result" in message
                and message.get("id") in self._initialize_ids
                and not self._initialized_sent
            ):
                self._initialized_sent = True
                self._to_server(INITIALIZED)  # before the client can send anything else
            write_frame(self.client_out, body)

    def start(self) -> None:
        """Run both pumps on daemon threads (they end with the streams)."""
        for target in (self.pump_client, self.pump_server):
            threading.Thread(target=target, name=f"stdio-{target.__name__}", daemon=True).start()


def _pipe_reader() -> tuple[io.TextIOWrapper, BinaryIO]:
    """A text stdin for the SDK and the binary end to feed it (a pipe: not fd 0, so the SDK reads it as is)."""
    read_fd, write_fd = os.pipe()
    return io.TextIOWrapper(os.fdopen(read_fd, "rb"), encoding="utf-8"), os.fdopen(write_fd, "wb", buffering=0)


def _copy(source: BinaryIO, sink: BinaryIO) -> None:
    with sink:
        while chunk := source.read1(65536):  # type: ignore[attr-defined]
            sink.write(chunk)


def adapt_stdio() -> str:
    """Pick the framing from the first byte on stdin; returns "newline" or "content-length".

    Peeking fills stdin's buffer, which the SDK would bypass (it reads a duplicate of fd 0), so
    in both cases sys.stdin is replaced by a pipe the SDK reads as it is: newline-delimited input
    is copied through unchanged; Content-Length input goes through a FramingBridge, which also
    replaces sys.stdout (the SDK writes to whatever sys.stdin/sys.stdout are when it starts).
    """
    source = sys.stdin.buffer
    peek = getattr(source, "peek", None)
    if peek is None:
        return "newline"
    framed = peek(1)[:1] in (b"C", b"c")
    sys.stdin, to_server = _pipe_reader()
    if not framed:
        threading.Thread(target=_copy, args=(source, to_server), name="stdio-copy", daemon=True).start()
        return "newline"
    out_r, out_w = os.pipe()
    bridge = FramingBridge(source, sys.stdout.buffer, to_server, os.fdopen(out_r, "rb"))
    sys.stdout = io.TextIOWrapper(os.fdopen(out_w, "wb"), encoding="utf-8", line_buffering=True)
    bridge.start()
    return "content-length"
