"""A stand-in for the runtime's HTTP transport (until the lead's app serves yana): a real loopback server.

Routes /v1/chat, /v1/search, /v1/ingest (POST JSON) and /v1/healthz, /v1/version (GET) to the yana
handlers, adds the success envelope, maps ToolError to the seed's error body, and echoes X-Run-Id.
`faults` is a list of (status, code) answered first, one per request, to test client retries.
"""

from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from generated.yana.bindings import SERVICE
from kumitate.errors import ToolError

STATUS = {
    "BAD_REQUEST": 400,
    "NOT_FOUND": 404,
    "INVALID_IMAGE": 400,
    "URI_NOT_ALLOWED": 400,
    "RAG_UNAVAILABLE": 503,
    "RATE_LIMITED": 429,
    "UPSTREAM_ERROR": 502,
    "PAYLOAD_TOO_LARGE": 413,
}
RETRYABLE = {"RAG_UNAVAILABLE", "RATE_LIMITED", "UPSTREAM_ERROR", "REQUEST_TIMEOUT", "SERVICE_UNAVAILABLE"}


class YanaHttpStub:
    def __init__(self, handlers: Any) -> None:
        self.handlers = handlers
        self.faults: list[tuple[int, str]] = []
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, body: dict[str, Any], run_id: str, trace_id: str) -> None:
                data = json.dumps(body, ensure_ascii=False).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("X-Run-Id", run_id)
                self.send_header("X-Trace-Id", trace_id)
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                run_id = self.headers.get("X-Run-Id") or uuid.uuid4().hex
                trace_id = uuid.uuid4().hex
                length = int(self.headers.get("Content-Length", "0") or 0)
                args = json.loads(self.rfile.read(length) or b"{}") if method == "POST" else {}
                stub.requests.append({"path": self.path, "args": args, "run_id": run_id})
                ctx = SERVICE.direct_call(self.path, transport="http", run_id=run_id, trace_id=trace_id)
                if stub.faults:
                    status, code = stub.faults.pop(0)
                    self._reply(
                        status,
                        {
                            "error": {"code": code, "message": "injected", "retryable": code in RETRYABLE},
                            "run_id": run_id,
                            "trace_id": trace_id,
                        },
                        run_id,
                        trace_id,
                    )
                    return
                name = self.path.removeprefix("/v1/")
                try:
                    if method == "POST":
                        body = getattr(stub.handlers, name)(args, ctx)
                    else:
                        body = getattr(stub.handlers, f"read_{name}")(ctx)
                except ToolError as exc:
                    self._reply(
                        STATUS.get(exc.code, 500),
                        {
                            "error": {"code": exc.code, "message": exc.message, "retryable": exc.code in RETRYABLE},
                            "run_id": run_id,
                            "trace_id": trace_id,
                        },
                        run_id,
                        trace_id,
                    )
                    return
                if method == "POST":
                    body = {
                        **body,
                        "run_id": run_id,
                        "trace_id": trace_id,
                        "server_version": "1.0.0",
                        "policy_version": "say-2025-09-23",
                    }
                self._reply(200, body, run_id, trace_id)

            def do_POST(self) -> None:
                self._handle("POST")

            def do_GET(self) -> None:
                self._handle("GET")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> YanaHttpStub:
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
