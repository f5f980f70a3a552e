"""duo-talk's SpeakerProvider (seed 001) for the A role, as a thin layer over the generated yana client.

`YanaSpeaker.generate()`:
1. chat with the configured use_rag/top_k/filters and a deadline of timeout_ms;
2. RAG_UNAVAILABLE → resend once with use_rag=false;
3. another retryable error (or a lost answer: chat changes nothing, so repeating it is safe)
   → retry once after an exponential backoff (with jitter);
4. still failing → a fixed short text (SPEAKER_A_ON_FAILURE=fallback) or skip the turn
   (SPEAKER_A_ON_FAILURE=skip: text "" and meta["skipped"] = True);
5. shaping after yana's own policy: ≤ 5 sentences, ≤ 1 aizuchi (せやなー/せやせや);
   a reply with nothing left but aizuchi/punctuation is a failure too (meta error EMPTY_REPLY,
   no retry) and goes through step 4.

run_id (and a session id: generate(session_id=…) or SPEAKER_A_SESSION_ID) also travel in the
chat `context` as runId/sessionId, the seed's pass-through, when they are valid ids.

The wire is the generated client's (generated/yana/client.py over kumitate/client.py): HTTP /v1,
MCP streamable HTTP or stdio, or in process through the pipeline (handlers/yana/client/local.py).
Its own retries are off: the seed's order above is the speaker's.
"""

from __future__ import annotations

import contextvars
import json
import os
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import httpx

from generated.yana.client import YanaClient
from handlers.yana.client.sentences import split_sentences
from kumitate.client import NO_RETRY, BlockingBackend, HttpBackend, McpBackend
from kumitate.errors import ErrorCode, ToolError

if TYPE_CHECKING:
    from kumitate.runtime import Runtime

YanaError = ToolError
"""What a failed call raises: the generated class of its catalogue code (generated/errors.py)."""

_SAFE_ID = re.compile(
    r"^[A-Za-z0-9._:@/+=-]{1,128}$"
)  # the server's id rule (kumitate.observability.correlation, ChatContext)
_LOST_ANSWER: frozenset[ErrorCode] = frozenset({"REQUEST_TIMEOUT", "SERVICE_UNAVAILABLE"})
EMPTY_REPLY = "EMPTY_REPLY"
"""meta.error of a reply with nothing left after shaping: the speaker's own verdict, not a catalogue code."""
SOURCES = {"http": "http_v1", "mcp": "mcp_v1", "local": "local"}
_call_timeout_s: contextvars.ContextVar[float | None] = contextvars.ContextVar("yana_call_timeout_s", default=None)


def clean_id(value: str | None) -> str | None:
    """`value` if yana accepts it as a run/session id, else None (it is then simply not sent)."""
    return value if isinstance(value, str) and _SAFE_ID.match(value) else None


class SpeakerProvider(Protocol):
    """What the duo-talk caller needs of a speaker: a reply to the user's text and its metadata."""

    def generate(
        self, user_text: str, *, run_id: str, top_k: int, filters: dict[str, Any], timeout_ms: int
    ) -> tuple[str, dict[str, Any]]:
        """The speaker's reply to `user_text` and the metadata to log with it (sources, timings, fallbacks)."""


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


def _per_call_timeout(request: httpx.Request) -> None:
    """httpx request hook: the deadline of the current generate() call (its timeout_ms) for this request."""
    timeout_s = _call_timeout_s.get()
    if timeout_s is not None:
        request.extensions["timeout"] = httpx.Timeout(timeout_s).as_dict()


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
        """The configuration from SPEAKER_A_* variables (`env`, else the process environment), with defaults."""
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

    @property
    def source(self) -> str:
        """meta["source"] of a turn: http_v1, mcp_v1 or local."""
        if self.mode not in SOURCES:
            raise ValueError(f"SPEAKER_A_MODE must be http, mcp or local, not {self.mode!r}")
        return SOURCES[self.mode]

    def build_client(self, runtime: Runtime | None = None) -> YanaClient:
        """The generated client for `mode`; local mode calls `runtime`'s pipeline, or that of a yana
        runtime built in this process from the environment (KUMITATE_DATA_DIR, KUMITATE_DATABASE_URL …)."""
        timeout_s = self.timeout_ms / 1000
        _ = self.source  # an unknown mode fails here, before anything is opened
        if self.mode == "http":
            http = httpx.Client(
                base_url=self.http_base.rstrip("/"), timeout=timeout_s, event_hooks={"request": [_per_call_timeout]}
            )
            return YanaClient(HttpBackend(self.http_base, token=self.auth_token, client=http), retry=NO_RETRY)
        if self.mode == "mcp":
            target = self.mcp_target
            mcp = (
                McpBackend(target, token=self.auth_token, timeout_s=timeout_s)
                if target.startswith(("http://", "https://"))
                else McpBackend(target.split(), timeout_s=timeout_s)
            )
            return YanaClient(BlockingBackend(mcp), retry=NO_RETRY)
        from handlers.yana.client.local import LocalBackend

        local = LocalBackend(runtime) if runtime is not None else LocalBackend.start(["yana"])
        return YanaClient(BlockingBackend(local), retry=NO_RETRY)


