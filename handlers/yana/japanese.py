"""Japanese text analysis for label search: folding, readings and query words (pure Python, no SQL).

Everything a search engine needs to agree on between the index and the query lives here, so
another storage engine (PostgreSQL) can reuse it unchanged:

* `fold`: NFKC + casefold, control characters as spaces, katakana → hiragana. リンゴ, ﾘﾝｺﾞ and
  りんご fold to the same string, as do ＰＯＭ and pom.
* `reading`: the folded hiragana reading of a text from SudachiPy (sudachidict_core), so 林檎,
  リンゴ and りんご all read りんご, and 獺祭 reads だっさい. Proper nouns the dictionary reads
  wrongly (八海山 → はちかいざん) are corrected from data/yana/readings.json.
* `query_words`: a conversational question cut into content words by morphological analysis
  (辛口の純米酒でおすすめは？ → 辛口, 純米酒): particles, auxiliaries, symbols and function words
  (おすすめ, 教えて, ある …) are dropped; every word carries its variants (surface, reading,
  dictionary form, kanji stem) and its parts (山廃仕込み → 山廃, 仕込み) for partial matches.

SudachiPy tokenizers are not shareable across threads, so each worker thread gets its own.
"""

from __future__ import annotations

import json
import re
import threading
import unicodedata
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from sudachipy import Dictionary, SplitMode

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_KATAKANA = {code: code - 0x60 for code in range(0x30A1, 0x30F7)}
_HAS_JAPANESE = re.compile(r"[\u3041-\u30ff\u3400-\u9fff々〆ヶ]")
_KANJI = re.compile(r"[\u3400-\u9fff々〆ヶ]")
_TRAILING_KANA = re.compile(r"[\u3041-\u309f]+$")
# Split points for the raw chunks a user typed (kept besides the morphological words, so a kana
# word the dictionary cuts wrongly, とまと → とま|と, still counts as typed).
_SPLIT = re.compile(r"[\s、。，．,.!?！？「」『』()（）\[\]【】/・:：;；\"'“”〜~]+")
_PARTICLE = re.compile(r"(?<=[^\u3041-\u309f\s])(?:って|から|まで|より|の|は|が|を|に|で|と|や|も|へ)")

CONTENT_POS = {"名詞", "形状詞", "形容詞", "接頭辞", "接尾辞"}
# Function words of conversational questions (compared as folded dictionary forms).
_STOP_RAW = (
    "御勧め",
    "おすすめ",
    "オススメ",
    "お勧め",
    "お薦め",
    "もの",
    "物",
    "こと",
    "事",
    "何",
    "なに",
    "何か",
    "感じ",
    "方",
    "種類",
    "話",
    "教え",
    "今日",
    "私",
    "僕",
    "俺",
    "皆",
    "ところ",
    "所",
    "好き",
    "有名",
    "人気",
    "美味しい",
    "旨い",
    "良い",
    "いい",
    "欲しい",
    "銘柄",
    "ラベル",
    "特徴",
    "さん",
    "的",
    "系",
    "御",
    "お",
    "ご",
)
READINGS_FILE = Path(__file__).resolve().parents[2] / "data" / "yana" / "readings.json"


def strip_controls(text: str) -> str:
    """Control characters (tab and newline included) and lone surrogates → a space each."""
    return _CONTROL.sub(" ", text)


def normalize(text: str) -> str:
    """NFKC + casefold, control characters as spaces: full/half width and case never decide a match."""
    return unicodedata.normalize("NFKC", strip_controls(text)).casefold()


@lru_cache(maxsize=65536)
def fold(text: str) -> str:
    """`normalize` plus katakana → hiragana: the form every comparison runs on."""
    return normalize(text).translate(_KATAKANA)


STOP_WORDS = frozenset(fold(w) for w in _STOP_RAW)
_HIRAGANA = re.compile(r"^[\u3041-\u309fー]+$")
_ONE_SCRIPT = re.compile(r"^(?:[\u3041-\u309fー]+|[\u30a1-\u30faー]+|[\u3400-\u9fff々〆ヶ]+|[a-z0-9.%-]+)$")
_local = threading.local()


def _tokenizer() -> Any:
    tok = getattr(_local, "tokenizer", None)
    if tok is None:
        tok = _dictionary().create(SplitMode.C)
        _local.tokenizer = tok
    return tok


@cache
def _dictionary() -> Any:
    return Dictionary(dict="core")


