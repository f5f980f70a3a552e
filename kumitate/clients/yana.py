"""Client side of yana (seed 001): a typed client over HTTP, MCP or in-process, and the Speaker provider.

`YanaClient` offers chat/search/ingest/healthz/version whatever the transport:

* `HttpTransport(base_url, token)`  — the /v1/* JSON routes, Bearer auth, X-Run-Id header;
* `McpTransport(target, token)`     — fastmcp Client; target = an MCP URL, a stdio command
  (list of strings) or a FastMCP server object (in-memory, for tests); run_id travels in `_meta`;
* `LocalTransport(handlers)`        — the yana handlers in this process (no server).

Failures are `YanaError(code, message, retryable, …)` with the seed's error codes.

`YanaSpeaker` implements the seed's `SpeakerProvider.generate()` for duo-talk's A role:
1. chat with the configured use_rag/top_k/filters and a deadline of timeout_ms;
2. RAG_UNAVAILABLE → resend once with use_rag=false;
3. another retryable error → retry once after an exponential backoff (with jitter);
4. still failing → a fixed short text (SPEAKER_A_ON_FAILURE=fallback) or skip the turn
   (SPEAKER_A_ON_FAILURE=skip: text "" and meta["skipped"] = True);
5. shaping after yana's own policy: ≤ 5 sentences, ≤ 1 aizuchi (せやなー/せやせや);
   a reply with nothing left but aizuchi/punctuation is a failure too (meta error EMPTY_REPLY,
   no retry) and goes through step 4.

run_id (and a session id: generate(session_id=…) or SPEAKER_A_SESSION_ID) also travel in the
chat `context` as runId/sessionId, the seed's pass-through, when they are valid ids.

Configuration comes from SPEAKER_A_* variables (`SpeakerConfig.from_env`).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict

import httpx

from handlers.yana.voice import split_sentences  # one sentence rule for server policy and duo shaping

_SAFE_ID = re.compile(r"^[A-Za-z0-9._:@/+=-]{1,128}$")  # the server's id rule (kumitate.correlation, ChatContext)


def clean_id(value: str | None) -> str | None:
    """`value` if yana accepts it as a run/session id, else None (it is then simply not sent)."""
    return value if isinstance(value, str) and _SAFE_ID.match(value) else None


RETRYABLE = frozenset(
    {"REQUEST_TIMEOUT", "RATE_LIMITED", "UPSTREAM_ERROR", "SERVICE_UNAVAILABLE", "UPSTREAM_TIMEOUT", "RAG_UNAVAILABLE"}
)
HTTP_PATHS = {"chat": "/v1/chat", "search": "/v1/search", "ingest": "/v1/ingest"}
RESOURCES = {"healthz": ("/v1/healthz", "yana://healthz"), "version": ("/v1/version", "yana://version")}


class YanaError(Exception):
    """A failed call, in the seed's error contract."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        retryable: bool | None = None,
        status: int | None = None,
        run_id: str | None = None,
        trace_id: str | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retryable = code in RETRYABLE if retryable is None else retryable
        self.status = status
        self.run_id = run_id
        self.trace_id = trace_id


class Hit(TypedDict):
    id: str
    brand_name: str
    product_name: str
    brewery: str
    region: str
    category: str
    label_features: list[str]
    file_path: str


class ChatResult(TypedDict, total=False):
    reply: str
    hits: list[Hit]
    llm: str
    elapsed_ms: int
    rag_hit_count: int
    warnings: list[str]
    run_id: str
    trace_id: str
    server_version: str
    policy_version: str


class SearchResult(TypedDict, total=False):
    hits: list[Hit]
    next_page: int | None
    total: int
    debug: dict[str, Any]
    run_id: str
    trace_id: str


class IngestResult(TypedDict, total=False):
    id: str
    dedup: bool
    hash_sha1: str
    phash: str
    near_duplicates: list[str]
    run_id: str
    trace_id: str