class YanaSpeaker:
    """SpeakerProvider for duo-talk's A role, backed by yana through the generated client."""

    def __init__(
        self,
        client: YanaClient,
        config: SpeakerConfig | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.config = config or SpeakerConfig()
        self._sleep = sleep
        self._rng = rng or random.Random()

    def _chat(self, arguments: dict[str, Any], run_id: str, timeout_s: float) -> Any:
        token = _call_timeout_s.set(timeout_s)
        try:
            return self.client.chat(arguments, run_id=run_id)
        finally:
            _call_timeout_s.reset(token)

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
        """Ask yana's chat for a reply (HTTP or MCP, retrying and falling back as configured) and shape
        it for the speaker: the text, and metadata saying which path answered."""
        cfg = self.config
        timeout_s = (timeout_ms or cfg.timeout_ms) / 1000
        use_rag = cfg.use_rag
        attempts, retried, rag_dropped = 0, False, False
        notes: list[str] = []
        context = {
            key: safe
            for key, value in (("runId", run_id), ("sessionId", session_id or cfg.session_id))
            if (safe := clean_id(value))
        }
        while True:
            attempts += 1
            arguments = {
                "user_text": user_text,
                "use_rag": use_rag,
                "top_k": top_k or cfg.top_k,
                "filters": filters if filters is not None else cfg.filters,
                "context": context or None,
            }
            try:
                result = self._chat({k: v for k, v in arguments.items() if v is not None}, run_id, timeout_s)
                break
            except ToolError as exc:
                error = exc
            if error.code == "RAG_UNAVAILABLE" and use_rag and not rag_dropped:
                use_rag, rag_dropped = False, True
                notes.append("rag_down_resent_without_rag")
                continue
            if (error.retryable or error.code in _LOST_ANSWER) and not retried:
                retried = True
                self._sleep(cfg.backoff_s * (1 + self._rng.uniform(0, 0.5)))  # 2^0 · base, jittered
                continue
            return self._failed(error.code, error.trace_id, run_id=run_id, attempts=attempts, notes=notes)
        text, shaping = shape_text(result.reply)
        if not _has_content(text):  # nothing to say after shaping: a failed turn, not a silent success
            notes = [*result.warnings, *notes, *shaping]
            return self._failed(EMPTY_REPLY, result.trace_id, run_id=run_id, attempts=attempts, notes=notes)
        return text, {
            "hits": [hit.model_dump(mode="json", exclude_unset=True) for hit in result.hits],
            "elapsed_ms": result.elapsed_ms,
            "trace_id": result.trace_id,
            "run_id": result.run_id or run_id,
            "warnings": [*result.warnings, *notes, *shaping],
            "source": cfg.source,
            "llm": getattr(result.llm, "value", result.llm),
            "rag_used": use_rag,
            "attempts": attempts,
        }

    def _failed(
        self, code: str, trace_id: str | None, *, run_id: str, attempts: int, notes: list[str]
    ) -> tuple[str, dict[str, Any]]:
        """The turn failed (`code`: the server's catalogue code, or EMPTY_REPLY): the fixed short text, or
        skip it ("" and meta.skipped), per SPEAKER_A_ON_FAILURE."""
        meta = {
            "source": self.config.source,
            "run_id": run_id,
            "trace_id": trace_id,
            "attempts": attempts,
            "error": code,
            "warnings": notes,
            "hits": [],
            "elapsed_ms": 0,
        }
        if self.config.on_failure == "skip":
            return "", {**meta, "skipped": True}
        return self.config.fallback_text, {**meta, "fallback": True}
