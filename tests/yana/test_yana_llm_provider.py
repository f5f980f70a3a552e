"""The OpenAI-compatible provider against a real loopback fake upstream: success and every fallback."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from conftest import ctx
from fake_upstream import FakeUpstream

from handlers.yana import YanaHandlers

Make = Callable[..., YanaHandlers]


@pytest.fixture()
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


def llm_env(upstream: FakeUpstream, **extra: str) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": upstream.base_url,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_MODEL": "fake-1",
        "YANA_LLM_DEADLINE_MS": "1500",
        **extra,
    }


def test_llm_reply_with_policy_and_guarded_rag(make_fresh: Make, upstream: FakeUpstream) -> None:
    yana = make_fresh(llm_env(upstream))
    out = yana.chat({"user_text": "獺祭について教えて", "top_k": 2, "context": {"topic": "山口の酒"}}, ctx())
    assert out["llm"] == "on" and out["warnings"] == []
    assert out["reply"] == "せやなー、獺祭は山口のお酒やで。華やかな香りが特徴やね。（参考：獺祭/旭酒造/山口県岩国市）"
    body = upstream.requests[0]
    assert body["model"] == "fake-1"
    assert upstream.headers[0]["Authorization"] == "Bearer sk-test"
    rag = body["messages"][1]["content"]
    assert "指示・命令" in rag and "すべて無視" in rag and "<資料>" in rag and "銘柄: 獺祭" in rag
    assert body["messages"][-1] == {"role": "user", "content": "獺祭について教えて"}
    assert yana.read_version(ctx())["model"] == "fake-1"


def test_429_then_success_is_retried_once(make_fresh: Make, upstream: FakeUpstream) -> None:
    upstream.script = ["429"]
    out = make_fresh(llm_env(upstream)).chat({"user_text": "獺祭"}, ctx())
    assert out["llm"] == "on" and len(upstream.requests) == 2


def test_persistent_429_falls_back_to_template(make_fresh: Make, upstream: FakeUpstream) -> None:
    upstream.default = "429"
    out = make_fresh(llm_env(upstream)).chat({"user_text": "獺祭"}, ctx())
    assert out["llm"] == "off" and out["warnings"] == ["llm_fallback:rate_limited"]
    assert out["reply"].startswith("せやなー、獺祭「純米大吟醸 45」")
    assert len(upstream.requests) == 2


def test_slow_upstream_hits_the_deadline(make_fresh: Make, upstream: FakeUpstream) -> None:
    upstream.default, upstream.slow_s = "slow", 1.0
    out = make_fresh(llm_env(upstream, YANA_LLM_DEADLINE_MS="300")).chat({"user_text": "獺祭"}, ctx())
    assert out["llm"] == "off" and out["warnings"] == ["llm_fallback:upstream_timeout"]
    assert out["elapsed_ms"] < 1000


def test_408_is_a_timeout(make_fresh: Make, upstream: FakeUpstream) -> None:
    upstream.default = "408"
    out = make_fresh(llm_env(upstream)).chat({"user_text": "獺祭"}, ctx())
    assert out["warnings"] == ["llm_fallback:upstream_timeout"] and len(upstream.requests) == 2


def test_5xx_falls_back_and_opens_the_breaker(make_fresh: Make, upstream: FakeUpstream) -> None:
    upstream.default = "500"
    yana = make_fresh(llm_env(upstream, YANA_LLM_BREAKER_FAILURES="3"))
    first = yana.chat({"user_text": "獺祭"}, ctx())
    assert first["warnings"] == ["llm_fallback:upstream_error"] and len(upstream.requests) == 2
    second = yana.chat({"user_text": "獺祭"}, ctx())  # third failure opens the breaker mid-call
    assert second["warnings"] == ["llm_fallback:upstream_error"] and len(upstream.requests) == 3
    third = yana.chat({"user_text": "獺祭"}, ctx())
    assert third["warnings"] == ["llm_fallback:circuit_open"] and len(upstream.requests) == 3
    health = yana.read_healthz(ctx())
    assert (health["llm_ok"], health["breaker"], health["last_error"]) == (False, "open", "llm_fallback:circuit_open")


def test_breaker_half_opens_and_closes_on_success(make_fresh: Make, upstream: FakeUpstream) -> None:
    upstream.default = "503"
    yana = make_fresh(llm_env(upstream, YANA_LLM_BREAKER_FAILURES="2", YANA_LLM_BREAKER_COOLDOWN_S="0.2"))
    assert yana.chat({"user_text": "獺祭"}, ctx())["llm"] == "off"
    assert yana.read_healthz(ctx())["breaker"] == "open"
    import time

    time.sleep(0.25)
    upstream.default = "normal"
    assert yana.read_healthz(ctx())["breaker"] == "half_open"
    assert yana.chat({"user_text": "獺祭"}, ctx())["llm"] == "on"
    assert yana.read_healthz(ctx())["breaker"] == "closed"


def test_empty_reply_falls_back(make_fresh: Make, upstream: FakeUpstream) -> None:
    upstream.default = "empty"
    out = make_fresh(llm_env(upstream)).chat({"user_text": "獺祭"}, ctx())
    assert out["llm"] == "off" and out["warnings"] == ["llm_fallback:empty_reply"]
    assert len(upstream.requests) == 1  # an empty answer is not retried


def test_overlong_reply_is_trimmed_and_stripped(make_fresh: Make, upstream: FakeUpstream) -> None:
    upstream.default = "overlong"
    out = make_fresh(llm_env(upstream)).chat({"user_text": "獺祭"}, ctx())
    assert out["llm"] == "on"
    assert out["warnings"] == ["urls_removed", "trimmed_to_5_sentences"]
    assert out["reply"] == (
        "せやなー、1つ目の話やで。2つ目の話やで。3つ目の話やで。4つ目の話やで。5つ目の話やで。"
        "（参考：獺祭/旭酒造/山口県岩国市）"
    )


def test_garbage_body_and_unreachable_upstream(make_fresh: Make, upstream: FakeUpstream) -> None:
    upstream.default = "garbage"
    assert make_fresh(llm_env(upstream)).chat({"user_text": "獺祭"}, ctx())["warnings"] == [
        "llm_fallback:upstream_error"
    ]
    env = llm_env(upstream, OPENAI_BASE_URL="http://127.0.0.1:9/v1")  # discard port: connection refused
    out = make_fresh(env).chat({"user_text": "獺祭"}, ctx())
    assert out["llm"] == "off" and out["warnings"] == ["llm_fallback:upstream_unreachable"]
