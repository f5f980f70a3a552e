"""Elicitation (issue 15 item 4): a tool that would answer with a clarification question asks it.

A client that declares elicitation support is asked through `elicitation/create` (a choice built
from the candidates) and the call goes on with the answer: pushed by the server on handshake-era
connections, as an `input_required` round trip on 2026-07-28 ones. A client without it, one
that declines, and HTTP /v1 get today's question in the result.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

from kumitate.client import mcp_result_body
from kumitate.runtime import Runtime
from kumitate.settings import Settings
from kumitate.transports.mcp import build_server
from tests.conftest import REPO, LiveServer, seeded_copy, server_env

pytestmark = pytest.mark.anyio

INVITEES = [
    {"user_id": "1", "display_name": "田中 一郎", "reading": "たなか いちろう"},
    {"user_id": "2", "display_name": "田中 花子", "reading": "たなか はなこ"},
    {"user_id": "3", "display_name": "山田 太郎", "reading": "やまだ たろう"},
    {"user_id": "4", "display_name": "佐藤 次郎", "reading": "さとう じろう"},
]
AMBIGUOUS = {"text": "田中さんは必須、あと1人", "invitees": INVITEES}
TWO_AMBIGUOUS = {
    "text": "田中さんと佐藤さんは必須",
    "invitees": [*INVITEES, {"user_id": "5", "display_name": "佐藤 三郎", "reading": "さとう さぶろう"}],
}


class Organiser:
    """An elicitation handler that picks the candidate titled `pick` (or declines), and records the forms."""

    def __init__(self, *picks: str | None) -> None:
        self.picks = list(picks)
        self.asked: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        self.asked.append((message, params.requested_schema))
        pick = self.picks[len(self.asked) - 1]
        if pick is None:
            from fastmcp.client.elicitation import ElicitResult

            return ElicitResult(action="decline")
        options = params.requested_schema["properties"]["invitee"]["oneOf"]
        return {"invitee": next(o["const"] for o in options if o["title"] == pick)}


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    settings = Settings(data_dir=tmp_path / "var", sample_dir=tmp_path / "samples", public_base_url="http://x")
    rt = Runtime(settings, services=["attendance"])
    yield rt
    rt.close()


def assert_chosen(result: Any, key: str) -> None:
    assert not result.is_error
    body = result.structured_content
    assert body["needs_clarification"] == [] and body["missing"] == []
    assert body["attendance_rule"]["rule"]["required_invitee_keys"] == [key]


def assert_asked_back(body: dict[str, Any]) -> None:
    assert any("田中" in q and "どなた" in q for q in body["needs_clarification"])
    assert body["confidence"] < 0.7


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # 2026-07-28 input_required round trip / server-pushed request
async def test_a_client_with_elicitation_is_asked_and_the_parse_goes_on(runtime: Runtime, mode: str) -> None:
    organiser = Organiser("田中 花子")
    async with Client(build_server(runtime, ["attendance"]), elicitation_handler=organiser, mode=mode) as client:
        result = await client.call_tool("parse_attendance_intent", AMBIGUOUS)
    assert_chosen(result, "u:2")
    ((message, schema),) = organiser.asked
    assert "田中" in message
    field = schema["properties"]["invitee"]
    assert field["enum"] == ["u:1", "u:2"]
    assert [o["title"] for o in field["oneOf"]] == ["田中 一郎", "田中 花子"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_two_questions_are_both_asked_and_both_answers_used(runtime: Runtime, mode: str) -> None:
    organiser = Organiser("田中 一郎", "佐藤 三郎")
    async with Client(build_server(runtime, ["attendance"]), elicitation_handler=organiser, mode=mode) as client:
        result = await client.call_tool("parse_attendance_intent", TWO_AMBIGUOUS)
    assert len(organiser.asked) == 2
    assert not result.is_error and result.structured_content["needs_clarification"] == []
    assert sorted(result.structured_content["attendance_rule"]["rule"]["required_invitee_keys"]) == ["u:1", "u:5"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_declined_question_is_returned_as_today(runtime: Runtime, mode: str) -> None:
    organiser = Organiser(None)
    async with Client(build_server(runtime, ["attendance"]), elicitation_handler=organiser, mode=mode) as client:
        result = await client.call_tool("parse_attendance_intent", AMBIGUOUS)
    assert len(organiser.asked) == 1
    assert_asked_back(result.structured_content)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_client_without_elicitation_gets_the_question_in_the_result(runtime: Runtime, mode: str) -> None:
    async with Client(build_server(runtime, ["attendance"]), mode=mode) as client:
        result = await client.call_tool("parse_attendance_intent", AMBIGUOUS)
    assert not result.is_error
    assert_asked_back(result.structured_content)


async def test_an_unanswered_question_ends_at_the_call_deadline(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path / "var", sample_dir=tmp_path / "samples", public_base_url="http://x", max_timeout_ms=800
    )
    runtime = Runtime(settings, services=["attendance"])

    async def never(message: str, response_type: Any, params: Any, context: Any) -> Any:
        await anyio.sleep(30)

    try:
        async with Client(build_server(runtime, ["attendance"]), elicitation_handler=never, mode="legacy") as client:
            with anyio.fail_after(10):
                result = await client.call_tool("parse_attendance_intent", AMBIGUOUS, raise_on_error=False)
    finally:
        runtime.close()
    assert result.is_error and mcp_result_body(result)["error"]["code"] == "REQUEST_TIMEOUT"


async def test_an_unambiguous_parse_asks_nothing(runtime: Runtime) -> None:
    organiser = Organiser()
    async with Client(build_server(runtime, ["attendance"]), elicitation_handler=organiser) as client:
        result = await client.call_tool("parse_attendance_intent", {**AMBIGUOUS, "text": "山田さんは必須、あと1人"})
    assert not result.is_error and organiser.asked == []


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_elicitation_over_streamable_http(live_server: LiveServer, mode: str) -> None:
    server = live_server
    organiser = Organiser("田中 一郎")
    transport = StreamableHttpTransport(f"{server.url}/mcp/attendance")
    async with Client(transport, elicitation_handler=organiser, mode=mode) as client:
        assert_chosen(await client.call_tool("parse_attendance_intent", AMBIGUOUS), "u:1")
    async with httpx.AsyncClient(base_url=server.url) as http:  # HTTP cannot ask: the question comes back
        response = await http.post("/v1/attendance/parse_attendance_intent", json=AMBIGUOUS)
    assert response.status_code == 200
    assert_asked_back(response.json())


@pytest.mark.slow
async def test_elicitation_over_stdio(tmp_path: Path, seeded_data_dir: Path) -> None:
    env = server_env(seeded_copy(seeded_data_dir, tmp_path / "var"))
    stdio = StdioTransport(sys.executable, ["-m", "kumitate", "mcp", "--stdio"], cwd=str(REPO), env=env)
    organiser = Organiser("田中 花子")
    async with Client(stdio, elicitation_handler=organiser, mode="legacy") as client:
        assert_chosen(await client.call_tool("parse_attendance_intent", AMBIGUOUS), "u:2")


class CategoryPicker:
    def __init__(self, pick: str | None) -> None:
        self.pick = pick
        self.asked: list[dict[str, Any]] = []

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        self.asked.append(params.requested_schema)
        if self.pick is None:
            from fastmcp.client.elicitation import ElicitResult

            return ElicitResult(action="decline")
        return {"category": self.pick}


@pytest.fixture
def household(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runtime]:
    from tests.household.conftest import row, write_export

    exports = tmp_path / "exports"
    exports.mkdir()
    write_export(exports, "2025-01-01_2025-01-31", [row("2025/01/05", -1200, "食費", "食料品")])
    (tmp_path / "samples" / "household").mkdir(parents=True)
    monkeypatch.setenv("HOUSEHOLD_DATA_DIR", str(exports))
    settings = Settings(data_dir=tmp_path / "var", sample_dir=tmp_path / "samples", public_base_url="http://x")
    rt = Runtime(settings, services=["household"])
    yield rt
    rt.close()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_unknown_category_is_offered_as_a_choice(household: Runtime, mode: str) -> None:
    picker = CategoryPicker("食費")
    async with Client(build_server(household, ["household"]), elicitation_handler=picker, mode=mode) as client:
        await client.call_tool("import_household_data", {})
        result = await client.call_tool("get_category_trend", {"category": "食ひ"})
    assert not result.is_error
    assert "食費" in result.structured_content["text"]
    (schema,) = picker.asked
    assert "食費" in schema["properties"]["category"]["enum"]


async def test_a_declined_category_choice_fails_as_before(household: Runtime) -> None:
    picker = CategoryPicker(None)
    async with Client(build_server(household, ["household"]), elicitation_handler=picker) as client:
        await client.call_tool("import_household_data", {})
        result = await client.call_tool("get_category_trend", {"category": "食ひ"}, raise_on_error=False)
    assert result.is_error and mcp_result_body(result)["error"]["code"] == "VALIDATION_ERROR"
    assert mcp_result_body(result)["error"]["suggestions"]
