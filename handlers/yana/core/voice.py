"""yana's reply policy (policy_version say-2025-09-23): aizuchi, ≤ 5 sentences, no URLs, provenance.

Applied to every reply, whether a template or an LLM wrote it, in this order:

1. Links are removed, warning `urls_removed`: `scheme://…`, `www.…`, bare domains
   with a known TLD (example.com/sake, asahishuzo.ne.jp), e-mail addresses, also
   when written in full-width letters (detection runs on NFKC); markdown and HTML
   links keep only their text ([公式](https://…) → 公式). A （参考：…） block the LLM
   wrote itself is dropped (provenance is ours to add).
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
import unicodedata
from typing import Any

from handlers.yana.client.sentences import split_sentences

AIZUCHI_AGREE = "せやせや"
AIZUCHI_THINK = "せやなー"
_AIZUCHI_ANY = re.compile(r"(?:せやせや|せやな[ーあぁ〜~]*)[、,，!！。]*\s*")
# Link patterns run on an NFKC-folded copy of the text (ＨＴＴＰＳ：／／ｅｘａｍｐｌｅ．ｃｏｍ is a URL too),
# with ASCII-insensitive case; matches are mapped back and cut from the original text.
_URL_CHARS = r"[A-Za-z0-9\-._~:/?#\[\]@!$&'*+,;=%]"
_TLDS = (
    "com|net|org|info|biz|edu|gov|mil|int|io|co|me|app|dev|ai|xyz|site|online|shop|store|tech|blog|club|"
    "link|page|wiki|news|top|vip|asia|tokyo|osaka|kyoto|nagoya|yokohama|jp|us|uk|de|fr|it|es|nl|ch|at|be|se|"
    "no|dk|fi|ie|pt|pl|cz|ru|cn|tw|hk|kr|sg|th|vn|ph|my|id|in|au|nz|ca|mx|br|ar|eu|tv|cc|ly|to|fm|gg|ws"
)
_HTML_LINK = re.compile(r"<a\b[^>]*>(.*?)</a\s*>", re.IGNORECASE | re.DOTALL)
_MARKDOWN_LINK = re.compile(r"!?\[([^\]\n]*)\]\(([^)\n]*)\)")
_EMAIL = re.compile(r"(?:mailto:)?[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}", re.IGNORECASE)
_URL = re.compile(
    rf"(?:[A-Za-z][A-Za-z0-9+.-]*://|www\.){_URL_CHARS}*"  # scheme://… and www.…
    rf"|(?<![A-Za-z0-9@.-])(?:xn--)?(?:[A-Za-z0-9](?:[A-Za-z0-9-]{{0,61}}[A-Za-z0-9])?\.)+(?:{_TLDS})"
    rf"(?![A-Za-z0-9-])(?:[:/?#]{_URL_CHARS}*)?",  # bare domains: example.com/sake, asahishuzo.ne.jp
    re.IGNORECASE,
)
_TRAILING_PUNCT = ".,!?;:'"
_EMPTY_BRACKETS = re.compile(r"[（(［\[〈<]\s*[）)］\]〉>]|「\s*」")
_PROVENANCE = re.compile(r"[（(]\s*参考\s*[:：][^）)]*[）)]")
_AGREEMENT = re.compile(
    r"(?:よね|よな|やんな|やんか|やろ|でしょ|だろ|やね|だね|ですね|じゃない|ちゃう|やな)[うかぁあー〜~]*[？?!！。…\s]*$"
)
MAX_SENTENCES = 5


def choose_aizuchi(user_text: str) -> str:
    """せやせや for agreement-seeking input, せやなー for everything else."""
    return AIZUCHI_AGREE if _AGREEMENT.search(user_text.strip()) else AIZUCHI_THINK


def _folded(text: str) -> tuple[str, list[int]]:
    """NFKC per character, and for each folded index the original index (plus an end sentinel)."""
    parts: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        folded = unicodedata.normalize("NFKC", ch)
        parts.append(folded)
        origin.extend([i] * len(folded))
    origin.append(len(text))
    return "".join(parts), origin


def _cut(text: str, pattern: re.Pattern[str], *, keep_group: int | None = None, trim: bool = False) -> str:
    """Remove every match of `pattern` (found on the folded text) from `text`, or keep one group of it."""
    folded, origin = _folded(text)
    out: list[str] = []
    pos = 0
    for match in pattern.finditer(folded):
        start, end = match.span()
        if trim:  # a sentence's own 。/. or ) after a URL is not part of it
            while end > start and folded[end - 1] in _TRAILING_PUNCT:
                end -= 1
        if end <= start:
            continue
        o_start, o_end = origin[start], origin[end - 1] + 1
        out.append(text[pos:o_start])
        if keep_group is not None and match.group(keep_group):
            g_start, g_end = match.span(keep_group)
            out.append(text[origin[g_start] : origin[g_end - 1] + 1])
        pos = o_end
    out.append(text[pos:])
    return "".join(out)


def strip_urls(text: str) -> tuple[str, bool]:
    """Remove links of every kind; returns (text, whether anything was removed).

    Markdown and HTML links keep their text ([公式](https://…) → 公式); URLs with a scheme, www.…,
    bare domains with a known TLD (example.com/sake, asahishuzo.ne.jp) and e-mail addresses go
    entirely, also when written in full-width letters. Brackets left empty are removed too.
    """
    cleaned = _cut(text, _HTML_LINK, keep_group=1)
    cleaned = _cut(cleaned, _MARKDOWN_LINK, keep_group=1)
    cleaned = _cut(cleaned, _EMAIL)
    cleaned = _cut(cleaned, _URL, trim=True)
    if cleaned == text:
        return text, False
    cleaned = _EMPTY_BRACKETS.sub("", cleaned)
    return re.sub(r"[ \t　]{2,}", " ", cleaned), True


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
    body: str, user_text: str, *, source_hits: list[dict[str, Any]] | None = None, aizuchi: bool = True
) -> tuple[str, list[str]]:
    """Shape a raw reply into yana's voice; returns (reply, warnings). Empty body → ("", warnings).

    `aizuchi=False` (chat's context.disable_sayana) leaves the opener out: any せやなー/せやせや in the
    body is still removed, since the caller adds its own; every other step applies.
    """
    warnings: list[str] = []
    text, had_urls = strip_urls(body)
    if had_urls:
        warnings.append("urls_removed")
    text = _PROVENANCE.sub("", text)
    text = _AIZUCHI_ANY.sub("", text).strip()
    if not text:
        return "", warnings
    sentences = split_sentences(f"{choose_aizuchi(user_text)}、{text}" if aizuchi else text)
    if len(sentences) > MAX_SENTENCES:
        sentences = sentences[:MAX_SENTENCES]
        warnings.append("trimmed_to_5_sentences")
    reply = "".join(sentences)
    if source_hits:
        reply += provenance(source_hits)
    return reply, warnings
