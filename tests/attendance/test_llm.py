"""The optional LLM fallback against a real OpenAI-compatible fake on 127.0.0.1 (http.server in a thread)."""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from handlers.attendance.core.llm import LlmConfig, OpenAIChat, llm_fallback, output_schema, validate_llm_output
from handlers.attendance.core.names import Directory
from handlers.attendance.core.parse import parse_attendance_intent
from handlers.attendance.settings import AttendanceSettings
from kumitate.context import CallContext
from tests.attendance.conftest import TEAM, call, opened

INVITEES: list[dict[str, Any]] = [
    *TEAM,
    {"email": "Ext.Person@Example.com", "display_name": "外部 花子", "aliases": ["ハナコ"], "groups": ["社外"]},
]
TEXT = "みんなで集まりたい。yamada@example.com にも共有して"
KEYS = set(Directory(INVITEES).keys)


class FakeLLM:
    """Answers every /v1/chat/completions call with `reply` (a JSON object, or raw text) and records the calls."""

    def __init__(self) -> None:
        self.reply: Any = None
        self.calls: list[dict[str, Any]] = []
        self.delay = 0.0  # seconds the fake waits before answering (released early at teardown)
        self.release = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.calls.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                fake.release.wait(fake.delay)
                content = fake.reply if isinstance(fake.reply, str) else json.dumps(fake.reply, ensure_ascii=False)
                data = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
                self.send_response(200 if self.path == "/v1/chat/completions" else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.env = {
            "ATTENDANCE_LLM_BASE_URL": f"http://127.0.0.1:{self.server.server_address[1]}/v1/",
            "ATTENDANCE_LLM_MODEL": "fake-model",
            "ATTENDANCE_LLM_API_KEY": "test-key",
        }

    def client(self) -> OpenAIChat:
        config = AttendanceSettings.from_env(self.env).llm_config()
        assert config is not None
        return OpenAIChat(config)

    def prompt(self) -> str:
        content: str = self.calls[-1]["body"]["messages"][0]["content"]
        return content


def test_the_settings_build_the_config_once_and_keep_the_key_secret(llm: FakeLLM) -> None:
    settings = AttendanceSettings.from_env(llm.env)
    assert settings.llm_config() == LlmConfig(
        base_url=llm.env["ATTENDANCE_LLM_BASE_URL"].rstrip("/"), model="fake-model", api_key=settings.llm_api_key
    )
    assert "test-key" not in repr(settings) and "test-key" not in repr(settings.llm_config())
    assert AttendanceSettings.from_env({}).llm_config() is None  # unset: rules only
    assert AttendanceSettings.from_env({"ATTENDANCE_LLM_BASE_URL": ""}).llm_config() is None  # empty means unset


def test_a_base_url_that_is_not_http_stops_the_start_naming_the_variable() -> None:
    with pytest.raises(ValueError, match="ATTENDANCE_LLM_BASE_URL"):
        AttendanceSettings.from_env({"ATTENDANCE_LLM_BASE_URL": "localhost:8080/v1"})


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLM]:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    fake = FakeLLM()
    thread = threading.Thread(target=fake.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.release.set()
        fake.server.shutdown()
        fake.server.server_close()
        thread.join(timeout=5)


def request() -> dict[str, Any]:
    return {"text": TEXT, "invitees": INVITEES}


def answer(text: str) -> dict[str, Any]:
    """A well-formed model answer: what the grammar makes of a clearer sentence."""
    out = parse_attendance_intent({"text": text, "invitees": INVITEES})
    out.pop("matched_pattern")
    return out


def test_accepts_a_valid_answer_and_sends_no_email(llm: FakeLLM) -> None:
    result = parse_attendance_intent(request())
    assert result["confidence"] < 0.7
    llm.reply = answer("全員必須")
    out = llm_fallback(request(), result, KEYS, llm.client())
    assert out["matched_pattern"] == "llm.fallback"
    assert (out["attendance_rule"]["type"], out["confidence"], out["needs_clarification"]) == ("ALL", 0.95, [])
    assert out["share_intent"] == result["share_intent"]  # the rule-based share_intent always stands

    call = llm.calls[-1]
    assert (call["path"], call["auth"], call["body"]["model"]) == (
        "/v1/chat/completions",
        "Bearer test-key",
        "fake-model",
    )
    prompt = llm.prompt()
    for address in ("yamada@example.com", "Ext.Person@Example.com", "ext.person@example.com"):
        assert address not in prompt
    assert "<email>" in prompt
    schema = json.dumps(output_schema(), ensure_ascii=False, separators=(",", ":"))
    assert schema in prompt and '"ParseAttendanceIntentOutput"' in prompt and "AttendanceRule" in prompt
    sent = json.loads(prompt.split("\nInput:\n", 1)[1])
    assert sent["invitees"][-1] == {
        "invitee_key": sorted(KEYS - {f"u:{i}" for i in range(1, 7)})[0],
        "display_name": "外部 花子",
        "aliases": ["ハナコ"],
        "groups": ["社外"],
    }
    assert all(set(i) <= {"invitee_key", "display_name", "reading", "aliases", "groups"} for i in sent["invitees"])
    assert "share_intent" not in sent["rule_based_result"]


def test_rejects_answers_that_break_the_service_rules(llm: FakeLLM) -> None:
    result = parse_attendance_intent(request())
    confident_questions = answer("全員必須")
    confident_questions["needs_clarification"] = ["本当に全員ですか？"]
    auto_with_questions = answer("誰か1人")
    auto_with_questions["needs_clarification"] = ["誰でもいいですか？"]
    auto_with_questions["confidence"] = 0.6
    unsure_without_questions = answer("3人以上")
    unsure_without_questions["confidence"] = 0.5
    stranger = answer("山田さんは必須")
    stranger["attendance_rule"]["rule"]["required_invitee_keys"] = ["u:99"]
    for reply in (
        confident_questions,
        auto_with_questions,
        unsure_without_questions,
        stranger,
        {"attendance_rule": {}},
        "not json at all",
    ):
        llm.reply = reply
        assert llm_fallback(request(), result, KEYS, llm.client()) is result
    assert len(llm.calls) == 6


def test_service_rule_problems_are_named() -> None:
    base = answer("誰か1人")
    assert validate_llm_output(base, KEYS) == []
    bad = copy.deepcopy(base)
    bad["needs_clarification"] = ["?"]
    assert validate_llm_output(bad, KEYS) == [
        "needs_clarification is not empty but confidence is not below 0.7",
        "a result with questions must not auto-finalise",
    ]
    bad = copy.deepcopy(base)
    bad["confidence"] = 0.4
    bad["finalize_policy"]["auto_finalize"] = False
    assert validate_llm_output(bad, KEYS) == [
        "confidence is below 0.7 but needs_clarification is empty",
        "finalize_policy differs from attendance_rule.finalize_policy",
    ]


def test_not_called_when_confident_or_unconfigured(llm: FakeLLM) -> None:
    confident = parse_attendance_intent({"text": "全員必須", "invitees": INVITEES})
    assert llm_fallback({"text": "全員必須", "invitees": INVITEES}, confident, KEYS, llm.client()) is confident
    unsure = parse_attendance_intent(request())
    assert llm_fallback(request(), unsure, KEYS, None) is unsure
    assert llm.calls == []


def test_handler_uses_the_configured_endpoint(llm: FakeLLM, tmp_path: Path) -> None:
    ctx = CallContext(service="attendance", tool="t", transport="test", run_id="r", trace_id="t")
    llm.reply = answer("3人以上")
    with opened(tmp_path, llm.env) as handlers:
        out = call(handlers, "parse_attendance_intent", request(), ctx)
    assert (out["matched_pattern"], out["attendance_rule"]["rule"]) == ("llm.fallback", {"k": 3, "n": 7})


def test_a_slow_model_never_outlasts_the_call_deadline(llm: FakeLLM, tmp_path: Path) -> None:
    """The model answers after 30 s; the call has 1.5 s: the rule-based result comes back before the deadline."""
    llm.reply = answer("3人以上")
    llm.delay = 30
    with opened(tmp_path, llm.env) as handlers:
        ctx = CallContext(
            service="attendance", tool="t", transport="test", run_id="r", trace_id="t", deadline=time.monotonic() + 1.5
        )
        out = call(handlers, "parse_attendance_intent", request(), ctx)
    assert not ctx.expired()  # answered inside the deadline, with time to spare for the transport
    assert out == parse_attendance_intent(request())
    assert 1 <= len(llm.calls) <= 2  # asked (and perhaps retried), then abandoned


def test_no_call_when_the_deadline_has_no_time_left(llm: FakeLLM) -> None:
    result = parse_attendance_intent(request())
    assert llm_fallback(request(), result, KEYS, llm.client(), deadline=time.monotonic() + 0.1) is result
    assert llm.calls == []


@pytest.mark.slow
def test_served_parse_answers_in_time_with_a_slow_model(llm: FakeLLM, tmp_path: Path, seeded_data_dir: Path) -> None:
    """kumitate serve with a 1.5 s cap on every call and a model that answers after 30 s: 200, rule-based."""
    import httpx

    from tests.conftest import start_server, stop_server

    llm.reply = answer("3人以上")
    llm.delay = 30
    server = start_server(
        tmp_path / "var", tmp_path / "server.log", KUMITATE_MAX_TIMEOUT_MS="1500", **llm.env, seeded=seeded_data_dir
    )
    try:
        response = httpx.post(f"{server.url}/v1/attendance/parse_attendance_intent", json=request(), timeout=30)
    finally:
        stop_server(server)
    assert response.status_code == 200, response.text
    expected = parse_attendance_intent(request())
    assert response.json()["attendance_rule"] == expected["attendance_rule"]
    assert response.json()["matched_pattern"] == expected["matched_pattern"]
    assert llm.calls  # the model was asked, and abandoned in time
