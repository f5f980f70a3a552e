"""Ingest from an external URI (seed: JSON + 外部URI): allow-list, size and time limits, no redirects, no server paths."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from conftest import REPO, ctx

from handlers.yana import YanaHandlers
from kumitate.errors import ToolError

PNG = (REPO / "data/yana/images/label_0001.png").read_bytes()


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/slow.png":
            time.sleep(3)
        if self.path == "/moved.png":
            self.send_response(302)
            self.send_header("Location", "/label.png")
            self.end_headers()
            return
        body = {"/label.png": PNG, "/slow.png": PNG, "/big.png": b"\x89PNG" + b"\0" * (6 * 1024 * 1024)}.get(self.path)
        self.send_response(200 if body else 404)
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        with contextlib.suppress(OSError):  # the client gave up (size limit): expected
            self.wfile.write(body or b"")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def host() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture()
def fetching(make_fresh: Callable[..., YanaHandlers], host: str) -> YanaHandlers:
    return make_fresh({"YANA_INGEST_URL_ALLOW": f"{host},*.example.org", "YANA_INGEST_FETCH_TIMEOUT_MS": "800"})


def code(yana: YanaHandlers, params: dict[str, Any]) -> str:
    with pytest.raises(ToolError) as err:
        yana.ingest(params, ctx())
    return err.value.code


def test_allowed_host_is_fetched(fetching: YanaHandlers, host: str) -> None:
    for field in ("image", "uri"):
        result = fetching.ingest({field: f"http://{host}/label.png", "category": "sake"}, ctx())
        assert result["id"] == "label_0001" and result["dedup"] is True


def test_limits_and_refusals(fetching: YanaHandlers, host: str) -> None:
    assert code(fetching, {"uri": f"http://{host}/big.png"}) == "PAYLOAD_TOO_LARGE"
    started = time.monotonic()
    assert code(fetching, {"uri": f"http://{host}/slow.png"}) == "UPSTREAM_TIMEOUT"
    assert time.monotonic() - started < 2.5  # the fetch deadline, not the upstream's 3 s
    assert code(fetching, {"uri": f"http://{host}/moved.png"}) == "UPSTREAM_ERROR"  # redirects are not followed
    assert code(fetching, {"uri": f"http://{host}/missing.png"}) == "NOT_FOUND"
    assert code(fetching, {"uri": f"http://user:pw@{host}/label.png"}) == "URI_NOT_ALLOWED"
    assert code(fetching, {"uri": "http://127.0.0.2/label.png"}) == "URI_NOT_ALLOWED"  # not on the list
    assert code(fetching, {"image": "/etc/hosts.png"}) == "URI_NOT_ALLOWED"  # a server path is never opened
    assert code(fetching, {"image": "ftp://example.org/x.png"}) == "URI_NOT_ALLOWED"


def test_no_allow_list_means_no_fetch(fresh: YanaHandlers, host: str) -> None:
    assert code(fresh, {"uri": f"http://{host}/label.png"}) == "URI_NOT_ALLOWED"


def test_upload_handle_names_an_earlier_upload(fresh: YanaHandlers) -> None:
    import base64
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (40, 40), (10, 120, 30)).save(buf, format="PNG")
    first = fresh.ingest({"image": base64.b64encode(buf.getvalue()).decode(), "brand_name": "テスト"}, ctx())
    handle = f"uploads/{first['hash_sha1']}.png"
    for field in ("image", "uri"):
        again = fresh.ingest({field: handle, "category": "sake"}, ctx())
        assert again["id"] == first["id"] and again["dedup"] is True
    assert code(fresh, {"image": "uploads/../../etc/passwd"}) == "URI_NOT_ALLOWED"
