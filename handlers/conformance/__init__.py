"""conformance service: the fixtures of the official MCP conformance suite (specs/conformance/).

Each method returns the generated output model (or, for a prompt, Messages); content beyond the
text goes in `ctx.attachments`, and the MCP transport shows it as image, audio or embedded
resource content. Questions go through `ctx.ask`, which each transport answers its own way.
The methods are sync: they run on a worker thread, where `ask` may wait for the user.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from generated.conformance import models
from generated.errors import ConformanceFixtureFailedError
from handlers.conformance import core
from handlers.conformance.settings import ConformanceSettings
from kumitate.context import Attachment, CallContext, Message, Question
from kumitate.service import ServiceSetup

Text = models.Text


def _said(answer: dict[str, Any] | None) -> str:
    return "not asked" if answer is None else json.dumps(answer, ensure_ascii=False, sort_keys=True)


class ConformanceHandlers:
    """One method per tool, resource and prompt of specs/conformance/."""

    def __init__(self, settings: ConformanceSettings) -> None:
        self.settings = settings
        self.png = core.red_pixel_png()
        self.wav = core.silent_wav()
        self.watched_changes = 0  # test://watched-resource's one state: how often it changed
        self.lock = threading.Lock()

    # -- content kinds
    def test_simple_text(self, input: models.NoInput, ctx: CallContext) -> Text:
        return Text(text="This is a simple text response for testing.")

    def json_schema_2020_12_tool(self, input: models.JsonSchema202012ToolInput, ctx: CallContext) -> Text:
        # the schema's if/then/else already made sure the chosen method's field is there
        if input.contactMethod == models.ContactMethod.phone:
            return Text(text=f"Contact {input.name or 'them'} by phone: {input.phone}")
        return Text(text=f"Contact {input.name or 'them'} by email: {input.email}")

    def test_custom_header(self, input: models.TestCustomHeaderInput, ctx: CallContext) -> Text:
        return Text(text=f"value: {input.value}")

    def test_image_content(self, input: models.NoInput, ctx: CallContext) -> Text:
        ctx.attachments.append(Attachment("image/png", self.png))
        return Text(text="A 1x1 red PNG is attached as image content.")

    def test_audio_content(self, input: models.NoInput, ctx: CallContext) -> Text:
        ctx.attachments.append(Attachment("audio/wav", self.wav))
        return Text(text="A short silent WAV is attached as audio content.")

    def test_embedded_resource(self, input: models.NoInput, ctx: CallContext) -> Text:
        text = b"This is an embedded resource content."
        ctx.attachments.append(Attachment("text/plain", text, uri="test://embedded-resource"))
        return Text(text="The resource test://embedded-resource is embedded.")

    def test_multiple_content_types(self, input: models.NoInput, ctx: CallContext) -> Text:
        data = json.dumps({"test": "data", "value": 123}).encode()
        ctx.attachments.append(Attachment("image/png", self.png))
        ctx.attachments.append(Attachment("application/json", data, uri="test://mixed-content-resource"))
        return Text(text="Multiple content types test:")

    def test_error_handling(self, input: models.NoInput, ctx: CallContext) -> Text:
        raise ConformanceFixtureFailedError("This tool intentionally returns an error for testing")

    def test_tool_with_progress(self, input: models.NoInput, ctx: CallContext) -> Text:
        for done in (0, 50, 100):
            ctx.progress(done, 100)
            if done < 100:
                time.sleep(0.05)
        return Text(text="Progress reported: 0, 50, 100 of 100.")

    def test_tool_with_logging(self, input: models.NoInput, ctx: CallContext) -> Text:
        ctx.log("Tool execution started")
        time.sleep(0.05)
        ctx.log("Tool processing data")
        time.sleep(0.05)
        ctx.log("Tool execution completed")
        return Text(text="Logged three messages at info level.")

    def test_logging_tool(self, input: models.NoInput, ctx: CallContext) -> Text:
        return self.test_tool_with_logging(input, ctx)

    def test_missing_capability(self, input: models.NoInput, ctx: CallContext) -> Text:
        return Text(text="The client declared sampling.")

    # -- tasks (spec execution: task)
    def greet(self, input: models.GreetInput, ctx: CallContext) -> Text:
        return Text(text=f"Hello, {input.name}!")

    def slow_compute(self, input: models.SlowComputeInput, ctx: CallContext) -> Text:
        """Sleeps in tenths, reporting each: `progress` is where a cancelled task stops (CallCancelled)."""
        ends = time.monotonic() + input.seconds
        while (left := ends - time.monotonic()) > 0:
            ctx.progress(input.seconds - left, input.seconds)
            time.sleep(min(left, 0.1))
        return Text(text=f"{input.label or 'slow_compute'}: computed after {input.seconds:g} s")

    def failing_job(self, input: models.NoInput, ctx: CallContext) -> Text:
        time.sleep(1)
        raise ConformanceFixtureFailedError("This job intentionally fails for testing")

    def protocol_error_job(self, input: models.NoInput, ctx: CallContext) -> Text:
        raise RuntimeError("protocol_error_job crashes on purpose (the runtime answers INTERNAL)")

    def confirm_delete(self, input: models.ConfirmDeleteInput, ctx: CallContext) -> Text:
        answer = ctx.ask("confirm", f"Delete {input.filename}?", core.one_field("confirm", "boolean"))
        done = "not asked" if answer is None else "confirmed" if answer.get("confirm") else "declined"
        return Text(text=f"{input.filename}: {done}, kept")

    def multi_input(self, input: models.NoInput, ctx: CallContext) -> Text:
        got = ctx.ask_all(
            {
                "first": Question("elicitation", "First: your name?", core.one_field("name")),
                "second": Question("elicitation", "Second: confirm?", core.one_field("confirm", "boolean")),
            }
        )
        return Text(text="; ".join(f"{key}: {_said(answer)}" for key, answer in got.items()))

    def test_tool_with_task(self, input: models.NoInput, ctx: CallContext) -> Text:
        answer = ctx.ask("user_name", "What is your name?", core.one_field("name")) or {}
        return Text(text=f"Hello from the task, {answer.get('name', 'stranger')}!")

    # -- asking the user
    def test_elicitation(self, input: models.TestElicitationInput, ctx: CallContext) -> Text:
        answer = ctx.ask("contact", input.message, core.CONTACT_SCHEMA)
        return Text(text=f"User response: {_said(answer)}")

    def test_elicitation_sep1034_defaults(self, input: models.NoInput, ctx: CallContext) -> Text:
        answer = ctx.ask("defaults", "Please review these defaults", core.SEP1034_SCHEMA)
        return Text(text=f"Elicitation completed: {_said(answer)}")

    def test_elicitation_sep1330_enums(self, input: models.NoInput, ctx: CallContext) -> Text:
        answer = ctx.ask("enums", "Please pick options", core.SEP1330_SCHEMA)
        return Text(text=f"Elicitation completed: {_said(answer)}")

    def test_input_required_result_elicitation(self, input: models.NoInput, ctx: CallContext) -> Text:
        answer = ctx.ask("user_name", "What is your name?", core.one_field("name")) or {}
        return Text(text=f"Hello, {answer.get('name', 'stranger')}!")

    def test_streaming_elicitation(self, input: models.NoInput, ctx: CallContext) -> Text:
        answer = ctx.ask("confirm", "Please confirm", core.one_field("ok", "boolean"))
        return Text(text=f"Streaming elicitation: {_said(answer)}")

    def test_input_required_result_request_state(self, input: models.NoInput, ctx: CallContext) -> Text:
        answer = ctx.ask("confirm", "Please confirm", core.one_field("ok", "boolean"))
        return Text(text=f"state-ok: confirmed={_said(answer)}")

    def test_input_required_result_tampered_state(self, input: models.NoInput, ctx: CallContext) -> Text:
        return self.test_input_required_result_request_state(input, ctx)

    def test_input_required_result_multi_round(self, input: models.NoInput, ctx: CallContext) -> Text:
        name = ctx.ask("step1", "Step 1: What is your name?", core.one_field("name")) or {}
        color = ctx.ask("step2", "Step 2: What is your favorite color?", core.one_field("color")) or {}
        return Text(text=f"{name.get('name', 'stranger')} likes {color.get('color', 'no colour')}.")

    def test_input_required_result_sampling(self, input: models.NoInput, ctx: CallContext) -> Text:
        answer = ctx.sample("capital_question", "What is the capital of France?", 100)
        return Text(text=f"Sampling said: {answer or 'not asked'}")

    def test_input_required_result_list_roots(self, input: models.NoInput, ctx: CallContext) -> Text:
        roots = ctx.roots("client_roots")
        return Text(text=f"Roots: {', '.join(roots) if roots is not None else 'not asked'}")

    def test_input_required_result_capabilities(self, input: models.NoInput, ctx: CallContext) -> Text:
        """A question of a kind the client did not declare is None without being asked (transports/mcp/elicit.py)."""
        greeting = ctx.sample("greeting", "Generate a greeting", 50)
        if greeting is None:
            greeting = (ctx.ask("user_name", "What is your name?", core.one_field("name")) or {}).get("name")
        return Text(text=f"Greeting: {greeting or 'not asked'}")

    def test_input_required_result_multiple_inputs(self, input: models.NoInput, ctx: CallContext) -> Text:
        got = ctx.ask_all(
            {
                "user_name": Question("elicitation", "What is your name?", core.one_field("name")),
                "greeting": Question("sampling", "Generate a greeting", max_tokens=50),
                "client_roots": Question("roots"),
            }
        )
        name, greeting, roots = (got["user_name"] or {}).get("name"), got["greeting"], got["client_roots"]
        said = {"name": name, "greeting": greeting, "roots": ", ".join(roots) if roots is not None else None}
        return Text(text="; ".join(f"{k}: {v or 'not asked'}" for k, v in said.items()))

    def test_sampling(self, input: models.TestSamplingInput, ctx: CallContext) -> Text:
        answer = ctx.sample("sampling", input.prompt, 100)
        return Text(text=f"LLM response: {answer or 'not asked'}")

    # -- resources
    def read_static_text(self, ctx: CallContext) -> bytes:
        return b"This is the content of the static text resource."

    def read_static_binary(self, ctx: CallContext) -> bytes:
        return self.png

    def read_template_data(self, ctx: CallContext, id: str) -> models.TemplateDataResource:
        return models.TemplateDataResource(id=id, templateTest=True, data=f"Data for ID: {id}")

    def read_watched_resource(self, ctx: CallContext) -> bytes:
        return f"Changed {self.watched_changes} times.".encode()

    def touch_watched_resource(self, input: models.NoInput, ctx: CallContext) -> Text:
        with self.lock:
            self.watched_changes += 1
        ctx.changed("watched_resource")
        return Text(text="test://watched-resource changed")

    def complete_template_ids(self, ctx: CallContext, prefix: str, arguments: dict[str, str]) -> list[str]:
        return [i for i in ("123", "456", "789") if i.startswith(prefix)]

    # -- prompts
    def prompt_test_simple_prompt(self, ctx: CallContext) -> list[Message]:
        return [Message("This is a simple prompt for testing.")]

    def prompt_test_prompt_with_arguments(self, ctx: CallContext, arg1: str, arg2: str) -> list[Message]:
        return [Message(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]

    def prompt_test_prompt_with_embedded_resource(self, ctx: CallContext, resourceUri: str) -> list[Message]:
        resource = Attachment("text/plain", b"Embedded resource content for testing.", uri=resourceUri)
        return [Message(resource), Message("Please process the embedded resource above.")]

    def prompt_test_prompt_with_image(self, ctx: CallContext) -> list[Message]:
        return [Message(Attachment("image/png", self.png)), Message("Please analyze the image above.")]

    def prompt_test_input_required_result_prompt(self, ctx: CallContext) -> list[Message]:
        answer = ctx.ask("user_context", "What context should the prompt use?", core.one_field("context")) or {}
        return [Message(f"Use this context: {answer.get('context', 'none given')}")]


def create(setup: ServiceSetup) -> ConformanceHandlers:
    """Entry point the runtime calls once at start-up; the fixtures keep nothing."""
    return ConformanceHandlers(setup.read(ConformanceSettings))