class Transport(Protocol):
    source: str

    def call(self, tool: str, args: dict[str, Any], *, run_id: str, timeout_s: float) -> dict[str, Any]: ...

    def read(self, resource: str, *, timeout_s: float) -> dict[str, Any]: ...


def _error_from_body(body: Any, status: int | None) -> YanaError:
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict) and "code" in err:
        return YanaError(
            str(err["code"]),
            str(err.get("message", "")),
            retryable=err.get("retryable"),
            status=status,
            run_id=body.get("run_id"),
            trace_id=body.get("trace_id"),
        )
    code = {408: "REQUEST_TIMEOUT", 429: "RATE_LIMITED", 503: "SERVICE_UNAVAILABLE", 504: "UPSTREAM_TIMEOUT"}.get(
        status or 0, "UPSTREAM_ERROR" if (status or 0) >= 500 else "BAD_REQUEST"
    )
    return YanaError(code, f"HTTP {status} without an error body", status=status)


class HttpTransport:
    source = "http_v1"

    def __init__(self, base_url: str, token: str | None = None, *, client: httpx.Client | None = None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = client or httpx.Client(base_url=base_url.rstrip("/"), headers=headers)

    def _send(self, method: str, path: str, body: Any, run_id: str | None, timeout_s: float) -> dict[str, Any]:
        headers = {"X-Run-Id": run_id} if run_id else {}
        try:
            response = self._http.request(method, path, json=body, headers=headers, timeout=timeout_s)
        except httpx.TimeoutException:
            raise YanaError("REQUEST_TIMEOUT", "yana did not answer in time", retryable=True) from None
        except httpx.TransportError as exc:
            raise YanaError("SERVICE_UNAVAILABLE", f"cannot reach yana: {type(exc).__name__}", retryable=True) from None
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.status_code >= 400 or not isinstance(data, dict):
            raise _error_from_body(data, response.status_code)
        data.setdefault("trace_id", response.headers.get("X-Trace-Id"))
        return data

    def call(self, tool: str, args: dict[str, Any], *, run_id: str, timeout_s: float) -> dict[str, Any]:
        return self._send("POST", HTTP_PATHS[tool], args, run_id, timeout_s)

    def read(self, resource: str, *, timeout_s: float) -> dict[str, Any]:
        return self._send("GET", RESOURCES[resource][0], None, None, timeout_s)


class McpTransport:
    """fastmcp Client per call (sync wrapper): simple and safe across threads; ~ms overhead over HTTP."""

    source = "mcp_v1"

    def __init__(self, target: Any, token: str | None = None) -> None:
        self.target = target
        self.token = token

    def _client(self, timeout_s: float) -> Any:
        from fastmcp import Client
        from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

        target = self.target
        if isinstance(target, str) and target.startswith(("http://", "https://")):
            headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
            target = StreamableHttpTransport(target, headers=headers)
        elif isinstance(target, list | tuple):
            target = StdioTransport(command=target[0], args=list(target[1:]), env=dict(os.environ))
        return Client(target, timeout=timeout_s)

    def call(self, tool: str, args: dict[str, Any], *, run_id: str, timeout_s: float) -> dict[str, Any]:
        async def run() -> Any:
            async with self._client(timeout_s) as client:
                return await client.call_tool(tool, args, raise_on_error=False, meta={"run_id": run_id})

        try:
            result = asyncio.run(run())
        except TimeoutError:
            raise YanaError("REQUEST_TIMEOUT", "yana did not answer in time", retryable=True) from None
        except (OSError, RuntimeError) as exc:
            raise YanaError("SERVICE_UNAVAILABLE", f"cannot reach yana over MCP: {exc}", retryable=True) from None
        data = result.structured_content
        if data is None and result.content:
            try:
                data = json.loads(result.content[0].text)
            except (AttributeError, ValueError):
                data = None
        if result.is_error or not isinstance(data, dict):
            raise (
                _error_from_body(data, None)
                if isinstance(data, dict)
                else YanaError("UPSTREAM_ERROR", str(result.content[0].text if result.content else "MCP error"))
            )
        return data

    def read(self, resource: str, *, timeout_s: float) -> dict[str, Any]:
        async def run() -> Any:
            async with self._client(timeout_s) as client:
                return await client.read_resource(RESOURCES[resource][1])

        contents = asyncio.run(run())
        return json.loads(contents[0].text)  # type: ignore[no-any-return]


class LocalTransport:
    """The yana handlers in this process (SPEAKER_A_MODE=local): no network, same results and codes."""

    source = "local"

    def __init__(self, handlers: Any) -> None:
        self.handlers = handlers

    def call(self, tool: str, args: dict[str, Any], *, run_id: str, timeout_s: float) -> dict[str, Any]:
        from kumitate.context import CallContext
        from kumitate.errors import ToolError

        ctx = CallContext(service="yana", tool=tool, transport="local", run_id=run_id, trace_id=uuid.uuid4().hex)
        try:
            body = getattr(self.handlers, tool)(args, ctx)
        except ToolError as exc:
            raise YanaError(exc.code, exc.message, run_id=run_id, trace_id=ctx.trace_id) from None
        return {**body, "run_id": run_id, "trace_id": ctx.trace_id}

    def read(self, resource: str, *, timeout_s: float) -> dict[str, Any]:
        from kumitate.context import CallContext

        ctx = CallContext(
            service="yana", tool=resource, transport="local", run_id=uuid.uuid4().hex, trace_id=uuid.uuid4().hex
        )
        return getattr(self.handlers, f"read_{resource}")(ctx)  # type: ignore[no-any-return]


class YanaClient:
    """Typed calls to yana over any transport."""

    def __init__(self, transport: Transport, *, timeout_s: float = 12.0) -> None:
        self.transport = transport
        self.timeout_s = timeout_s

    def _call(self, tool: str, args: dict[str, Any], run_id: str | None, timeout_s: float | None) -> dict[str, Any]:
        return self.transport.call(
            tool,
            {k: v for k, v in args.items() if v is not None},
            run_id=run_id or uuid.uuid4().hex,
            timeout_s=timeout_s or self.timeout_s,
        )

    def chat(
        self,
        user_text: str,
        *,
        use_rag: bool = True,
        top_k: int = 5,
        filters: dict[str, str] | None = None,
        context: dict[str, Any] | None = None,
        run_id: str | None = None,
        session_id: str | None = None,
        timeout_s: float | None = None,
    ) -> ChatResult:
        """One chat turn. A given `run_id`/`session_id` also travels as context.runId/sessionId (seed:
        "context.sessionId/runId はそのまま受け渡し") when it is a valid id; the header/_meta carry run_id too."""
        ctx = dict(context or {})
        for key, value in (("runId", run_id), ("sessionId", session_id)):
            if key not in ctx and (safe := clean_id(value)):
                ctx[key] = safe
        args = {"user_text": user_text, "use_rag": use_rag, "top_k": top_k, "filters": filters, "context": ctx or None}
        return self._call("chat", args, run_id, timeout_s)  # type: ignore[return-value]

    def search(
        self,
        query_text: str = "",
        *,
        filters: dict[str, str] | None = None,
        k: int = 10,
        sort_by: str = "relevance",
        page: int = 1,
        page_size: int = 10,
        run_id: str | None = None,
        timeout_s: float | None = None,
    ) -> SearchResult:
        args = {
            "query_text": query_text,
            "filters": filters,
            "k": k,
            "sort_by": sort_by,
            "page": page,
            "page_size": page_size,
        }
        return self._call("search", args, run_id, timeout_s)  # type: ignore[return-value]

    def ingest(
        self,
        *,
        brand_name: str,
        image_b64: str | None = None,
        uri: str | None = None,
        run_id: str | None = None,
        **metadata: Any,
    ) -> IngestResult:
        args = {"brand_name": brand_name, "image": image_b64, "uri": uri, **metadata}
        return self._call("ingest", args, run_id, None)  # type: ignore[return-value]

    def healthz(self) -> dict[str, Any]:
        return self.transport.read("healthz", timeout_s=self.timeout_s)

    def version(self) -> dict[str, Any]:
        return self.transport.read("version", timeout_s=self.timeout_s)


# --- Speaker provider ---------------------------------------------------------------------------


class SpeakerProvider(Protocol):
    def generate(
        self, user_text: str, *, run_id: str, top_k: int, filters: dict[str, Any], timeout_ms: int
    ) -> tuple[str, dict[str, Any]]: ...


_AIZUCHI = re.compile(r"(?:せやせや|せやな[ーあぁ〜~]*)[、,，!！。]*")


def shape_text(text: str, max_sentences: int = 5) -> tuple[str, list[str]]:
    """duo side shaping, after yana's policy: ≤ max_sentences sentences and at most one aizuchi."""
    notes: list[str] = []
    seen = False

    def keep_first(match: re.Match[str]) -> str:
        nonlocal seen
        if seen:
            return ""
        seen = True
        return match.group(0)

    shaped = _AIZUCHI.sub(keep_first, text)
    if shaped != text:
        notes.append("client_removed_extra_aizuchi")
    sentences = split_sentences(shaped)
    if len(sentences) > max_sentences:
        sentences = sentences[:max_sentences]
        notes.append("client_trimmed_to_5_sentences")
    return "".join(sentences), notes


_NOT_SPEECH = re.compile(r"[\W_]+")


def _has_content(text: str) -> bool:
    """Anything left besides aizuchi, punctuation and whitespace (「せやなー、」 alone says nothing)."""
    return bool(_NOT_SPEECH.sub("", _AIZUCHI.sub("", text)))


def _bool(value: str | None, default: bool) -> bool:
    return default if value is None else value.strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True, slots=True)
