"""`CallContext.ask` over MCP: elicitation, in both eras of the protocol.

A client that declared the elicitation capability is asked; any other gets None (the handler
then answers as it would without asking). Handshake-era connections (2025-06-18, 2025-11-25)
get a server-initiated `elicitation/create` request, and the worker thread running the handler
waits for the answer. On 2026-07-28 connections a server can no longer send requests: the call
ends with an `input_required` result carrying the question, and the client retries the call
with the answer (SEP-2322). The handler then runs again and finds the answer under the same
key; answers of earlier rounds travel in `requestState`, so a handler asking twice sees both.
That state is signed (HMAC-SHA256, KUMITATE_MCP_STATE_SECRET or a key of this process): a retry whose
`requestState` is not one this server wrote is refused, JSON-RPC -32602 (SEP-2322).
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import hashlib
import hmac
import json
import secrets
import time
from typing import Any

import mcp_types as mt
from fastmcp.server.dependencies import fastmcp_request_ctx, get_context
from fastmcp.tools.base import InputRequiredToolResult
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from kumitate import calllog
from kumitate.context import Asker, CallCancelled, current_call
from kumitate.errors import ToolError
from kumitate.settings import Settings

ELICITATION = mt.ClientCapabilities(elicitation=mt.ElicitationCapability())
POLL_S = 0.25
MAX_WAIT_S = 600.0
"""How long a call without a deadline waits for the user before it answers without asking."""
_PROCESS_KEY = secrets.token_bytes(32)
"""The `requestState` key where KUMITATE_MCP_STATE_SECRET is not set (a retry must reach this process)."""


def state_key(settings: Settings) -> bytes:
    secret = settings.mcp_state_secret
    return secret.get_secret_value().encode() if secret is not None else _PROCESS_KEY


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def seal(answers: dict[str, Any], key: bytes) -> str:
    """`answers` as a `requestState`: the JSON, base64url, then `.` and its HMAC-SHA256."""
    payload = _b64(json.dumps(answers, separators=(",", ":"), sort_keys=True).encode())
    return f"{payload}.{_b64(hmac.new(key, payload.encode(), hashlib.sha256).digest())}"


def unseal(state: str, key: bytes) -> dict[str, Any]:
    """The answers of a `requestState` this server sealed; -32602 for any other."""
    payload, _, mac = state.partition(".")
    if hmac.compare_digest(mac, _b64(hmac.new(key, payload.encode(), hashlib.sha256).digest())):
        try:
            answers = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        except ValueError:
            answers = None
        if isinstance(answers, dict):
            return answers
    raise MCPError(
        INVALID_PARAMS, "requestState failed its integrity check: send back the one of the last input_required result"
    )


class InputRequired(BaseException):
    """Raised by `ask` on a 2026-07-28 connection whose retry has no answer yet; ends the handler
    (a BaseException, so a handler's `except Exception` lets it through) and becomes the result."""

    def __init__(self, key: str, message: str, schema: dict[str, Any], answers: dict[str, Any], sealed: str) -> None:
        super().__init__(key)
        self.key, self.message, self.schema, self.answers, self.sealed = key, message, schema, answers, sealed

    def result(self) -> InputRequiredToolResult:
        return InputRequiredToolResult(self.input_required())

    def input_required(self) -> mt.InputRequiredResult:
        """The question as the protocol's InputRequiredResult (a tool's, a prompt's)."""
        request = mt.ElicitRequest(
            params=mt.ElicitRequestFormParams(message=self.message, requested_schema=self.schema)
        )
        return mt.InputRequiredResult(input_requests={self.key: request}, request_state=self.sealed)


def _content(result: Any) -> dict[str, Any] | None:
    if getattr(result, "action", None) != "accept" or not isinstance(result.content, dict):
        return None
    return dict(result.content)


def asker(settings: Settings) -> Asker | None:
    """The asker of the MCP request being served, or None when its client cannot be asked."""
    rc = fastmcp_request_ctx.get()
    if rc is None or not rc.session.check_client_capability(ELICITATION):
        return None
    if rc.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return _retrying(state_key(settings))
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


def _retrying(state: bytes) -> Asker:
    ctx = get_context()
    answers: dict[str, Any] = unseal(ctx.request_state, state) if ctx.request_state else {}
    for key, response in (ctx.input_responses or {}).items():
        answers[key] = _content(response)

    def ask(key: str, message: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        if key in answers:
            answer: dict[str, Any] | None = answers[key]
            return answer
        raise InputRequired(key, message, schema, answers, seal(answers, state))

    return ask


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
