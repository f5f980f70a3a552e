"""A fault-injecting OpenAI-compatible upstream: a real HTTP server on 127.0.0.1, no mocks.

Each request to .../chat/completions takes the next behaviour from `script`
(then `default`):

  normal    200 with `reply_text` as choices[0].message.content
  429       429 with Retry-After: 0
  slow      sleeps `slow_s` seconds, then answers like normal (the caller's deadline should fire first)
  408       408 Request Timeout
  500, 503  server errors
  empty     200 with content ""
  overlong  200 with 9 sentences and a URL (the reply policy must trim and strip)
  garbage   200 with a body that is not JSON

`requests` records every JSON body received, so tests can check the prompt (e.g. the RAG guard).
Usable as a context manager; the lead can point a real server's OPENAI_BASE_URL at `base_url`.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OVERLONG = "".join(f"{i}つ目の話やで。" for i in range(1, 9)) + "詳しくは https://example.com/sake を見てな。"


class FakeUpstream:
    def __init__(
        self,
        default: str = "normal",
        reply_text: str = "獺祭は山口のお酒やで。華やかな香りが特徴やね。",
        slow_s: float = 1.0,
    ) -> None:
        self.default = default
        self.reply_text = reply_text
        self.slow_s = slow_s
        self.script: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def next_behaviour(self) -> str:
        with self._lock:
            return self.script.pop(0) if self.script else self.default

    def __enter__(self) -> FakeUpstream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (deadline): that is the point of "slow"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with upstream._lock:
                    upstream.requests.append(body)
                    upstream.headers.append(dict(self.headers))
                if not self.path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "not found"}})
                    return
                behaviour = upstream.next_behaviour()
                if behaviour == "slow":
                    time.sleep(upstream.slow_s)
                    behaviour = "normal"
                if behaviour in ("429", "408", "500", "503"):
                    extra = {"Retry-After": "0"} if behaviour == "429" else {}
                    self._send(int(behaviour), {"error": {"message": behaviour}}, extra)
                elif behaviour == "garbage":
                    self._send(200, b"<html>oops</html>")
                else:
                    text = {"normal": upstream.reply_text, "empty": "", "overlong": OVERLONG}[behaviour]
                    self._send(
                        200,
                        {
                            "id": "chatcmpl-fake",
                            "object": "chat.completion",
                            "model": body.get("model"),
                            "choices": [
                                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
                            ],
                        },
                    )

        return Handler