class SpeakerConfig:
    """SPEAKER_A_* settings (seed 001 '.env' section), plus the failure behaviour."""

    mode: str = "http"  # http | mcp | local
    http_base: str = "http://127.0.0.1:8000"
    mcp_target: str = "http://127.0.0.1:8000/mcp/yana"  # URL, or a command line for stdio
    use_rag: bool = True
    top_k: int = 5
    filters: dict[str, Any] = field(default_factory=dict)
    timeout_ms: int = 12000
    auth_token: str | None = None
    on_failure: str = "fallback"  # fallback | skip
    fallback_text: str = "せやなー、ちょっと考えさせてな。"
    backoff_s: float = 0.2
    session_id: str | None = None  # sent as context.sessionId unless generate() is given one

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SpeakerConfig:
        e = os.environ if env is None else env
        return cls(
            mode=e.get("SPEAKER_A_MODE", "http"),
            http_base=e.get("SPEAKER_A_HTTP_BASE", "http://127.0.0.1:8000"),
            mcp_target=e.get("SPEAKER_A_MCP_TARGET", "http://127.0.0.1:8000/mcp/yana"),
            use_rag=_bool(e.get("SPEAKER_A_USE_RAG"), True),
            top_k=int(e.get("SPEAKER_A_TOP_K", "5")),
            filters=json.loads(e.get("SPEAKER_A_FILTERS_JSON") or "{}"),
            timeout_ms=int(e.get("SPEAKER_A_TIMEOUT_MS", "12000")),
            auth_token=e.get("SPEAKER_A_AUTH_TOKEN") or None,
            on_failure=e.get("SPEAKER_A_ON_FAILURE", "fallback"),
            fallback_text=e.get("SPEAKER_A_FALLBACK_TEXT", "せやなー、ちょっと考えさせてな。"),
            session_id=e.get("SPEAKER_A_SESSION_ID") or None,
        )

    def build_client(self, handlers: Any = None) -> YanaClient:
        """The client for `mode`; local mode uses `handlers` or creates yana in-process from the environment."""
        if self.mode == "http":
            return YanaClient(HttpTransport(self.http_base, self.auth_token))
        if self.mode == "mcp":
            target: Any = self.mcp_target
            if not target.startswith(("http://", "https://")):
                target = target.split()
            return YanaClient(McpTransport(target, self.auth_token))
        if self.mode == "local":
            if handlers is None:
                from handlers.yana import create
                from kumitate.settings import Settings

                handlers = create(Settings.from_env())
            return YanaClient(LocalTransport(handlers))
        raise ValueError(f"SPEAKER_A_MODE must be http, mcp or local, not {self.mode!r}")


