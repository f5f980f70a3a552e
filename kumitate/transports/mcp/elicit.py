"""`CallContext.ask`, `sample` and `roots` over MCP: elicitation, sampling and roots/list, in both
eras of the protocol.

A client that declared the capability a question needs is asked; otherwise the question gets None
(the handler then answers as it would without asking). Handshake-era connections (2025-06-18,
2025-11-25) get a server-initiated request (`elicitation/create`, `sampling/createMessage`,
`roots/list`), and the worker thread running the handler waits for the answer. On 2026-07-28 connections a server can no longer send requests: the call
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
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

import mcp_types as mt
from fastmcp.server.dependencies import FastMCPRequestContext, fastmcp_request_ctx, get_context
from fastmcp.tools.base import InputRequiredToolResult
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter, ValidationError

from kumitate.callstate import Asker, CallCancelled, Question
from kumitate.context import current_call
from kumitate.errors import ToolError
from kumitate.observability import calllog
from kumitate.settings import Settings

CAPABILITIES = {
    "elicitation": mt.ClientCapabilities(elicitation=mt.ElicitationCapability()),
    "sampling": mt.ClientCapabilities(sampling=mt.SamplingCapability()),
    "roots": mt.ClientCapabilities(roots=mt.RootsCapability()),
}
"""The client capability each kind of Question needs."""
POLL_S = 0.25
MAX_WAIT_S = 600.0
"""How long a call without a deadline waits for the user before it answers without asking."""
_PROCESS_KEY = secrets.token_bytes(32)
"""The `requestState` key where KUMITATE_MCP_STATE_SECRET is not set (a retry must reach this process)."""
Answer = dict[str, object] | str | list[str] | None
"""What a handler gets for one question: a form's content, a sampled text, the roots' URIs, or None (not asked,
declined); JSON, so that earlier rounds' answers travel in `requestState`."""
T = TypeVar("T")


def state_key(settings: Settings) -> bytes:
    """The key that seals a question's answers in the request state: the configured secret, which every
    instance shares, or else a key of this process only."""
    secret = settings.mcp_state_secret
    return secret.get_secret_value().encode() if secret is not None else _PROCESS_KEY


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def seal(answers: Mapping[str, Answer], key: bytes) -> str:
    """`answers` as a `requestState`: the JSON, base64url, then `.` and its HMAC-SHA256."""
    payload = _b64(json.dumps(answers, separators=(",", ":"), sort_keys=True).encode())
    return f"{payload}.{_b64(hmac.new(key, payload.encode(), hashlib.sha256).digest())}"


def unseal(state: str, key: bytes) -> dict[str, Answer]:
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

    def __init__(self, questions: Mapping[str, Question], answers: dict[str, Answer], sealed: str) -> None:
        super().__init__(*questions)
        self.questions, self.answers, self.sealed = dict(questions), answers, sealed

    def result(self) -> InputRequiredToolResult:
        """The question as a tool's result, which fastmcp sends as this round's answer."""
        return InputRequiredToolResult(self.input_required())

    def input_required(self) -> mt.InputRequiredResult:
        """The question as the protocol's InputRequiredResult (a tool's, a prompt's)."""
        requests = {key: _request(question) for key, question in self.questions.items()}
        return mt.InputRequiredResult(input_requests=requests, request_state=self.sealed)


def _request(question: Question) -> mt.CreateMessageRequest | mt.ListRootsRequest | mt.ElicitRequest:
    """The question as the server-to-client request of its kind."""
    if question.kind == "sampling":
        message = mt.SamplingMessage(role="user", content=mt.TextContent(type="text", text=question.message))
        return mt.CreateMessageRequest(
            params=mt.CreateMessageRequestParams(messages=[message], max_tokens=question.max_tokens)
        )
    if question.kind == "roots":
        return mt.ListRootsRequest()
    form = mt.ElicitRequestFormParams(message=question.message, requested_schema=question.schema or {})  # type: ignore[arg-type]
    return mt.ElicitRequest(params=form)


def _answer(result: object) -> Answer:
    """What a handler gets from the client's response: a form's content (None unless accepted),
    a sampled text, the roots' URIs."""
    if isinstance(result, mt.ListRootsResult):
        return [str(root.uri) for root in result.roots]
    if isinstance(result, mt.CreateMessageResult | mt.CreateMessageResultWithTools):
        blocks = result.content if isinstance(result.content, list) else [result.content]
        texts = [block.text for block in blocks if isinstance(block, mt.TextContent)]
        return "".join(texts) if texts else None
    content = getattr(result, "content", None)
    if getattr(result, "action", None) != "accept" or not isinstance(content, dict):
        return None
    return dict(content)


