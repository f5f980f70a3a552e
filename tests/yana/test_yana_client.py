"""The Speaker provider over the generated yana client: HTTP (real loopback server) and local (the pipeline in process)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import copy_sqlite, ctx, make_settings
from yana_http_stub import YanaHttpStub

from generated import errors
from generated.yana.client import YanaClient
from generated.yana.models import ChatInput, IngestInput, SearchInput
from handlers.yana import YanaHandlers
from handlers.yana.client import SpeakerConfig, YanaError, YanaSpeaker, shape_text
from kumitate.runtime import Runtime


@pytest.fixture()
def stub(fresh: YanaHandlers) -> Iterator[YanaHttpStub]:
    with YanaHttpStub(fresh) as server:
        yield server


def speaker(stub: YanaHttpStub, **cfg: Any) -> tuple[YanaSpeaker, list[float]]:
    sleeps: list[float] = []
    config = SpeakerConfig(http_base=stub.base_url, **cfg)
    return YanaSpeaker(config.build_client(), config, sleep=sleeps.append), sleeps


def test_http_client_typed_calls(stub: YanaHttpStub) -> None:
    with YanaClient.http(stub.base_url, token="dev-token") as client:
        chat = client.chat(ChatInput(user_text="獺祭について教えて", top_k=1), run_id="run-42")
        assert chat.run_id == "run-42" and chat.llm == "off" and chat.hits[0].id == "label_0001"
        assert client.search(SearchInput(query_text="獺祭", k=2)).total == 2
        assert client.ingest(IngestInput(brand_name="獺祭", uri="file:data/yana/images/label_0001.png")).dedup is True
        assert client.read_version().server_version == "1.0.0"
        assert client.read_healthz().rag_ok is True
        with pytest.raises(errors.UriNotAllowedError) as err:
            client.ingest(IngestInput(brand_name="x", uri="https://example.com/a.png"))
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


@pytest.fixture()
def runtime(tmp_path: Path, seeded_db: Path) -> Iterator[Runtime]:
    """yana in process (the pipeline and the handlers, no server) on a copy of the loaded database."""
    copy_sqlite(seeded_db, tmp_path / seeded_db.name)
    runtime = Runtime(make_settings(tmp_path, {"YANA_EXPOSE_LOGS": "1"}), ["yana"])
    yield runtime
    runtime.close()


def replying(runtime: Runtime, monkeypatch: pytest.MonkeyPatch, *replies: str) -> list[int]:
    """chat answers with the given replies in turn (a stand-in LLM); returns the call counter."""
    calls = [0]
    pending = list(replies)

    def chat(input: Any, ctx: Any) -> dict[str, Any]:
        calls[0] += 1
        reply = pending.pop(0)
        return {"reply": reply, "hits": [], "llm": "on", "elapsed_ms": 1, "rag_hit_count": 0, "warnings": []}

    monkeypatch.setattr(runtime.handlers["yana"], "chat", chat)
    return calls


@pytest.mark.parametrize("reply", ["", "   ", "せやなー、", "せやせや。せやなー！"])
def test_empty_reply_after_shaping_is_a_failure(runtime: Runtime, monkeypatch: pytest.MonkeyPatch, reply: str) -> None:
    calls = replying(runtime, monkeypatch, reply, reply)
    config = SpeakerConfig(mode="local", fallback_text="せやなー、また後でな。")
    text, meta = YanaSpeaker(config.build_client(runtime), config).generate(
        "獺祭", run_id="r", top_k=1, filters={}, timeout_ms=1000
    )
    assert (text, meta["fallback"], meta["error"], meta["attempts"], calls[0]) == (
        "せやなー、また後でな。",
        True,
        "EMPTY_REPLY",
        1,
        1,
    )  # not retried: the same question would get the same answer
    skip = SpeakerConfig(mode="local", on_failure="skip")
    text, meta = YanaSpeaker(skip.build_client(runtime), skip).generate(
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


def test_local_mode_goes_through_the_pipeline(runtime: Runtime) -> None:
    config = SpeakerConfig(mode="local")
    client = config.build_client(runtime)
    provider = YanaSpeaker(client, config)
    text, meta = provider.generate("小樽のお酒ってええよね", run_id="r-local", top_k=1, filters={}, timeout_ms=1000)
    assert text.startswith("せやせや、宝川") and meta["source"] == "local" and meta["run_id"] == "r-local"
    with pytest.raises(errors.UriNotAllowedError):
        client.ingest({"brand_name": "x", "uri": "ftp://x"})
    # what only the pipeline does: the schema check (a closed filters object), the success envelope,
    # the idempotency key of ingest, the journal of a resource the runtime enables
    with pytest.raises(errors.BadRequestError) as err:
        client.chat({"user_text": "獺祭", "filters": {"colour": "red"}})
    assert "colour" in err.value.message
    out = client.search({"query_text": "獺祭", "k": 1}, run_id="r-search")
    assert (out.run_id, out.server_version, out.policy_version) == ("r-search", "1.0.0", "say-2025-09-23")
    image = {"brand_name": "獺祭", "uri": "file:data/yana/images/label_0001.png"}
    first = client.ingest(image, idempotency_key="k-1")
    replay = client.ingest(image, idempotency_key="k-1")  # the stored result, not a second run
    assert (replay.id, replay.dedup, replay.hash_sha1) == (first.id, first.dedup, first.hash_sha1)
    journal = client.read_logs_today()  # a resource, through the pipeline too
    assert {"chat", "search", "ingest"} <= {e["tool"] for e in journal.model_dump(mode="json")["entries"]}
    client.close()


def test_ask_for_an_unknown_mode() -> None:
    with pytest.raises(ValueError):
        SpeakerConfig(mode="carrier-pigeon").build_client()
    assert issubclass(errors.RagUnavailableError, YanaError)
