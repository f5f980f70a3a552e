"""The spec's prompts (specs/<service>/prompts/) as fastmcp prompts, rendered by the pipeline.

A prompt's messages are the handler contract's `Message` values; their attachments become MCP content
through `transports.mcp.content`, as a tool result's do.
"""

from __future__ import annotations

from typing import Any

from fastmcp.prompts import Message as MCPMessage
from fastmcp.prompts import Prompt, PromptArgument, PromptResult
from fastmcp.prompts.base import InputRequiredPromptResult
from pydantic import Field

from kumitate.bindings import PromptBinding
from kumitate.context import Message
from kumitate.runtime import Runtime
from kumitate.transports.mcp.content import content_block
from kumitate.transports.mcp.elicit import InputRequired, asker
from kumitate.transports.mcp.request import current_request
from kumitate.transports.mcp.results import CatalogueError


def _message(message: Message) -> MCPMessage:
    if isinstance(message.content, str):
        return MCPMessage(message.content, role=message.role)
    block = content_block(message.content)
    if block is None:
        raise TypeError(f"no MCP content kind for {message.content.mime_type} without a URI")
    return MCPMessage(block, role=message.role)


class SpecPrompt(Prompt):
    """A prompt whose name, description and arguments come from the spec; rendered by the pipeline."""

    runtime: Any = Field(default=None, exclude=True)
    binding: Any = Field(default=None, exclude=True)

    async def render(self, arguments: dict[str, Any] | None = None) -> PromptResult:
        """Render the prompt through the pipeline; a question to the client is this round's result."""
        values = {k: str(v) for k, v in (arguments or {}).items()}
        request = current_request()
        request.asker = asker(self.runtime.settings)
        try:
            outcome = await self.runtime.pipeline.get_prompt(self.binding, values, request)
        except InputRequired as question:  # 2026-07-28: the question is this round's result (elicit.py)
            return InputRequiredPromptResult(question.input_required())
        if not outcome.ok:
            raise CatalogueError(outcome)
        return PromptResult([_message(m) for m in outcome.body], description=self.description)


def prompt_component(runtime: Runtime, binding: PromptBinding) -> SpecPrompt:
    """The fastmcp prompt `build_server` adds for one spec prompt: its arguments as the spec declares
    them, its rendering the pipeline's `get_prompt` (so a prompt passes the same steps as a tool call)."""
    return SpecPrompt(
        name=binding.name,
        title=binding.title,
        description=binding.description,
        arguments=[
            PromptArgument(name=a["name"], description=a["description"], required=a["required"])
            for a in binding.arguments
        ],
        runtime=runtime,
        binding=binding,
    )
