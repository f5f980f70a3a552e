"""Seed 001 contract tests: the duo-side SpeakerProvider against the real yana server.

The server runs in a subprocess on loopback with OPENAI_* pointing at a fault-injecting
OpenAI-compatible upstream (also on loopback). Six families: normal, 429, 408, 5xx,
empty reply, over-long reply — 429 and 408 both from yana itself (rate limit, client deadline)
and from the upstream LLM (through the OpenAI provider: template fallback + warning, never a 5xx),
plus the LLM circuit breaker on a second server with a low failure threshold.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from handlers.yana.client import SpeakerConfig, YanaError, YanaSpeaker
from tests.conftest import LiveServer, start_server, stop_server
from tests.yana.fake_upstream import FakeUpstream

pytestmark = pytest.mark.slow
TOKENS = {"t-duo": {"principal": "duo", "scopes": ["yana"]}, "t-flood": {"principal": "flood", "scopes": ["yana"]}}


def _yana_server(
    upstream: FakeUpstream, root: Path, seeded: Path, *, deadline_ms: int, breaker_failures: int, **env: str
) -> LiveServer:
    """A real server whose yana LLM provider is the fake upstream."""
    return start_server(
        root / "var",
        root / "server.log",
        seeded=seeded,
        OPENAI_BASE_URL=upstream.base_url,
        OPENAI_API_KEY="test-key",
        OPENAI_MODEL="fake-model",
        YANA_LLM_DEADLINE_MS=str(deadline_ms),
        YANA_LLM_BREAKER_FAILURES=str(breaker_failures),
        KUMITATE_TOKENS=json.dumps(TOKENS),
        **env,
    )


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(slow_s=2.0) as fake:
        yield fake


@pytest.fixture(scope="module")
def server(
    upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path
) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("yana-contract")
    live = _yana_server(upstream, root, seeded_data_dir, deadline_ms=800, breaker_failures=1000)
    yield live
    stop_server(live)


def speaker(server: LiveServer, token: str = "t-duo", **overrides: object) -> YanaSpeaker:
    settings: dict[str, Any] = {"backoff_s": 0.01, **overrides}
    config = SpeakerConfig(mode="http", http_base=server.url, auth_token=token, **settings)
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


def _drain_chat_bucket(server: LiveServer, token: str) -> None:
    """Spend this principal's chat tokens (5 rps, burst 50) until the server says the next one is
    ≥ 150 ms away: a request sent within the next 150 ms is certainly refused."""
    headers = {"Authorization": f"Bearer {token}"}
    body = {"user_text": "酒", "use_rag": False, "top_k": 1}
    with httpx.Client(base_url=server.url, headers=headers, timeout=5) as http:
        for _ in range(300):
            response = http.post("/v1/chat", json=body)
            if response.status_code == 429 and response.json()["error"].get("retry_after_ms", 0) >= 150:
                return
            assert response.status_code in (200, 429), response.text
    raise AssertionError("the chat rate limit never engaged")


def test_429_from_yana_is_retried_once_after_backoff_and_then_succeeds(server: LiveServer) -> None:
    """yana's own rate limit: the first attempt is refused (bucket empty), the one retry waits
    backoff_s = 0.3–0.45 s, by which time ≥ 1.5 tokens have refilled, so it must succeed."""
    flood = speaker(server, token="t-flood", backoff_s=0.3)
    seen: list[str] = []
    chat = flood.client.chat

    def recording_chat(*args: Any, **kwargs: Any) -> Any:
        try:
            result = chat(*args, **kwargs)
        except YanaError as exc:
            seen.append(exc.code)
            raise
        seen.append("OK")
        return result

    flood.client.chat = recording_chat  # type: ignore[method-assign]
    _drain_chat_bucket(server, "t-flood")
    text, meta = flood.generate("十四代は？", run_id="duo-run-2", top_k=3, filters={}, timeout_ms=12000)
    assert seen == ["RATE_LIMITED", "OK"] and meta["attempts"] == 2
    assert "fallback" not in meta and meta["llm"] == "on" and meta["run_id"] == "duo-run-2"
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


# upstream fault → (the llm_fallback reason, upstream requests for the call: 2 = the server retried once)
UPSTREAM_FAULTS = {
    "429": ("rate_limited", 2),
    "408": ("upstream_timeout", 2),
    "slow": ("upstream_timeout", 1),  # 2 s upstream vs the 800 ms deadline: no time left to retry
    "500": ("upstream_error", 2),
    "503": ("upstream_error", 2),
    "empty": ("empty_reply", 1),
    "garbage": ("upstream_error", 1),
}


@pytest.mark.parametrize("fault", list(UPSTREAM_FAULTS))
def test_upstream_faults_degrade_to_the_template_reply(server: LiveServer, upstream: FakeUpstream, fault: str) -> None:
    """Through the OpenAI provider: every upstream fault is a 200 template reply with one warning, never a 5xx."""
    reason, requests = UPSTREAM_FAULTS[fault]
    upstream.default = fault
    before = len(upstream.requests)
    started = time.monotonic()
    text, meta = speaker(server).generate(
        "久保田の話して", run_id=f"duo-{fault}", top_k=3, filters={}, timeout_ms=12000
    )
    elapsed = time.monotonic() - started
    upstream.default = "normal"
    assert meta["llm"] == "off" and meta["attempts"] == 1 and "fallback" not in meta  # the server answered 200
    assert text.startswith(("せやなー", "せやせや")) and "久保田" in text
    assert meta["warnings"] == [f"llm_fallback:{reason}"]
    assert len(upstream.requests) - before == requests
    assert elapsed < 1.8  # the 800 ms LLM deadline bounds the whole call, slow upstream included


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


@pytest.fixture(scope="module")
def fragile_upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(slow_s=2.0) as fake:
        yield fake


@pytest.fixture(scope="module")
def fragile(
    fragile_upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path
) -> Iterator[LiveServer]:
    """A second server whose LLM breaker opens after 2 consecutive failures and half-opens after 1 s."""
    live = _yana_server(
        fragile_upstream,
        tmp_path_factory.mktemp("yana-breaker"),
        seeded_data_dir,
        deadline_ms=500,
        breaker_failures=2,
        YANA_LLM_BREAKER_COOLDOWN_S="1",
    )
    yield live
    stop_server(live)


def test_breaker_ignores_429_opens_on_timeouts_and_recovers(
    fragile: LiveServer, fragile_upstream: FakeUpstream
) -> None:
    provider = speaker(fragile)
    client = provider.client

    def turn(run_id: str) -> dict[str, Any]:
        text, meta = provider.generate("獺祭って？", run_id=run_id, top_k=2, filters={}, timeout_ms=12000)
        assert text.startswith(("せやなー", "せやせや")) and "獺祭" in text  # always a voiced reply, never a 5xx
        return meta

    fragile_upstream.default = "429"  # "slow down" is not "down": the breaker stays closed
    for i in range(3):
        assert turn(f"b-429-{i}")["warnings"] == ["llm_fallback:rate_limited"]
    health = client.read_healthz().model_dump(mode="json")
    assert (health["breaker"], health["llm_ok"], health["last_error"]) == ("closed", True, "llm_fallback:rate_limited")

    fragile_upstream.default = "slow"  # each call spends its 500 ms deadline on one attempt: one failure each
    assert turn("b-slow-1")["warnings"] == ["llm_fallback:upstream_timeout"]
    assert client.read_healthz().model_dump(mode="json")["breaker"] == "closed"
    assert turn("b-slow-2")["warnings"] == ["llm_fallback:upstream_timeout"]
    health = client.read_healthz().model_dump(mode="json")
    assert (health["breaker"], health["llm_ok"], health["last_error"]) == (
        "open",
        False,
        "llm_fallback:upstream_timeout",
    )

    sent = len(fragile_upstream.requests)
    started = time.monotonic()
    meta = turn("b-open")  # open: the template answers at once, the upstream is not called
    assert meta["warnings"] == ["llm_fallback:circuit_open"] and meta["llm"] == "off"
    assert len(fragile_upstream.requests) == sent and time.monotonic() - started < 0.5

    fragile_upstream.default = "normal"
    time.sleep(1.1)  # cooldown → half-open: one trial call goes out, succeeds, closes the breaker
    assert client.read_healthz().model_dump(mode="json")["breaker"] == "half_open"
    meta = turn("b-recovered")
    assert meta["llm"] == "on" and meta["warnings"] == []
    assert client.read_healthz().model_dump(mode="json")["breaker"] == "closed"
