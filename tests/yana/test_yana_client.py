"""The typed client and the Speaker provider over HTTP (real loopback server), MCP (in-memory) and local."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import ctx
from yana_http_stub import YanaHttpStub

from handlers.yana import YanaHandlers
from kumitate.clients.yana import (
    HttpTransport,
    LocalTransport,
    McpTransport,
    SpeakerConfig,
    YanaClient,
    YanaError,
    YanaSpeaker,
    shape_text,
)


@pytest.fixture()
def stub(fresh: YanaHandlers) -> Iterator[YanaHttpStub]:
    with YanaHttpStub(fresh) as server:
        yield server


def speaker(stub: YanaHttpStub, **cfg: Any) -> tuple[YanaSpeaker, list[float]]:
    sleeps: list[float] = []
    config = SpeakerConfig(http_base=stub.base_url, **cfg)
    return YanaSpeaker(config.build_client(), config, sleep=sleeps.append), sleeps


def test_http_client_typed_calls(stub: YanaHttpStub) -> None:
    client = YanaClient(HttpTransport(stub.base_url, "dev-token"))
    chat = client.chat("獺祭について教えて", top_k=1, run_id="run-42")
    assert chat["run_id"] == "run-42" and chat["llm"] == "off" and chat["hits"][0]["id"] == "label_0001"
    assert client.search("獺祭", k=2)["total"] == 2
    assert client.ingest(brand_name="獺祭", uri="file:data/yana/images/label_0001.png")["dedup"] is True
    assert client.version()["server_version"] == "1.0.0"
    assert client.healthz()["rag_ok"] is True
    with pytest.raises(YanaError) as err:
        client.ingest(brand_name="x", uri="https://example.com/a.png")
    assert (err.value.code, err.value.status, err.value.retryable) == ("URI_NOT_ALLOWED", 400, False)


def test_speaker_success_meta(stub: YanaHttpStub) -> None:
    provider, sleeps = speaker(stub, filters={"category": "sake"})
    text, meta = provider.generate(
        "獺祭について教えて", run_id="run-1", top_k=1, filters={"category": "sake"}, timeout_ms=5000
    )
    assert text.startswith("せやなー、獺祭「純米大吟醸 45」") and text.endswith("（参考：獺祭/旭酒造/山口県岩国市）")
    assert meta["source"] == "http_v1" and meta["run_id"] == "run-1" and meta["attempts"] == 1
    assert [h["id"] for h in meta["hits"]] == ["label_0001"] and meta["warnings"] == [] and sleeps == []
    assert stub.requests[0]["args"] == {
        "user_text": "獺祭について教えて",
        "use_rag": True,
        "top_k": 1,
        "filters": {"category": "sake"},
        "context": {"runId": "run-1"},  # the seed's context pass-through
    }


def test_speaker_passes_run_and_session_ids_in_context(stub: YanaHttpStub, fresh: YanaHandlers) -> None:
    provider, _ = speaker(stub, session_id="duo-session-9")
    provider.generate("獺祭", run_id="run-7", top_k=1, filters={}, timeout_ms=5000)
    assert stub.requests[-1]["args"]["context"] == {"runId": "run-7", "sessionId": "duo-session-9"}
    provider.generate("獺祭", run_id="run-8", top_k=1, filters={}, timeout_ms=5000, session_id="s-2")
    assert stub.requests[-1]["args"]["context"] == {"runId": "run-8", "sessionId": "s-2"}
    provider.generate("獺祭", run_id="not an id!", top_k=1, filters={}, timeout_ms=5000, session_id="名前")
    assert "context" not in stub.requests[-1]["args"]  # invalid ids are not sent (the server would refuse them)
    entries = fresh.read_logs_today(ctx())["entries"]
    assert [e.get("session_id") for e in entries] == ["duo-session-9", "s-2", None]
    assert [e.get("caller_run_id") for e in entries] == ["run-7", "run-8", None]


class _Replies:
    """Handlers stand-in for LocalTransport: chat answers with the given replies in turn."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.calls = 0

    def chat(self, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        self.calls += 1
        return {"reply": self.replies.pop(0), "hits": [], "llm": "on", "elapsed_ms": 1, "warnings": []}


@pytest.mark.parametrize("reply", ["", "   ", "せやなー、", "せやせや。せやなー！"])
def test_empty_reply_after_shaping_is_a_failure(reply: str) -> None:
    fake = _Replies(reply)
    config = SpeakerConfig(mode="local", fallback_text="せやなー、また後でな。")
    text, meta = YanaSpeaker(config.build_client(fake), config).generate(
        "獺祭", run_id="r", top_k=1, filters={}, timeout_ms=1000
    )
    assert (text, meta["fallback"], meta["error"], meta["attempts"], fake.calls) == (
        "せやなー、また後でな。",
        True,
        "EMPTY_REPLY",
        1,
        1,
    )  # not retried: the same question would get the same answer
    skip = SpeakerConfig(mode="local", on_failure="skip")
    text, meta = YanaSpeaker(skip.build_client(_Replies(reply)), skip).generate(
        "獺祭", run_id="r", top_k=1, filters={}, timeout_ms=1000
    )
    assert (text, meta["skipped"], meta["error"]) == ("", True, "EMPTY_REPLY")


def test_speaker_retries_once_on_retryable(stub: YanaHttpStub) -> None:
    stub.faults = [(429, "RATE_LIMITED")]
    provider, sleeps = speaker(stub)
    text, meta = provider.generate("獺祭", run_id="r", top_k=1, filters={}, timeout_ms=5000)
    assert meta["attempts"] == 2 and len(sleeps) == 1 and 0.2 <= sleeps[0] <= 0.3 and text.startswith("せやなー")


def test_speaker_resends_without_rag_when_rag_is_down(stub: YanaHttpStub) -> None:
    stub.faults = [(503, "RAG_UNAVAILABLE")]
    provider, sleeps = speaker(stub)
    _, meta = provider.generate("獺祭", run_id="r", top_k=1, filters={}, timeout_ms=5000)
    assert stub.requests[1]["args"]["use_rag"] is False and meta["rag_used"] is False
    assert meta["hits"] == [] and "rag_down_resent_without_rag" in meta["warnings"] and sleeps == []


def test_speaker_falls_back_or_skips(stub: YanaHttpStub) -> None:
    stub.faults = [(502, "UPSTREAM_ERROR")] * 2
    provider, _ = speaker(stub, fallback_text="せやなー、また後でな。")
    text, meta = provider.generate("獺祭", run_id="r", top_k=1, filters={}, timeout_ms=5000)
    assert text == "せやなー、また後でな。" and meta["fallback"] is True and meta["error"] == "UPSTREAM_ERROR"
    stub.faults = [(400, "BAD_REQUEST")]
    skipper, sleeps = speaker(stub, on_failure="skip")
    text, meta = skipper.generate("獺祭", run_id="r", top_k=1, filters={}, timeout_ms=5000)
    assert (text, meta["skipped"], meta["attempts"], sleeps) == ("", True, 1, [])  # 4xx: no retry


def test_unreachable_server_falls_back() -> None:
    config = SpeakerConfig(http_base="http://127.0.0.1:9")
    provider = YanaSpeaker(config.build_client(), config, sleep=lambda s: None)
    text, meta = provider.generate("獺祭", run_id="r", top_k=1, filters={}, timeout_ms=1000)
    assert text == config.fallback_text and meta["error"] == "SERVICE_UNAVAILABLE" and meta["attempts"] == 2


def test_client_shaping_after_server_policy() -> None:
    assert shape_text("せやなー、一。せやせや、二。三。四。五。六。（参考：x）") == (
        "せやなー、一。二。三。四。五。",
        ["client_removed_extra_aizuchi", "client_trimmed_to_5_sentences"],
    )
    assert shape_text("せやなー、一。二。（参考：獺祭/旭酒造/山口県岩国市）") == (
        "せやなー、一。二。（参考：獺祭/旭酒造/山口県岩国市）",
        [],
    )


def test_config_from_env() -> None:
    cfg = SpeakerConfig.from_env(
        {
            "SPEAKER_A_MODE": "mcp",
            "SPEAKER_A_USE_RAG": "false",
            "SPEAKER_A_TOP_K": "3",
            "SPEAKER_A_FILTERS_JSON": '{"category":"sake"}',
            "SPEAKER_A_TIMEOUT_MS": "9000",
            "SPEAKER_A_AUTH_TOKEN": "dev-token",
            "SPEAKER_A_ON_FAILURE": "skip",
            "SPEAKER_A_SESSION_ID": "duo-1",
        }
    )
    assert cfg.session_id == "duo-1"
    assert (cfg.mode, cfg.use_rag, cfg.top_k, cfg.filters, cfg.timeout_ms, cfg.auth_token, cfg.on_failure) == (
        "mcp",
        False,
        3,
        {"category": "sake"},
        9000,
        "dev-token",
        "skip",
    )
    with pytest.raises(ValueError):
        SpeakerConfig(mode="carrier-pigeon").build_client()


def test_local_mode(fresh: YanaHandlers) -> None:
    config = SpeakerConfig(mode="local")
    provider = YanaSpeaker(config.build_client(fresh), config)
    text, meta = provider.generate("小樽のお酒ってええよね", run_id="r", top_k=1, filters={}, timeout_ms=1000)
    assert text.startswith("せやせや、宝川") and meta["source"] == "local"
    with pytest.raises(YanaError) as err:
        YanaClient(LocalTransport(fresh)).ingest(brand_name="x", uri="ftp://x")
    assert err.value.code == "URI_NOT_ALLOWED"


def test_mcp_transport_in_memory(fresh: YanaHandlers) -> None:
    from fastmcp import FastMCP
    from fastmcp.tools import ToolResult
    from mcp_types import TextContent

    from kumitate.context import CallContext
    from kumitate.errors import ToolError

    mcp = FastMCP("yana-test")

    @mcp.tool
    def chat(user_text: str, use_rag: bool = True, top_k: int = 5, filters: dict | None = None) -> Any:
        ctx = CallContext(service="yana", tool="chat", transport="mcp", run_id="m", trace_id="t")
        try:
            return fresh.chat(
                {"user_text": user_text, "use_rag": use_rag, "top_k": top_k, "filters": filters or {}}, ctx
            )
        except ToolError as exc:
            body = {"error": {"code": exc.code, "message": exc.message, "retryable": False}}
            return ToolResult(
                content=[TextContent(type="text", text=exc.message)], structured_content=body, is_error=True
            )

    client = YanaClient(McpTransport(mcp))
    out = client.chat("獺祭について教えて", top_k=1)
    assert out["hits"][0]["id"] == "label_0001" and out["reply"].startswith("せやなー")
    with pytest.raises(YanaError) as err:
        client.chat("   ")
    assert err.value.code == "BAD_REQUEST"
