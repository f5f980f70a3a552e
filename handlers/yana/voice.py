"""yana's reply policy (policy_version say-2025-09-23): aizuchi, ≤ 5 sentences, no URLs, provenance.

Applied to every reply, whether a template or an LLM wrote it, in this order:

1. URLs are removed (any `scheme://…` or `www.…`), warning `urls_removed`; a
   （参考：…） block the LLM wrote itself is dropped (provenance is ours to add).
2. Aizuchi: every せやなー/せやせや already in the text is removed and exactly one
   is put in front:
   * 「せやせや」 when the user's text seeks agreement (ends in よね, よな, やんな,
     やろ, でしょ, だろ, やね, だね, ですね, じゃない, ちゃう …): yana agrees;
   * 「せやなー」 otherwise: yana takes the question in and answers.
3. Sentences are cut at 。！？!? and line breaks; more than 5 → the first 5 are
   kept, warning `trimmed_to_5_sentences`. The aizuchi is part of sentence 1.
4. Provenance （参考：銘柄/蔵/地域、…） for at most 2 hits is appended to the last
   sentence. It is not counted as a sentence: the splitter attaches a trailing
   parenthesis to the sentence before it (clients must do the same).
"""

from __future__ import annotations

import re
from typing import Any

AIZUCHI_AGREE = "せやせや"
AIZUCHI_THINK = "せやなー"
_AIZUCHI_ANY = re.compile(r"(?:せやせや|せやな[ーあぁ〜~]*)[、,，!！。]*\s*")
_URL = re.compile(r"(?:[a-zA-Z][a-zA-Z0-9+.-]*://|www\.)[^\s　<>「」（）()]*")
_PROVENANCE = re.compile(r"[（(]\s*参考\s*[:：][^）)]*[）)]")
_AGREEMENT = re.compile(
    r"(?:よね|よな|やんな|やんか|やろ|でしょ|だろ|やね|だね|ですね|じゃない|ちゃう|やな)[うかぁあー〜~]*[？?!！。…\s]*$"
)
_TERMINATORS = "。！？!?"
_CLOSERS = "」』）)】"
MAX_SENTENCES = 5


def choose_aizuchi(user_text: str) -> str:
    """せやせや for agreement-seeking input, せやなー for everything else."""
    return AIZUCHI_AGREE if _AGREEMENT.search(user_text.strip()) else AIZUCHI_THINK


def strip_urls(text: str) -> tuple[str, bool]:
    cleaned = _URL.sub("", text)
    return re.sub(r"[ \t]{2,}", " ", cleaned), cleaned != text


def split_sentences(text: str) -> list[str]:
    """Sentences ending at 。！？!? (closing brackets stay with them) or a line break.

    A fragment that is only a parenthesis （…） joins the sentence before it, so an
    appended provenance never counts as a sentence of its own.
    """
    sentences: list[str] = []
    buf = ""
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\n":
            if buf.strip():
                sentences.append(buf.strip())
            buf = ""
        else:
            buf += ch
            if ch in _TERMINATORS:
                while i + 1 < len(text) and (text[i + 1] in _TERMINATORS or text[i + 1] in _CLOSERS):
                    i += 1
                    buf += text[i]
                sentences.append(buf.strip())
                buf = ""
        i += 1
    if buf.strip():
        sentences.append(buf.strip())
    merged: list[str] = []
    for sentence in sentences:
        if merged and sentence[:1] in "（(" and sentence[-1:] in "）)":
            merged[-1] += sentence
        elif sentence:
            merged.append(sentence)
    return merged


def provenance(hits: list[dict[str, Any]], limit: int = 2) -> str:
    """（参考：獺祭/旭酒造/山口県岩国市） — brand/brewery/region only, never a URL or a file path."""
    parts = []
    for hit in hits[:limit]:
        fields = (strip_urls(str(hit.get(k) or ""))[0].strip() for k in ("brand_name", "brewery", "region"))
        part = "/".join(f for f in fields if f)
        if part and part not in parts:
            parts.append(part)
    return f"（参考：{'、'.join(parts)}）" if parts else ""


def apply_policy(
    body: str, user_text: str, *, source_hits: list[dict[str, Any]] | None = None
) -> tuple[str, list[str]]:
    """Shape a raw reply into yana's voice; returns (reply, warnings). Empty body → ("", warnings)."""
    warnings: list[str] = []
    text, had_urls = strip_urls(body)
    if had_urls:
        warnings.append("urls_removed")
    text = _PROVENANCE.sub("", text)
    text = _AIZUCHI_ANY.sub("", text).strip()
    if not text:
        return "", warnings
    sentences = split_sentences(f"{choose_aizuchi(user_text)}、{text}")
    if len(sentences) > MAX_SENTENCES:
        sentences = sentences[:MAX_SENTENCES]
        warnings.append("trimmed_to_5_sentences")
    reply = "".join(sentences)
    if source_hits:
        reply += provenance(source_hits)
    return reply, warnings
