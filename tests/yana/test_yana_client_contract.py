"""The real duo-talk client, request for request: a real server over HTTP, driven exactly as the client drives it.

Shapes taken from kumaxxp/duo-talk (read, not copied: the repository carries no licence):
* providers/speaker_http.py `SpeakerAHttpProvider.generate`: POST {base}/v1/chat with the body serialised
  by json.dumps (ensure_ascii, so \\uXXXX escapes), headers Content-Type: application/json,
  Accept: application/json, User-Agent: duo-talk/ProviderAHttp, X-Run-Id: <run id, a uuid4 or "">,
  Authorization: Bearer <token>; body {user_text, use_rag, top_k, filters, context: {run_id, disable_sayana: true}};
  filters = SPEAKER_A_FILTERS_JSON (e.g. {"category": "sake"}) merged with the caller's category/region/brewery.
  On the first turn it re-asks with a newline and a 補足 line appended when the reply opens with せやなー/せやせや.
* docs/mcp/tools.search.schema.json: query_text and page/page_size may be null, sort_by relevance|recency, k default 5.
* docs/mcp/tools.ingest.schema.json: {image: "URI or handle to image content", category, region}, no brand.

Any 4xx the seed does not call for fails the suite.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import REPO, LiveServer, start_server, stop_server

pytestmark = pytest.mark.slow
TOKEN = "dev-token"
LABEL_PNG = (REPO / "data/yana/images/label_0001.png").read_bytes()


class ImageHost:
    """A real HTTP server on 127.0.0.1 serving label images (the client's "URI to image content")."""

    def __init__(self, files: dict[str, bytes]) -> None:
        files_ = files

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = files_.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def images() -> Iterator[ImageHost]:
    host = ImageHost({"/label.png": LABEL_PNG, "/new.png": (REPO / "data/yana/images/label_0150.png").read_bytes()})
    yield host
    host.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, images: ImageHost, seeded_data_dir: Path) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("duo-client")
    live = start_server(
        root / "var",
        root / "server.log",
        seeded=seeded_data_dir,
        KUMITATE_TOKENS=json.dumps({TOKEN: {"principal": "duo", "scopes": ["yana"]}}),
        YANA_INGEST_URL_ALLOW=images.host,
    )
    yield live
    stop_server(live)


def client_headers(run_id: str) -> dict[str, str]:
    """SpeakerAHttpProvider._headers plus the Content-Type it adds for /v1/chat."""
    return {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": "duo-talk/ProviderAHttp",
        "X-Run-Id": run_id,
        "Authorization": f"Bearer {TOKEN}",
    }


def client_chat(server: LiveServer, user_text: str, run_id: str, filters: dict[str, Any]) -> httpx.Response:
    payload = {
        "user_text": user_text,
        "use_rag": True,
        "top_k": 5,
        "filters": {"category": "sake", **{k: v for k, v in filters.items() if k in {"category", "region", "brewery"}}},
        "context": {"run_id": run_id, "disable_sayana": True},
    }
    return httpx.post(
        f"{server.url}/v1/chat", content=json.dumps(payload).encode("utf-8"), headers=client_headers(run_id), timeout=15
    )


def post(server: LiveServer, path: str, body: dict[str, Any], run_id: str = "duo-run") -> httpx.Response:
    return httpx.post(f"{server.url}{path}", json=body, headers=client_headers(run_id), timeout=15)


def test_chat_exactly_as_the_http_provider_sends_it(server: LiveServer) -> None:
    run_id = str(uuid.uuid4())
    response = client_chat(server, "獺祭ってどんなお酒？", run_id, {"region": "", "brewery": ""})
    assert response.status_code == 200, response.text
    js = response.json()
    # what the provider reads: reply, hits, elapsed_ms, trace_id, warnings, llm, versions, rag_hit_count
    assert js["reply"].strip() and js["hits"] and js["rag_hit_count"] == len(js["hits"])
    assert js["llm"] in ("on", "off") and isinstance(js["elapsed_ms"], int) and js["trace_id"]
    assert (js["server_version"], js["policy_version"]) == ("1.0.0", "say-2025-09-23")
    assert js["run_id"] == run_id and response.headers["x-run-id"] == run_id
    assert response.headers["x-trace-id"] == js["trace_id"] and "x-request-duration-ms" in response.headers
    # disable_sayana: true is honoured, so the client's first-turn re-ask is never triggered
    assert not js["reply"].startswith(("せやなー", "せやせや")) and "獺祭" in js["reply"]


