"""The conformance service over MCP in memory: every content kind, prompt and resource kind the
spec format now expresses reaches the wire as the MCP content the official suite expects.

The suite itself runs in CI (`make conformance`, codegen/conformance.py); these tests keep the
spec-format extensions (prompts, content kinds, text resources, opt-in services) honest without
Node, in about a second.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import mcp_types as mt
import pytest
from fastmcp import Client
from mcp.shared.exceptions import MCPError

from codegen.examples import Result, check
from codegen.specs import SpecTree
from kumitate.client import mcp_result_body
from kumitate.runtime import Runtime, default_services
from kumitate.transports.mcp import build_server
from kumitate.transports.mcp.subscriptions import Subscriptions
from tests.conftest import app_settings

# fastmcp's Context.log still calls the SDK's session.send_log_message, deprecated at 2026-07-28
pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore:The logging capability is deprecated")]


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Runtime:
    runtime = Runtime(app_settings(tmp_path_factory.mktemp("conformance")), services=["conformance"])
    yield runtime  # type: ignore[misc]
    runtime.close()


@pytest.fixture
async def client(runtime: Runtime) -> AsyncIterator[Client[Any]]:
    async with Client(build_server(runtime)) as c:
        yield c


def _kinds(result: mt.CallToolResult) -> list[str]:
    return [block.type for block in result.content]


async def test_content_kinds_reach_the_wire(client: Client[Any]) -> None:
    image = await client.call_tool_mcp("test_image_content", {})
    assert _kinds(image) == ["text", "image"]
    assert base64.b64decode(image.content[1].data).startswith(b"\x89PNG")
    audio = await client.call_tool_mcp("test_audio_content", {})
    assert _kinds(audio) == ["text", "audio"] and audio.content[1].mime_type == "audio/wav"
    embedded = await client.call_tool_mcp("test_embedded_resource", {})
    resource = embedded.content[1].resource
    assert (str(resource.uri), resource.mime_type) == ("test://embedded-resource", "text/plain")
    assert resource.text == "This is an embedded resource content."
    mixed = await client.call_tool_mcp("test_multiple_content_types", {})
    assert _kinds(mixed) == ["text", "image", "resource"]
    assert json.loads(mixed.content[2].resource.text) == {"test": "data", "value": 123}


async def test_text_content_is_the_declared_property_and_structured_content_the_body(client: Client[Any]) -> None:
    greet = await client.call_tool_mcp("greet", {"name": "sep-2243"})  # spec mcp.text_content: text
    assert greet.content[0].text == "Hello, sep-2243!"
    assert greet.structured_content == {"text": "Hello, sep-2243!"}
    refused = await client.call_tool_mcp("greet", {"name": ""})  # an error keeps its JSON text
    assert refused.is_error and json.loads(refused.content[0].text)["error"]["code"]


async def test_the_json_schema_2020_12_fixture_advertises_its_keywords_and_enforces_them(client: Client[Any]) -> None:
    """The suite's pending json-schema-2020-12 scenario reads these keywords from tools/list (SEP-1613,
    SEP-2106); the input's own `$defs` (with its `$anchor`) are advertised, not dropped as refs' homes."""
    tool = next(t for t in await client.list_tools() if t.name == "json_schema_2020_12_tool")
    schema = tool.inputSchema
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$defs"]["address"]["$anchor"] == "addressDef"
    assert schema["additionalProperties"] is False
    assert schema["allOf"][0]["anyOf"] == [{"required": ["phone"]}, {"required": ["email"]}]
    assert (schema["if"]["required"], schema["then"], schema["else"]) == (
        ["contactMethod"],
        {"required": ["phone"]},
        {"required": ["email"]},
    )
    by_phone = await client.call_tool_mcp("json_schema_2020_12_tool", {"contactMethod": "phone", "phone": "123"})
    assert not by_phone.is_error and by_phone.content[0].text == "Contact them by phone: 123"
    # the conditional is checked, not only shown: phone chosen but only an email given
    refused = await client.call_tool_mcp("json_schema_2020_12_tool", {"contactMethod": "phone", "email": "a@b.c"})
    assert refused.is_error


async def test_the_custom_header_fixture_marks_its_argument_for_an_mcp_param_header(client: Client[Any]) -> None:
    """http-custom-header-server-validation (SEP-2243) needs one tool with a string `x-mcp-header` argument."""
    tool = next(t for t in await client.list_tools() if t.name == "test_custom_header")
    assert tool.inputSchema["properties"]["value"]["x-mcp-header"] == "Value"
    echoed = await client.call_tool_mcp("test_custom_header", {"value": "=?base64?SGVsbG8"})
    assert echoed.content[0].text == "value: =?base64?SGVsbG8"


async def test_error_fixture_is_a_catalogued_error(client: Client[Any]) -> None:
    result = await client.call_tool_mcp("test_error_handling", {})
    assert result.is_error
    assert mcp_result_body(result)["error"]["code"] == "CONFORMANCE_FIXTURE_FAILED"


async def test_progress_fixture_reports_three_increasing_steps(runtime: Runtime) -> None:
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    async with Client(build_server(runtime), progress_handler=on_progress) as c:
        await c.call_tool("test_tool_with_progress", {})
    assert seen == [(0, 100), (50, 100), (100, 100)]


async def test_log_messages_reach_a_client_that_asked_for_them_in_order(runtime: Runtime) -> None:
    got: list[tuple[str, str]] = []

    async def on_log(message: Any) -> None:
        got.append((message.level, message.data["msg"]))

    async with Client(build_server(runtime), log_handler=on_log) as c:
        await c.call_tool("test_tool_with_logging", {})
    assert got == [
        ("info", "Tool execution started"),
        ("info", "Tool processing data"),
        ("info", "Tool execution completed"),
    ]


async def test_prompts_from_the_spec(client: Client[Any]) -> None:
    prompts = {p.name: p for p in await client.list_prompts()}
    assert {"test_simple_prompt", "test_prompt_with_arguments", "test_prompt_with_image"} <= set(prompts)
    assert [(a.name, a.required) for a in prompts["test_prompt_with_arguments"].arguments or []] == [
        ("arg1", True),
        ("arg2", True),
    ]
    simple = await client.get_prompt("test_simple_prompt")
    assert simple.messages[0].content.text == "This is a simple prompt for testing."
    args = await client.get_prompt("test_prompt_with_arguments", {"arg1": "hello", "arg2": "world"})
    assert args.messages[0].content.text == "Prompt with arguments: arg1='hello', arg2='world'"
    embedded = await client.get_prompt("test_prompt_with_embedded_resource", {"resourceUri": "test://x"})
    assert [m.content.type for m in embedded.messages] == ["resource", "text"]
    assert str(embedded.messages[0].content.resource.uri) == "test://x"
    image = await client.get_prompt("test_prompt_with_image")
    assert [m.content.type for m in image.messages] == ["image", "text"]


async def test_a_prompt_missing_a_required_argument_is_refused(client: Client[Any]) -> None:
    with pytest.raises(Exception, match="arg2"):
        await client.get_prompt("test_prompt_with_arguments", {"arg1": "hello"})


async def test_text_binary_and_templated_resources(client: Client[Any]) -> None:
    text = (await client.read_resource("test://static-text"))[0]
    assert text.text == "This is the content of the static text resource." and text.mime_type == "text/plain"
    binary = (await client.read_resource("test://static-binary"))[0]
    assert base64.b64decode(binary.blob).startswith(b"\x89PNG")
    templated = (await client.read_resource("test://template/123/data"))[0]
    assert json.loads(templated.text) == {"id": "123", "templateTest": True, "data": "Data for ID: 123"}


async def _no_sampling(*args: Any) -> str:
    raise AssertionError("no fixture samples")


async def test_a_tool_requiring_a_client_capability_is_refused_without_it(runtime: Runtime) -> None:
    async with Client(build_server(runtime)) as bare:
        with pytest.raises(MCPError) as refused:
            await bare.call_tool_mcp("test_missing_capability", {})
    assert refused.value.error.code == -32021
    assert refused.value.error.data["requiredCapabilities"] == {"sampling": {}}
    async with Client(build_server(runtime), sampling_handler=_no_sampling) as sampling:
        result = await sampling.call_tool_mcp("test_missing_capability", {})
    assert result.structured_content == {"text": "The client declared sampling."}


async def _paris(*args: Any) -> str:
    return "Paris."


async def test_sampling_and_roots_questions_reach_the_client_and_only_one_that_declared_them(runtime: Runtime) -> None:
    async with Client(build_server(runtime), sampling_handler=_paris, roots=["file:///srv/notes"]) as client:
        sampled = await client.call_tool_mcp("test_input_required_result_sampling", {})
        roots = await client.call_tool_mcp("test_input_required_result_list_roots", {})
        either = await client.call_tool_mcp("test_input_required_result_capabilities", {})
    assert sampled.structured_content == {"text": "Sampling said: Paris."}
    assert roots.structured_content == {"text": "Roots: file:///srv/notes"}
    assert either.structured_content == {"text": "Greeting: Paris."}
    async with Client(build_server(runtime)) as bare:  # declares neither: nothing is asked
        sampled = await bare.call_tool_mcp("test_input_required_result_sampling", {})
        roots = await bare.call_tool_mcp("test_input_required_result_list_roots", {})
    assert sampled.structured_content == {"text": "Sampling said: not asked"}
    assert roots.structured_content == {"text": "Roots: not asked"}


async def _alice(*args: Any) -> dict[str, str]:
    return {"name": "Alice"}


async def test_three_kinds_of_question_asked_together_are_all_answered(runtime: Runtime) -> None:
    server = build_server(runtime)
    async with Client(server, sampling_handler=_paris, elicitation_handler=_alice, roots=["file:///r"]) as client:
        result = await client.call_tool_mcp("test_input_required_result_multiple_inputs", {})
    assert result.structured_content == {"text": "name: Alice; greeting: Paris.; roots: file:///r"}
    async with Client(build_server(runtime), sampling_handler=_paris) as sampling_only:
        result = await sampling_only.call_tool_mcp("test_input_required_result_multiple_inputs", {})
    assert result.structured_content == {"text": "name: not asked; greeting: Paris.; roots: not asked"}


async def test_a_tool_that_runs_only_as_a_task_is_refused_without_the_extension(runtime: Runtime) -> None:
    async with Client(build_server(runtime)) as bare:
        with pytest.raises(MCPError) as refused:
            await bare.call_tool_mcp("failing_job", {})
        synchronous = await bare.call_tool_mcp("slow_compute", {"seconds": 0, "label": "plain"})
    assert refused.value.error.code == -32021
    assert refused.value.error.data["requiredCapabilities"] == {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    assert synchronous.structured_content == {"text": "plain: computed after 0 s"}


async def test_examples_of_the_opt_in_service(runtime: Runtime, spec_tree: SpecTree) -> None:
    """The shared example run skips opt-in services (they are not served by default): run them here."""
    svc = next(s for s in spec_tree.services if s.name == "conformance")
    examples = [(t, ex) for t in svc.tools for ex in t.examples]
    assert examples
    async with Client(build_server(runtime)) as client:  # asks nothing: the examples say what HTTP answers
        for tool, example in examples:
            if (tool.execution or {}).get("required") or tool.requires_client:  # refused here: tests above
                continue
            result = await client.call_tool_mcp(tool.name, example.input)
            problem = check(example, Result(ok=not result.is_error, body=mcp_result_body(result)))
            assert problem is None, f"{tool.name}:{example.name}: {problem}"


def test_an_opt_in_service_is_not_served_by_default() -> None:
    from generated.registry import SERVICES

    assert SERVICES["conformance"].opt_in
    assert default_services(SERVICES) == [name for name in SERVICES if name != "conformance"]


SUBSCRIBE_DEPRECATED = pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")
"""The SDK client's warning: handshake-era subscriptions are gone from 2026-07-28 (subscriptions/listen)."""


