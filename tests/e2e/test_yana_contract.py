"""Seed 001 contract tests: the duo-side SpeakerProvider against the real yana server.

The server runs in a subprocess on loopback with OPENAI_* pointing at a fault-injecting
OpenAI-compatible upstream (also on loopback). Six families: normal, 429, 408, 5xx,
empty reply, over-long reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kumitate.clients.yana import SpeakerConfig, YanaError, YanaSpeaker
from tests.conftest import LiveServer, start_server, stop_server
from tests.yana.fake_upstream import FakeUpstream

pytestmark = pytest.mark.slow
TOKENS = {"t-duo": {"principal": "duo", "scopes": ["yana"]}, "t-flood": {"principal": "flood", "scopes": ["yana"]}}


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(slow_s=2.0) as fake:
        yield fake


@pytest.fixture(scope="module")
def server(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    root: Path = tmp_path_factory.mktemp("yana-contract")
    env = {
        "OPENAI_BASE_URL": upstream.base_url,
        "OPENAI_API_KEY": "test-key",
        "OPENAI_MODEL": "fake-model",
        "YANA_LLM_DEADLINE_MS": "800",
        "YANA_LLM_BREAKER_FAILURES": "1000",
        "KUMITATE_TOKENS": json.dumps(TOKENS),
    }
    live = start_server(root / "var", root / "server.log", **env)
    yield live
    stop_server(live)


def speaker(server: LiveServer, token: str = "t-duo", **overrides: object) -> YanaSpeaker:
    config = SpeakerConfig(mode="http", http_base=server.url, auth_token=token, backoff_s=0.01, **overrides)  # type: ignore[arg-type]
    return YanaSpeaker(config.build_client(), config)


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[。！？!?])", text) if s.strip()]


def test_normal_reply_uses_the_llm_and_the_voice(server: LiveServer, upstream: FakeUpstream) -> None:
    upstream.default = "normal"
    text, meta = speaker(server).generate(
        "獺祭ってどんなお酒？", run_id="duo-run-1", top_k=3, filters={}, timeout_ms=12000
    )
    assert meta["llm"] == "on" and meta["source"] == "http_v1"
    assert text.startswith(("せやなー", "せやせや"))
    assert "獺祭" in text
    assert meta["run_id"] == "duo-run-1" and meta["trace_id"]
    guard = upstream.requests[-1]["messages"]
    assert any("無視" in m["content"] for m in guard if m["role"] == "system")  # RAG guard is always there


def test_429_is_retried_once_then_falls_back(server: LiveServer) -> None:
    """Drain this principal's chat bucket (5 rps, burst 50) until a 429 follows a success at once,
    so the bucket is empty to within a few ms; both attempts then land well inside the 200 ms refill."""
    flood = speaker(server, token="t-flood")
    previous_ok = False
    for _ in range(200):
        try:
            flood.client.chat("酒", use_rag=False, top_k=1, filters={}, run_id="drain", timeout_s=5)
            previous_ok = True
        except YanaError as exc:
            assert exc.code == "RATE_LIMITED"
            if previous_ok:
                break
            previous_ok = False
    seen: list[str] = []
    chat = flood.client.chat

    def recording_chat(*args: Any, **kwargs: Any) -> Any:
        try:
            return chat(*args, **kwargs)
        except YanaError as exc:
            seen.append(exc.code)
            raise

    flood.client.chat = recording_chat  # type: ignore[method-assign]
    text, meta = flood.generate("十四代は？", run_id="duo-run-2", top_k=3, filters={}, timeout_ms=12000)
    assert seen[0] == "RATE_LIMITED" and meta["attempts"] == 2  # retried exactly once
    if seen == ["RATE_LIMITED", "RATE_LIMITED"]:  # the retry may land after a refill (5 rps): then it succeeds
        assert meta["fallback"] is True and text == SpeakerConfig().fallback_text
    else:
        assert text.startswith(("せやなー", "せやせや"))


def test_408_client_deadline_is_retried_then_skipped_by_configuration(
    server: LiveServer, upstream: FakeUpstream
) -> None:
    upstream.default = "slow"
    text, meta = speaker(server, on_failure="skip").generate(
        "新政は？", run_id="duo-run-3", top_k=3, filters={}, timeout_ms=300
    )
    upstream.default = "normal"
    assert meta["error"] == "REQUEST_TIMEOUT" and meta["attempts"] == 2
    assert text == "" and meta["skipped"] is True


@pytest.mark.parametrize("fault", ["500", "503", "slow", "empty", "garbage"])
def test_upstream_faults_degrade_to_the_template_reply(server: LiveServer, upstream: FakeUpstream, fault: str) -> None:
    upstream.default = fault
    text, meta = speaker(server).generate(
        "久保田の話して", run_id=f"duo-{fault}", top_k=3, filters={}, timeout_ms=12000
    )
    upstream.default = "normal"
    assert meta["llm"] == "off"
    assert text.startswith(("せやなー", "せやせや")) and "久保田" in text
    assert any(w.startswith("llm_fallback") for w in meta["warnings"]), meta["warnings"]


def test_overlong_reply_is_trimmed_and_urls_removed(server: LiveServer, upstream: FakeUpstream) -> None:
    upstream.default = "overlong"
    text, meta = speaker(server).generate("何か話して", run_id="duo-long", top_k=3, filters={}, timeout_ms=12000)
    upstream.default = "normal"
    assert "trimmed_to_5_sentences" in meta["warnings"]
    assert len(sentences(text)) <= 5
    assert "http" not in text
    assert text.count("せやなー") + text.count("せやせや") <= 1


@pytest.mark.parametrize("mode", ["mcp", "mcp-stdio"])
def test_provider_over_mcp_gives_the_same_contract(
    server: LiveServer, upstream: FakeUpstream, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream.default = "normal"
    if mode == "mcp":
        config = SpeakerConfig(mode="mcp", mcp_target=f"{server.url}/mcp/yana", auth_token="t-duo")
    else:
        import sys

        monkeypatch.setenv("KUMITATE_DATA_DIR", str(tmp_path))  # the stdio child inherits it
        config = SpeakerConfig(mode="mcp", mcp_target=f"{sys.executable} -m kumitate mcp --stdio --service yana")
    text, meta = YanaSpeaker(config.build_client(), config).generate(
        "獺祭ってどんなお酒？", run_id="duo-mcp", top_k=3, filters={}, timeout_ms=12000
    )
    assert text.startswith(("せやなー", "せやせや")) and "獺祭" in text
    assert meta["source"].startswith("mcp") and meta["hits"]
