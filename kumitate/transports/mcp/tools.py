"""Spec tools as fastmcp tools: the spec's schemas, annotations and description, verbatim
(a type repeated within one schema is a local `$defs` entry, codegen/shared.py), and a `run`
that hands the call to the pipeline."""

from __future__ import annotations

from typing import Any, NoReturn

from fastmcp.tools import Tool, ToolResult
from mcp_types import ToolAnnotations
from pydantic import Field

from kumitate.bindings import ToolBinding
from kumitate.errors import ToolError
from kumitate.observability import calllog
from kumitate.pipeline import Outcome
from kumitate.policies.idempotency import KEY_ARGUMENT as IDEMPOTENCY_ARGUMENT
from kumitate.policies.idempotency import MAX_KEY_LENGTH, with_key_argument
from kumitate.runtime import Runtime
from kumitate.transports.mcp.content import require_client
from kumitate.transports.mcp.elicit import InputRequired, asker
from kumitate.transports.mcp.logging import log_sender
from kumitate.transports.mcp.request import current_request, progress_sender
from kumitate.transports.mcp.results import tool_result
from kumitate.transports.progress import relaying


class SpecTool(Tool):
    """A tool whose schemas, annotations and description come from the spec."""

    runtime: Any = Field(default=None, exclude=True)
    binding: Any = Field(default=None, exclude=True)

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        """Call the tool through the pipeline (the idempotency key taken from the arguments) and give the
        outcome as fastmcp's result."""
        if self.binding.requires_client:
            require_client(self.binding.requires_client)
        key = None
        if IDEMPOTENCY_ARGUMENT in arguments:  # accepted on every tool; harmless on a read-only one
            arguments = dict(arguments)
            key = arguments.pop(IDEMPOTENCY_ARGUMENT)
            if not (isinstance(key, str) and 1 <= len(key) <= MAX_KEY_LENGTH):
                return tool_result(await self._refuse_key())
        request = current_request(key)
        request.asker = asker(self.runtime.settings)
        request.log = log_sender()
        try:
            sender = progress_sender()
            if sender is None:  # the common case: no relay task, no context manager
                outcome = await self.runtime.pipeline.call_tool(self.binding, arguments, request)
                return tool_result(outcome, self.binding.text_content)
            async with relaying(sender) as relay:
                request.progress = relay
                outcome = await self.runtime.pipeline.call_tool(self.binding, arguments, request)
        except InputRequired as question:  # 2026-07-28: the question is this round's result (elicit.py)
            calllog.log_event("input_required", service=self.binding.service, tool=self.binding.name)
            return question.result()
        return tool_result(outcome, self.binding.text_content)

    async def _refuse_key(self) -> Outcome:
        """A key that breaks the advertised schema is a BAD_REQUEST, after admission like any input error."""

        async def refuse() -> NoReturn:
            raise ToolError(
                f"{IDEMPOTENCY_ARGUMENT} must be a string of 1 to {MAX_KEY_LENGTH} characters", code="BAD_REQUEST"
            )

        return await self.runtime.pipeline.call_tool(self.binding, None, current_request(None), read=refuse)


def mcp_input_schema(binding: ToolBinding) -> dict[str, Any]:
    """The spec's input schema, plus `idempotency_key` for tools that accept one (HTTP takes a header)."""
    return with_key_argument(binding.input_schema) if binding.policy.idempotency else binding.input_schema


def tool_component(runtime: Runtime, binding: ToolBinding) -> SpecTool:
    """The spec's tool as fastmcp's tool: its name, title, schemas and annotations as the spec declares."""
    return SpecTool(
        name=binding.name,
        title=binding.annotations.title or binding.summary,
        description=binding.description,
        parameters=mcp_input_schema(binding),
        output_schema=binding.output_schema,
        annotations=ToolAnnotations(**binding.annotations.declared()),
        runtime=runtime,
        binding=binding,
    )
