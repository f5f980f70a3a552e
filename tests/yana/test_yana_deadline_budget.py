"""Issue 21: with KUMITATE_MAX_TIMEOUT_MS below the LLM deadline and a slow LLM, chat still answers in time.

A real server (subprocess, uvicorn) and a real slow upstream (tests/yana/fake_upstream.py, a stdlib
HTTP server that sleeps before answering). Before the fix the LLM call used the whole 5 s call deadline
and the caller got 408 REQUEST_TIMEOUT until the breaker opened.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from fake_upstream import FakeUpstream

from tests.conftest import start_server, stop_server

pytestmark = pytest.mark.slow

CAP_MS = 2500  # the operator's cap: below yana's 8 s LLM deadline, above its 1 s fallback reserve


def test_slow_llm_leaves_time_for_the_template_fallback(tmp_path: Path, seeded_data_dir: Path) -> None:
    with FakeUpstream(default="slow", slow_s=8.0) as upstream:
        server = start_server(
            tmp_path / "var",
            tmp_path / "server.log",
            seeded=seeded_data_dir,
            OPENAI_BASE_URL=upstream.base_url,
            OPENAI_API_KEY="k",
            OPENAI_MODEL="m",
            KUMITATE_MAX_TIMEOUT_MS=str(CAP_MS),
            YANA_LLM_BREAKER_FAILURES="10",  # the breaker must not be what saves the call
        )
        try:
            for _ in range(3):
                started = time.monotonic()
                response = httpx.post(f"{server.url}/v1/chat", json={"user_text": "獺祭について教えて"}, timeout=30)
                elapsed = time.monotonic() - started
                assert response.status_code == 200, response.text
                body = response.json()
                assert body["llm"] == "off" and body["warnings"][0] == "llm_fallback:upstream_timeout"
                assert body["reply"].startswith("せやなー") and "獺祭" in body["reply"]
                assert elapsed < CAP_MS / 1000 + 1.0  # answered within the capped deadline (plus transport)
        finally:
            stop_server(server)
