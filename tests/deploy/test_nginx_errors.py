"""Issue 45: what nginx answers itself is the catalogue's envelope, never its HTML page. Seen: behind the
cluster's nginx, headers over 8 KiB, a duplicate Host or no Host got nginx's own HTML 400.

A real nginx from the cluster's template (deploy/nginx.conf, started by deploy.servers.start_nginx) in front
of a port nothing listens on, and raw sockets: each request nginx refuses by itself (or cannot pass on) is
answered in JSON with the code specs/errors.yaml gives its status, retryable as the catalogue says."""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from deploy import servers

pytestmark = pytest.mark.skipif(servers.which("nginx") is None, reason="no nginx: make cluster-install")

CATALOGUE = yaml.safe_load((Path(__file__).parents[2] / "specs" / "errors.yaml").read_text())["codes"]


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    directory = Path(tempfile.mkdtemp(prefix="kumitate-nginx-"))
    directory.chmod(0o755)  # the service user's (nginx's) directory must be reachable
    port = servers.free_port()
    try:
        servers.start_nginx(directory, port, [servers.free_port()])  # an upstream nothing listens on
        yield port
    finally:
        servers.stop_nginx(directory, fast=True)
        shutil.rmtree(directory, ignore_errors=True)


def exchange(port: int, data: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send `data`, read one whole response (head and Content-Length body): status, headers, body."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        answer = b""
        while True:
            head, found, body = answer.partition(b"\r\n\r\n")
            if found:
                lines = head.decode("latin-1").split("\r\n")
                headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
                if len(body) >= int(headers.get("content-length", "0")):
                    return int(lines[0].split()[1]), headers, body
            chunk = sock.recv(65536)
            assert chunk, f"closed before a whole response: {answer!r}"
            answer += chunk


def envelope(status: int, headers: dict[str, str], body: bytes, code: str) -> dict[str, Any]:
    assert headers["content-type"] == "application/json", (status, headers, body)
    decoded: dict[str, Any] = msgspec.json.decode(body)
    assert set(decoded) == {"error", "run_id", "trace_id"}, decoded
    error = decoded["error"]
    assert error["code"] == code, decoded
    assert (status, error["retryable"]) == (CATALOGUE[code]["status"], CATALOGUE[code]["retryable"]), decoded
    assert decoded["run_id"] == headers["x-run-id"] and len(decoded["run_id"]) == 32
    return decoded


CASES = {
    "no Host": (b"GET /v1/versions HTTP/1.1\r\n\r\n", "BAD_REQUEST"),
    "duplicate Host": (b"GET /v1/versions HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "BAD_REQUEST"),
    "not HTTP": (b"NOT HTTP AT ALL\r\n\r\n", "BAD_REQUEST"),
    "unknown transfer coding": (b"POST /v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", "BAD_REQUEST"),
    "header over 8 KiB": (b"GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n", "HEADERS_TOO_LARGE"),
    "request line over 8 KiB": (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: a\r\n\r\n", "HEADERS_TOO_LARGE"),
    "body over client_max_body_size": (
        b"POST /v1/x.html HTTP/1.1\r\nHost: a\r\nContent-Length: 100000000\r\n\r\n",
        "PAYLOAD_TOO_LARGE",
    ),
    "an internal path asked for": (b"GET /_kumitate_lb/bad_request HTTP/1.1\r\nHost: a\r\n\r\n", "NOT_FOUND"),
}


@pytest.mark.parametrize("request_bytes, code", list(CASES.values()), ids=list(CASES))
def test_a_request_nginx_refuses_is_answered_in_the_envelope(port: int, request_bytes: bytes, code: str) -> None:
    envelope(*exchange(port, request_bytes), code)


def test_no_instance_answering_is_a_retryable_503(port: int) -> None:
    """The handling that was there before (502/503 from nginx), kept: .html would be text/html by type."""
    status, headers, body = exchange(port, b"GET /v1/page.html HTTP/1.1\r\nHost: a\r\n\r\n")
    decoded = envelope(status, headers, body, "SERVICE_UNAVAILABLE")
    assert headers["retry-after"] == "1" and decoded["error"]["retry_after_ms"] == 1000