def declared_kinds() -> set[str]:
    """The kinds of Question the client of the MCP request being served declared it can answer."""
    rc = fastmcp_request_ctx.get()
    if rc is None:
        return set()
    return {kind for kind, capability in CAPABILITIES.items() if rc.session.check_client_capability(capability)}


def asker(settings: Settings) -> Asker | None:
    """The asker of the MCP request being served, or None when its client cannot be asked."""
    rc = fastmcp_request_ctx.get()
    declared = declared_kinds()
    if rc is None or not declared:
        return None
    inner = _retrying(settings) if rc.protocol_version in MODERN_PROTOCOL_VERSIONS else _pushing(rc)

    def ask(questions: Mapping[str, Question]) -> dict[str, Answer]:
        askable = {key: question for key, question in questions.items() if question.kind in declared}
        answers = inner(askable) if askable else {}
        return {key: answers.get(key) for key in questions}

    return ask


def _pushing(rc: FastMCPRequestContext) -> Asker:
    """Handshake era: the question as a request to the client, the worker thread waiting for it."""
    loop = asyncio.get_running_loop()
    session, request_id = rc.session, rc.request_id

    def send(question: Question) -> Coroutine[object, object, object]:
        if question.kind == "sampling":
            message = mt.SamplingMessage(role="user", content=mt.TextContent(type="text", text=question.message))
            return session.create_message([message], max_tokens=question.max_tokens, related_request_id=request_id)
        if question.kind == "roots":
            return session.list_roots()
        return session.elicit_form(question.message, question.schema or {}, related_request_id=request_id)  # type: ignore[arg-type]

    def ask(questions: Mapping[str, Question]) -> dict[str, Answer]:
        return {key: one(question) for key, question in questions.items()}

    def one(question: Question) -> Answer:
        if _on_loop(loop):
            raise RuntimeError("CallContext.ask blocks; call it from a sync handler (a worker thread)")
        future = asyncio.run_coroutine_threadsafe(send(question), loop)
        try:
            return _answer(_wait(future))
        except ToolError:  # the call's deadline passed while the user thought
            raise
        except Exception as exc:  # no back-channel (stateless HTTP), the client went away: not asked
            calllog.log_event("elicitation_failed", error_type=type(exc).__name__)
            return None
        finally:
            future.cancel()

    return ask


def _wait(future: concurrent.futures.Future[T]) -> T:
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


def given_answers(settings: Settings) -> dict[str, Answer]:
    """The answers a 2026-07-28 retry carries: earlier rounds' from its (checked) `requestState`,
    this round's from its `inputResponses`."""
    ctx = get_context()
    answers = unseal(ctx.request_state, state_key(settings)) if ctx.request_state else {}
    for key, response in (ctx.input_responses or {}).items():
        answers[key] = _answer(response)
    return answers


_RESPONSES: dict[str, TypeAdapter[Any]] = {
    "elicitation": TypeAdapter(mt.ElicitResult),
    "sampling": TypeAdapter(mt.CreateMessageResult | mt.CreateMessageResultWithTools),
    "roots": TypeAdapter(mt.ListRootsResult),
}


def input_request(question: Mapping[str, Any]) -> dict[str, Any]:
    """A question (a Question's fields, as a task stores it) as the request an `inputRequests` entry holds."""
    return _request(Question(**question)).model_dump(by_alias=True, mode="json", exclude_none=True)


def answer_of(question: Mapping[str, Any], response: object) -> Answer:
    """What a handler gets from a client's response to `question` (a Question's fields); -32602
    when the response is not one to a question of its kind."""
    try:
        return _answer(_RESPONSES[question["kind"]].validate_python(response))
    except ValidationError as exc:
        raise MCPError(
            INVALID_PARAMS, f"not a response to a {question['kind']} request: {exc.errors()[0]['msg']}"
        ) from None


def _retrying(settings: Settings) -> Asker:
    answers = given_answers(settings)
    state = state_key(settings)

    def ask(questions: Mapping[str, Question]) -> dict[str, Answer]:
        unanswered = {key: question for key, question in questions.items() if key not in answers}
        if unanswered:
            raise InputRequired(unanswered, answers, seal(answers, state))
        return {key: answers[key] for key in questions}

    return ask


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