@cache
def _reading_overrides() -> dict[str, str]:
    """Curated readings of proper nouns the dictionary gets wrong (folded text → folded reading)."""
    try:
        doc = json.loads(READINGS_FILE.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return {fold(k): fold(v) for k, v in doc["readings"].items()}


def _token_reading(surface: str, reading_form: str) -> str:
    if not _HAS_JAPANESE.search(surface):
        return fold(surface)  # ASCII and digits read as written (45, no.6, pom)
    return fold(reading_form)


@lru_cache(maxsize=65536)
def reading(text: str) -> str:
    """Folded hiragana reading of `text` (spaces kept); curated readings win for known names."""
    folded = fold(text)
    overrides = _reading_overrides()
    if folded in overrides:
        return overrides[folded]
    parts: list[str] = []
    for chunk in folded.split():
        if chunk in overrides:
            parts.append(overrides[chunk])
            continue
        parts.append("".join(_token_reading(m.surface(), m.reading_form()) for m in _tokenizer().tokenize(chunk)))
    return " ".join(parts)


@dataclass(frozen=True, slots=True)
class QueryWord:
    """One content word of a query: `variants` match as the whole word, `parts` as a part of it."""

    text: str
    variants: tuple[str, ...]
    parts: tuple[str, ...] = ()


def _stem(word: str) -> str | None:
    """仕込み → 仕込, 甘い → 甘: the kanji stem of a word with okurigana (≥ 1 kanji left)."""
    stem = _TRAILING_KANA.sub("", word)
    if stem != word and stem and _KANJI.search(stem):
        return stem
    return None


def _variants(surface: str, read: str, dict_form: str) -> tuple[str, ...]:
    out: list[str] = []
    for value in (surface, read, dict_form, _stem(surface)):
        if value and value not in out:
            out.append(value)
    return tuple(out)


def _is_stop(token: tuple[str, str, str]) -> bool:
    return token[0] in STOP_WORDS or token[2] in STOP_WORDS


def _trim_stop_words(run: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """Drop function words at the edges of a noun run (おすすめの…, お酒 → 酒), but never so far that a
    name falls apart: 人気一 keeps 人気, since 一 alone would not be the brand."""
    tokens = list(run)
    while tokens and _is_stop(tokens[0]) and len("".join(t[0] for t in tokens[1:])) >= 2:
        tokens.pop(0)
    while tokens and _is_stop(tokens[-1]) and len("".join(t[0] for t in tokens[:-1])) >= 2:
        tokens.pop()
    if len(tokens) == 1 and _is_stop(tokens[0]):
        return []
    if tokens and tokens[0][0] in ("お", "ご", "御") and len(tokens) > 1:
        tokens.pop(0)  # honorific prefix: お酒 → 酒
    return tokens


def _raw_chunks(text: str) -> list[str]:
    """The chunks a user typed: split at spaces/punctuation and at particles after a kanji/katakana word."""
    out: list[str] = []
    for chunk in _SPLIT.split(text):
        for term in _PARTICLE.split(chunk):
            term = term.strip()
            if term and term not in out:
                out.append(term)
    return out


def query_words(text: str) -> list[QueryWord]:
    """The content words of a query, morphologically analysed, plus raw chunks the analysis missed."""
    words: list[QueryWord] = []
    seen: set[str] = set()
    run: list[tuple[str, str, str]] = []  # consecutive content tokens: (surface, reading, dict form)

    def flush() -> None:
        tokens = _trim_stop_words(run)
        run.clear()
        if not tokens:
            return
        surface = "".join(t[0] for t in tokens)
        if surface in seen:
            return
        seen.add(surface)
        read = "".join(t[1] for t in tokens)
        dict_form = "".join(t[2] for t in tokens) if len(tokens) == 1 else ""
        parts: list[str] = []
        if len(tokens) > 1:
            for i, (surf, rd, df) in enumerate(tokens):
                for value in (surf, rd if len(rd) >= 3 else "", df, _stem(surf)):
                    if value and len(value) >= 2 and value not in parts:
                        parts.append(value)
                if i + 1 < len(tokens) and (len(surf) == 1 or len(tokens[i + 1][0]) == 1):
                    glued = surf + tokens[i + 1][0]  # 山 + 廃 → 山廃: one-character pieces glue on
                    if glued not in parts:
                        parts.append(glued)
        words.append(QueryWord(surface, _variants(surface, read, dict_form), tuple(p for p in parts if p != surface)))

    for morph in _tokenizer().tokenize(normalize(text)):
        pos = morph.part_of_speech()[0]
        if pos not in CONTENT_POS or (pos == "接尾辞" and not run):
            flush()
            continue
        alone = pos in ("形容詞", "形状詞")  # 甘い日本酒 → 甘い | 日本酒: adjectives are words of their own
        if alone:
            flush()
        run.append(
            (
                fold(morph.surface()),
                _token_reading(morph.surface(), morph.reading_form()),
                fold(morph.normalized_form()),
            )
        )
        if alone:
            flush()
    flush()
    for typed in _raw_chunks(normalize(text)):  # scripts as typed: トマトジュースは… is not all kana
        chunk = fold(typed)
        if chunk in seen or not _ONE_SCRIPT.match(typed) or chunk in STOP_WORDS:
            continue
        if _HIRAGANA.match(chunk) and any(chunk.startswith(s) for s in STOP_WORDS if len(s) > 1):
            continue  # おすすめは: a function word with its particle
        seen.add(chunk)
        words.append(QueryWord(chunk, _variants(chunk, reading(chunk), "")))
    return words