class YanaSpeaker:
    """SpeakerProvider for duo-talk's A role, backed by yana."""

    def __init__(
        self,
        client: YanaClient,
        config: SpeakerConfig | None = None,
        *,
        sleep: Any = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.config = config or SpeakerConfig()
        self._sleep = sleep
        self._rng = rng or random.Random()

    def generate(
        self,
        user_text: str,
        *,
        run_id: str,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
        timeout_ms: int | None = None,
        session_id: str | None = None,
    ) -> tuple[str, dict[str, Any]]:
        cfg = self.config
        timeout_s = (timeout_ms or cfg.timeout_ms) / 1000
        use_rag = cfg.use_rag
        attempts, retried, rag_dropped = 0, False, False
        notes: list[str] = []
        while True:
            attempts += 1
            try:
                result = self.client.chat(
                    user_text,
                    use_rag=use_rag,
                    top_k=top_k or cfg.top_k,
                    filters=filters if filters is not None else cfg.filters,
                    run_id=run_id,
                    session_id=session_id or cfg.session_id,
                    timeout_s=timeout_s,
                )
                break
            except YanaError as exc:
                error = exc
            if error.code == "RAG_UNAVAILABLE" and use_rag and not rag_dropped:
                use_rag, rag_dropped = False, True
                notes.append("rag_down_resent_without_rag")
                continue
            if error.retryable and not retried:
                retried = True
                self._sleep(cfg.backoff_s * (1 + self._rng.uniform(0, 0.5)))  # 2^0 · base, jittered
                continue
            return self._failed(error, run_id=run_id, attempts=attempts, notes=notes)
        text, shaping = shape_text(result.get("reply", ""))
        if not _has_content(text):  # nothing to say after shaping: a failed turn, not a silent success
            error = YanaError(
                "EMPTY_REPLY", "yana's reply is empty after shaping", retryable=False, trace_id=result.get("trace_id")
            )
            return self._failed(
                error, run_id=run_id, attempts=attempts, notes=[*result.get("warnings", []), *notes, *shaping]
            )
        return text, {
            "hits": result.get("hits", []),
            "elapsed_ms": result.get("elapsed_ms", 0),
            "trace_id": result.get("trace_id"),
            "run_id": result.get("run_id", run_id),
            "warnings": list(result.get("warnings", [])) + notes + shaping,
            "source": self.client.transport.source,
            "llm": result.get("llm"),
            "rag_used": use_rag,
            "attempts": attempts,
        }

    def _failed(self, error: YanaError, *, run_id: str, attempts: int, notes: list[str]) -> tuple[str, dict[str, Any]]:
        """The turn failed: the fixed short text, or skip it ("" and meta.skipped), per SPEAKER_A_ON_FAILURE."""
        meta = {
            "source": self.client.transport.source,
            "run_id": run_id,
            "trace_id": error.trace_id,
            "attempts": attempts,
            "error": error.code,
            "warnings": notes,
            "hits": [],
            "elapsed_ms": 0,
        }
        if self.config.on_failure == "skip":
            return "", {**meta, "skipped": True}
        return self.config.fallback_text, {**meta, "fallback": True}