def test_first_turn_re_ask_and_empty_run_id_are_accepted(server: LiveServer) -> None:
    regen = "獺祭は？\n補足: 初手は同意ワード（『せやなー』『せやせや』）を使わず、1〜2文で自己紹介から自然に始めて。"
    response = client_chat(server, regen, "", {})  # RUN_ID unset → the client sends "" in header and context
    assert response.status_code == 200, response.text
    assert response.headers["x-run-id"] and response.json()["run_id"] == response.headers["x-run-id"]


def test_unknown_context_keys_are_ignored(server: LiveServer) -> None:
    body = {"user_text": "久保田", "context": {"run_id": "r", "disable_sayana": False, "mood": "陽気", "turn": 3}}
    response = post(server, "/v1/chat", body)
    assert response.status_code == 200, response.text
    assert response.json()["reply"].startswith("せやなー")  # disable_sayana false: yana's own opener


def test_search_with_the_client_schema_shapes(server: LiveServer) -> None:
    base = {"filters": {"category": "sake"}}
    listing = post(server, "/v1/search", {**base, "query_text": None, "page": None, "page_size": None})
    assert listing.status_code == 200, listing.text
    assert listing.json()["total"] == 5  # no k: the seed's default of 5
    for sort_by in ("relevance", "recency"):
        response = post(server, "/v1/search", {"query_text": "だっさい", "k": 5, "sort_by": sort_by})
        assert response.status_code == 200, response.text
        assert {h["id"] for h in response.json()["hits"]} == {"label_0001", "label_0002", "label_0003"}
    wrong = post(server, "/v1/search", {"query_text": "獺祭", "sort_by": "newest"})
    assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "BAD_REQUEST"
    assert "recency" in wrong.json()["error"]["message"]  # the allowed values are named


def test_ingest_with_the_client_schema_shape(server: LiveServer, images: ImageHost) -> None:
    new = post(server, "/v1/ingest", {"image": f"http://{images.host}/new.png", "category": "sake", "region": "石川県"})
    assert new.status_code == 200, new.text
    body = new.json()
    assert body["dedup"] is True and body["id"] == "label_0150"  # the bundled image, fetched and recognised
    known = post(server, "/v1/ingest", {"image": f"http://{images.host}/label.png", "category": "sake"})
    assert known.status_code == 200 and known.json()["id"] == "label_0001"
    missing = post(server, "/v1/ingest", {"image": f"http://{images.host}/nope.png", "category": "sake"})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND"
    elsewhere = post(server, "/v1/ingest", {"image": "https://example.com/label.png", "category": "sake"})
    assert elsewhere.status_code == 400 and elsewhere.json()["error"]["code"] == "URI_NOT_ALLOWED"
    server_path = post(server, "/v1/ingest", {"image": "/etc/passwd.png", "category": "sake"})
    assert server_path.json()["error"]["code"] == "URI_NOT_ALLOWED"


def test_an_unechoable_run_id_is_replaced(server: LiveServer) -> None:
    response = httpx.post(
        f"{server.url}/v1/search",
        json={"query_text": "獺祭"},
        headers={**client_headers("x" * 200)},
        timeout=15,
    )
    assert response.status_code == 200
    assert response.headers["x-run-id"] != "x" * 200 and response.json()["run_id"] == response.headers["x-run-id"]


def test_the_replacement_is_said_in_a_header(server: LiveServer) -> None:
    response = post(server, "/v1/search", {"query_text": "獺祭"}, run_id="x" * 200)
    assert response.headers["x-run-id-replaced"] == "invalid"


def test_an_idempotent_replay_reports_one_run_id(server: LiveServer, images: ImageHost) -> None:
    body = {"image": f"http://{images.host}/label.png", "category": "sake"}
    headers = {**client_headers("first-run"), "Idempotency-Key": "k-1"}
    first = httpx.post(f"{server.url}/v1/ingest", json=body, headers=headers, timeout=15)
    replay = httpx.post(f"{server.url}/v1/ingest", json=body, headers={**headers, "X-Run-Id": "second-run"}, timeout=15)
    assert first.status_code == replay.status_code == 200
    assert replay.json()["run_id"] == replay.headers["x-run-id"]


def test_nothing_sent_by_the_client_is_logged(server: LiveServer) -> None:
    client_chat(server, "秘密の酒の話", "log-check", {})
    assert "秘密" not in Path(server.log).read_text(encoding="utf-8", errors="replace")