@SUBSCRIBE_DEPRECATED
async def test_a_subscribed_resource_that_changes_notifies_its_subscriber_until_it_unsubscribes(
    runtime: Runtime,
) -> None:
    updated: list[str] = []

    async def collect(message: Any) -> None:
        if isinstance(message, mt.ResourceUpdatedNotification):
            updated.append(message.params.uri)

    uri = "test://watched-resource"
    async with Client(build_server(runtime), message_handler=collect, mode="legacy") as client:
        assert client.initialize_result is not None and client.initialize_result.capabilities.resources.subscribe
        await client.session.subscribe_resource(uri)
        before = (await client.read_resource(uri))[0].text
        await client.call_tool("touch_watched_resource", {})
        for _ in range(50):
            if updated:
                break
            await asyncio.sleep(0.02)
        assert updated == [uri]
        assert (await client.read_resource(uri))[0].text != before
        await client.session.unsubscribe_resource(uri)
        await client.call_tool("touch_watched_resource", {})
        await asyncio.sleep(0.2)
        assert updated == [uri]  # no more once unsubscribed
        with pytest.raises(MCPError) as unknown:
            await client.session.subscribe_resource("test://no-such-resource")
        assert unknown.value.error.code == -32602


@SUBSCRIBE_DEPRECATED
async def test_without_sessions_resources_cannot_be_subscribed_to(runtime: Runtime) -> None:
    async with Client(build_server(runtime, sessions=False), mode="legacy") as client:
        assert client.initialize_result is not None
        assert not client.initialize_result.capabilities.resources.subscribe
        with pytest.raises(MCPError) as refused:
            await client.session.subscribe_resource("test://watched-resource")
        assert refused.value.error.code == -32601


async def test_a_resource_keeps_at_most_the_session_cap_of_subscribers(runtime: Runtime) -> None:
    subscriptions = Subscriptions(build_server(runtime), most=2)
    uri = "test://watched-resource"
    clients = [SimpleNamespace(session=SimpleNamespace(client_params=object())) for _ in range(3)]
    for client in [*clients, clients[2]]:  # the same client twice is one subscriber
        await subscriptions.subscribe(client, mt.SubscribeRequestParams(uri=uri))
    assert [session for session, _ in subscriptions.sessions[uri]] == [clients[1].session, clients[2].session]
