"""`CallContext.ask` over MCP: elicitation, in both eras of the protocol.

A client that declared the elicitation capability is asked; any other gets None (the handler
then answers as it would without asking). Handshake-era connections (2025-06-18, 2025-11-25)
get a server-initiated `elicitation/create` request, and the worker thread running the handler
waits for the answer. On 2026-07-28 connections a server can no longer send requests: the call
ends with an `input_required` result carrying the question, and the client retries the call
with the answer (SEP-2322). The handler then runs again and finds the answer under the same
key; answers of earlier rounds travel in `requestState`, so a handler asking twice sees both.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import time
from typing import Any

import mcp_types as mt
from fastmcp.server.dependencies import fastmcp_request_ctx, get_context
from fastmcp.tools.base import InputRequiredToolResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from kumitate import calllog
from kumitate.context import Asker, CallCancelled, current_call
from kumitate.errors import ToolError

ELICITATION = mt.ClientCapabilities(elicitation=mt.ElicitationCapability())
POLL_S = 0.25
MAX_WAIT_S = 600.0
"""How long a call without a deadline waits for the user before it answers without asking."""


class InputRequired(BaseException):
    """Raised by `ask` on a 2026-07-28 connection whose retry has no answer yet; ends the handler
    (a BaseException, so a handler's `except Exception` lets it through) and becomes the result."""

    def __init__(self, key: str, message: str, schema: dict[str, Any], answers: dict[str, Any]) -> None:
        super().__init__(key)
        self.key, self.message, self.schema, self.answers = key, message, schema, answers

    def result(self) -> InputRequiredToolResult:
        return InputRequiredToolResult(self.input_required())

    def input_required(self) -> mt.InputRequiredResult:
        """The question as the protocol's InputRequiredResult (a tool's, a prompt's)."""
        request = mt.ElicitRequest(
            params=mt.ElicitRequestFormParams(message=self.message, requested_schema=self.schema)
        )
        return mt.InputRequiredResult(input_requests={self.key: request}, request_state=json.dumps(self.answers))


def _content(result: Any) -> dict[str, Any] | None:
    if getattr(result, "action", None) != "accept" or not isinstance(result.content, dict):
        return None
    return dict(result.content)


def asker() -> Asker | None:
    """The asker of the MCP request being served, or None when its client cannot be asked."""
    rc = fastmcp_request_ctx.get()
    if rc is None or not rc.session.check_client_capability(ELICITATION):
        return None
    if rc.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return _retrying()
    loop = asyncio.get_running_loop()
    session, request_id = rc.session, rc.request_id

    def ask(key: str, message: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        if _on_loop(loop):
            raise RuntimeError("CallContext.ask blocks; call it from a sync handler (a worker thread)")
        form = session.elicit_form(message, schema, related_request_id=request_id)  # type: ignore[arg-type]
        future = asyncio.run_coroutine_threadsafe(form, loop)
        try:
            return _content(_wait(future))
        except ToolError:  # the call's deadline passed while the user thought
            raise
        except Exception as exc:  # no back-channel (stateless HTTP), the client went away: not asked
            calllog.log_event("elicitation_failed", error_type=type(exc).__name__)
            return None
        finally:
            future.cancel()

    return ask


def _wait(future: concurrent.futures.Future[Any]) -> Any:
    """The answer; meanwhile the worker thread stops like a handler at a progress step: CallCancelled
    once the caller went away, REQUEST_TIMEOUT past the call's deadline. TimeoutError (not asked)
    after MAX_WAIT_S without an answer, where the call has no deadline of its own."""
    call = current_call()
    give_up = time.monotonic() + MAX_WAIT_S
    while True:
        try:
            return future.result(timeout=POLL_S)
        except concurrent.futures.TimeoutError:
            if call is not None:
                if call.cancelled():
                    raise CallCancelled(call.run_id) from None
                call.check_deadline()
            if time.monotonic() >= give_up:
                raise TimeoutError("no answer") from None


def _retrying() -> Asker:
    ctx = get_context()
    answers: dict[str, Any] = {}
    if ctx.request_state:
        try:
            answers = dict(json.loads(ctx.request_state))
        except (ValueError, TypeError):
            answers = {}
    for key, response in (ctx.input_responses or {}).items():
        answers[key] = _content(response)

    def ask(key: str, message: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        if key in answers:
            answer: dict[str, Any] | None = answers[key]
            return answer
        raise InputRequired(key, message, schema, answers)

    return ask


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
