"""yana (澄ヶ瀬やな, seed 001): chat / search / ingest over a sake & juice label knowledge base.

This module is the thin adapter between the generated models and the domain
core (kb, search, chat, ingest, voice, generate). It owns process-wide state:
the knowledge base (loaded from data/yana/ on first start), the LLM client and
its circuit breaker, the call journal, and `last_error` for /v1/healthz.

Layout: settings.py (YanaSettings: every variable yana reads), store/ (the knowledge base on the
runtime's database: store/labels.py the tables and SQL, store/kb.py first-start loading and the
search documents), core/ (chat, search, ingest, the reply policy, the LLM), which uses store/ and never
the other way round, and the text analysis both use: japanese.py (folding, readings, query words) and
text.py (normalisation, region terms, fingerprints).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from generated.yana.errors import NotFoundError
from generated.yana.models import (
    ChatInput,
    ChatOutput,
    HealthzResource,
    IngestInput,
    IngestOutput,
    LabelGroup,
    LogsTodayResource,
    SearchInput,
    SearchOutput,
    VersionResource,
)
from handlers.yana.core.chat import chat as chat_core
from handlers.yana.core.fetch import ImageFetcher
from handlers.yana.core.generate import LlmConfig, OpenAIChat
from handlers.yana.core.ingest import MAX_BYTES, allowed_roots
from handlers.yana.core.ingest import ingest as ingest_core
from handlers.yana.core.search import rag_unavailable
from handlers.yana.core.search import search as search_core
from handlers.yana.core.status import POLICY_VERSION, SERVER_VERSION, Journal, caller_ids
from handlers.yana.core.voice import apply_policy
from handlers.yana.settings import YanaSettings
from handlers.yana.store.kb import KnowledgeBase
from kumitate import datadir, faults
from kumitate.context import CallContext
from kumitate.errors import ToolError
from kumitate.service import ServiceSetup


def _envelope(ctx: CallContext) -> dict[str, str]:
    """The success envelope every tool output declares (the pipeline sets the same values on the wire)."""
    return {
        "run_id": ctx.run_id,
        "trace_id": ctx.trace_id,
        "server_version": SERVER_VERSION,
        "policy_version": POLICY_VERSION,
    }


def _as_dict(value: BaseModel) -> dict[str, Any]:
    """Generated pydantic input → the JSON-shaped dict the core works on."""
    return value.model_dump(mode="json", exclude_none=True)


class YanaHandlers:
    """One instance per process; methods are plain `def` (blocking SQLite/HTTP run in worker threads)."""

    def __init__(self, setup: ServiceSetup) -> None:
        settings = setup.read(YanaSettings)
        self.state_dir = setup.data_dir
        self.database = setup.database
        samples = setup.settings.sample_dir  # data/: stored file_paths read data/yana/…
        self.kb = KnowledgeBase(self.database, samples, self.state_dir)
        config = LlmConfig.from_settings(settings)
        self.llm = OpenAIChat(config) if config else None
        self.model = config.model if config else "template"
        self.phash_threshold = settings.dedup_phash
        self.expose_logs = settings.expose_logs
        self.uploads = settings.uploads_dir or self.state_dir / "uploads"
        self.roots = allowed_roots(samples, self.uploads, settings.ingest_allow_dirs)
        self.fetcher = ImageFetcher.from_settings(settings, MAX_BYTES)
        self.journal = Journal(self.state_dir / "logs")
        self.started = time.monotonic()
        self.last_error: str | None = None

    def _run(
        self, tool: str, ctx: CallContext, fn: Callable[[], dict[str, Any]], *, ids: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """Run one call and journal its outcome (ids, counts, warnings; never inputs).

        A ToolError is journaled with its code; any other exception (a bug) as INTERNAL
        with its type name, and re-raised for the pipeline to answer 500 INTERNAL.
        """
        started = time.perf_counter()
        entry: dict[str, Any] = {"tool": tool, "run_id": ctx.run_id, "trace_id": ctx.trace_id, **(ids or {})}
        try:
            result = fn()
        except ToolError as exc:
            self.last_error = f"{tool}:{exc.code}"
            self.journal.write(
                {**entry, "outcome": exc.code, "elapsed_ms": int((time.perf_counter() - started) * 1000)}
            )
            raise
        except Exception as exc:
            self.last_error = f"{tool}:INTERNAL"
            self.journal.write(
                {
                    **entry,
                    "outcome": "INTERNAL",
                    "error_type": type(exc).__name__,  # the type only: a message may quote user input
                    "elapsed_ms": int((time.perf_counter() - started) * 1000),
                }
            )
            raise
        entry.update(outcome="OK", elapsed_ms=int((time.perf_counter() - started) * 1000))
        if "hits" in result:
            entry["hits"] = len(result["hits"])
        if tool == "chat":
            entry.update(llm=result["llm"], warnings=result["warnings"])
        self.journal.write(entry)
        return result

    # tools ---------------------------------------------------------------------------------------

    def chat(self, input: ChatInput, ctx: CallContext) -> ChatOutput:
        params = _as_dict(input)

        def call() -> dict[str, Any]:
            body, fallback = chat_core(self.kb, self.llm, params, phash_threshold=self.phash_threshold)
            if fallback:
                self.last_error = f"llm_fallback:{fallback}"
            return body

        body = self._run("chat", ctx, call, ids=caller_ids(params.get("context")))
        return ChatOutput.model_validate({**body, **_envelope(ctx)})

    def search(self, input: SearchInput, ctx: CallContext) -> SearchOutput:
        def call() -> dict[str, Any]:
            with rag_unavailable("the label knowledge base cannot be read"):
                return search_core(self.kb, _as_dict(input), phash_threshold=self.phash_threshold)

        return SearchOutput.model_validate({**self._run("search", ctx, call), **_envelope(ctx)})

    def ingest(self, input: IngestInput, ctx: CallContext) -> IngestOutput:
        body = self._run(
            "ingest",
            ctx,
            lambda: ingest_core(
                self.kb,
                _as_dict(input),
                uploads=self.uploads,
                roots=self.roots,
                phash_threshold=self.phash_threshold,
                fetcher=self.fetcher,
            ),
        )
        if not body["dedup"]:  # a new label: its brand's and brewery's groups changed (names as stored)
            for resource, name in (("brand", input.brand_name), ("brewery", input.brewery)):
                if name and name.strip():
                    ctx.changed(resource, **{resource: name.strip()})
        return IngestOutput.model_validate({**body, **_envelope(ctx)})

    # resources -----------------------------------------------------------------------------------

    def read_healthz(self, ctx: CallContext) -> HealthzResource:
        storage_problem = datadir.probe(self.state_dir)
        if storage_problem is not None:  # a full or read-only disk is not healthy: 503, retryable
            raise faults.storage_error()
        try:
            rag_ok = self.kb.count() > 0
        except Exception:
            rag_ok = False
        reply, _ = apply_policy("テストです。", "テスト")
        body: dict[str, Any] = {
            "llm_ok": self.llm is None or self.llm.breaker.state != "open",
            "rag_ok": rag_ok,
            "policy_ok": reply == "せやなー、テストです。",
            "uptime_s": round(time.monotonic() - self.started, 3),
            "llm_mode": "openai" if self.llm else "template",
            "breaker": self.llm.breaker.state if self.llm else "closed",
        }
        if self.last_error:
            body["last_error"] = self.last_error
        return HealthzResource.model_validate(body)

    def read_version(self, ctx: CallContext) -> VersionResource:
        return VersionResource(server_version=SERVER_VERSION, policy_version=POLICY_VERSION, model=self.model)

    def read_brand(self, ctx: CallContext, brand: str) -> LabelGroup:
        return self._group("brand_name", brand, "brand")

    def read_brewery(self, ctx: CallContext, brewery: str) -> LabelGroup:
        return self._group("brewery", brewery, "brewery")

    def _group(self, field: str, value: str, what: str) -> LabelGroup:
        labels = self.kb.group(field, value)
        if not labels:
            raise NotFoundError(f"no label of the {what} {value!r}; search finds near names")
        return LabelGroup.model_validate({"field": field, "value": value, "labels": labels})

    # completions (the `completions:` of specs/yana/resources/)
    def complete_brand_names(self, ctx: CallContext, prefix: str, arguments: dict[str, str]) -> list[str]:
        return self.kb.names("brand_name", prefix)

    def complete_brewery_names(self, ctx: CallContext, prefix: str, arguments: dict[str, str]) -> list[str]:
        return self.kb.names("brewery", prefix)

    def read_logs_today(self, ctx: CallContext) -> LogsTodayResource:
        if not self.expose_logs:
            raise NotFoundError("logs://today is not enabled (set YANA_EXPOSE_LOGS=1)")
        return LogsTodayResource.model_validate(self.journal.today())

    def close(self) -> None:
        """Nothing to release: the database is the runtime's."""


def create(setup: ServiceSetup) -> YanaHandlers:
    """Build the handlers on the runtime's database (never closed here) with yana's own settings."""
    return YanaHandlers(setup)
