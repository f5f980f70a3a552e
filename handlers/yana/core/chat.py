"""The chat core: retrieve (optional) → generate (LLM or template) → apply yana's policy.

Never fails because of the LLM: any upstream problem falls back to the template
reply with a `llm_fallback:<reason>` warning and `llm: "off"`. Retrieval errors
(the knowledge base unreadable) raise RAG_UNAVAILABLE so a client can resend
with use_rag=false, as the seed's Speaker provider does. The user's text cannot
cause one: control characters are dropped from search terms (text.normalize),
and a query the FTS parser still refused would be BAD_REQUEST, not RAG_UNAVAILABLE.
"""

from __future__ import annotations

import time
from typing import Any

from generated.yana.errors import BadRequestError
from handlers.yana.core.generate import LlmUnavailable, OpenAIChat, template_reply
from handlers.yana.core.search import rag_unavailable, search
from handlers.yana.core.voice import apply_policy
from handlers.yana.store.kb import KnowledgeBase
from handlers.yana.text import strip_controls


def retrieve(
    kb: KnowledgeBase, user_text: str, top_k: int, filters: dict[str, Any] | None, phash_threshold: int
) -> list[dict[str, Any]]:
    """Top-k hits for the user's text; with filters and no text match, the first filtered labels."""
    with rag_unavailable("the label knowledge base cannot be read; retry with use_rag=false"):
        hits = search(
            kb,
            {"query_text": user_text, "filters": filters, "k": top_k, "page_size": top_k},
            phash_threshold=phash_threshold,
        )["hits"]
        if not hits and any(v for v in (filters or {}).values()):
            hits = search(
                kb,
                {"query_text": "", "filters": filters, "k": top_k, "page_size": top_k},
                phash_threshold=phash_threshold,
            )["hits"]
    return hits


def chat(
    kb: KnowledgeBase, llm: OpenAIChat | None, params: dict[str, Any], *, phash_threshold: int = 4
) -> tuple[dict[str, Any], str | None]:
    """Returns (the /v1/chat body without envelope fields, the llm fallback reason or None)."""
    started = time.perf_counter()
    user_text: str = params["user_text"]
    if not strip_controls(user_text).strip():
        raise BadRequestError("user_text must not be blank")
    use_rag = bool(params.get("use_rag", True))
    top_k = int(params.get("top_k", 5))
    context = params.get("context") or {}
    aizuchi = context.get("disable_sayana") is not True  # the seed's aizuchi step, unless the caller does it
    hits = retrieve(kb, user_text, top_k, params.get("filters"), phash_threshold) if use_rag else []
    warnings: list[str] = []
    fallback: str | None = None
    reply = ""
    llm_state = "off"
    if llm is not None:
        try:
            raw = llm.reply(user_text, hits, context.get("topic"))
            reply, warnings = apply_policy(raw, user_text, source_hits=hits, aizuchi=aizuchi)
            if reply:
                llm_state = "on"
            else:
                fallback = "empty_reply"
        except LlmUnavailable as exc:
            fallback = exc.reason
    if llm_state == "off":
        template = template_reply(user_text, hits, use_rag=use_rag)
        reply, warnings = apply_policy(template, user_text, source_hits=hits, aizuchi=aizuchi)
        if fallback:
            warnings.insert(0, f"llm_fallback:{fallback}")
    return {
        "reply": reply,
        "hits": hits,
        "llm": llm_state,
        "elapsed_ms": int((time.perf_counter() - started) * 1000),
        "rag_hit_count": len(hits),
        "warnings": warnings,
    }, fallback
