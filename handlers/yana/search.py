"""Ranked, de-duplicated, paged label search (the domain core behind /v1/search and chat's RAG).

The query is analysed into content words (handlers.yana.japanese: folding, readings,
morphological analysis); candidates come from SQLite FTS5 (trigram phrases over folded text
and readings for words of ≥ 3 characters, LIKE for shorter ones) plus rows whose brand,
brewery or region is named in the query. Ranking (figures rounded to 4 decimals, in `debug`):

* text_score = 0.9 * field score (handlers.yana.ranking: field-weighted word matches, brand
  and brewery above features, product and region; idf-weighted over the words)
  + 0.1 * bm25_norm (FTS5 bm25 over the text and reading columns, relative to the best
  candidate: a tie-breaker);
* meta_bonus = 0.2 if the brand, 0.15 if the brewery, 0.1 if a region name (prefecture or
  municipality, with or without 県/市/町…) is named in the query (as text or, for names of
  three kana or more, as a reading) or equals a filter value. Brands of one character count
  only as a whole query word (作, 南), never as a substring;
* score = text_score + meta_bonus; a candidate with score 0 is no hit; ties break on id,
  ascending, so paging is stable.

Filters are hard: category equal, region and brewery contained (小樽 matches 北海道小樽市,
folded, so カゴメ and かごめ agree); an empty string means no filter.

Near-duplicates are suppressed after ranking and before the top-k cut: a hit is
dropped if a better one has a pHash within `phash_threshold` bits, or a
near-identical text: brand, product and brewery equal once width, case, spaces,
punctuation/symbols, katakana vs hiragana and company designators (株式会社, (株) …)
are ignored (`text_fingerprint`). Edit-distance similarity is deliberately not
used: distinct products differ by one character (作 玄乃智 / 穂乃智 score 0.91,
久保田 千寿 / 萬寿 0.89 with difflib). `k` caps the de-duplicated ranking and
`page`/`page_size` page through those k hits.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from handlers.yana.japanese import QueryWord, fold, query_words
from handlers.yana.kb import READING_FIELDS, TEXT_FIELDS, KnowledgeBase, row_to_hit
from handlers.yana.ranking import field_scores
from handlers.yana.text import normalize, text_fingerprint
from kumitate.errors import ToolError

# brand, product, brewery, region, features, category words; then the reading columns
BM25_WEIGHTS = (5.0, 2.0, 3.0, 2.0, 1.0, 0.5, 4.0, 1.5, 2.5, 1.5, 1.0)
BONUS = {"brand": 0.2, "brewery": 0.15, "region": 0.1}
SORT_KEYS = ("relevance", "brand_name", "brewery", "region", "id", "recency")
FTS_COLUMNS = TEXT_FIELDS + READING_FIELDS
FEW = 5
CONTENT_COLUMNS = tuple(c for c in FTS_COLUMNS if c != "category_words")


@dataclass(frozen=True, slots=True)
class Ranked:
    row: sqlite3.Row
    text_score: float
    meta_bonus: float

    @property
    def score(self) -> float:
        return round(self.text_score + self.meta_bonus, 4)


_FTS_QUERY_ERRORS = ("fts5: syntax error", "unterminated string", "unknown special query", "parser stack overflow")


def is_fts_query_error(exc: sqlite3.Error) -> bool:
    """An FTS5 complaint about the MATCH expression (client input), as opposed to a broken database."""
    message = str(exc).lower()
    return any(marker in message for marker in _FTS_QUERY_ERRORS)


def _fts_expression(terms: list[str]) -> str:
    """OR of quoted phrases: each ≥3-char term must occur as a substring (trigram)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def _clean_filters(filters: dict[str, Any] | None) -> dict[str, str]:
    return {k: fold(str(v)).strip() for k, v in (filters or {}).items() if v is not None and str(v).strip()}


def _passes(row: sqlite3.Row, filters: dict[str, str]) -> bool:
    if "category" in filters and row["category"] != filters["category"]:
        return False
    if "region" in filters and filters["region"] not in fold(row["region"]):
        return False
    return not ("brewery" in filters and filters["brewery"] not in fold(row["brewery"]))


def _like(value: str) -> str:
    return "%" + value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _fetch(conn: sqlite3.Connection, values: list[str], columns: tuple[str, ...]) -> tuple[dict[int, float], set[int]]:
    """Rows where one of `values` occurs in one of `columns`: (bm25 of FTS matches, LIKE matches)."""
    bm25: dict[int, float] = {}
    long_values = [v for v in values if len(v) >= 3]
    if long_values:
        weights = ", ".join(str(w) for w in BM25_WEIGHTS)
        expression = "{" + " ".join(columns) + "} : (" + _fts_expression(long_values) + ")"
        try:
            matches = conn.execute(
                f"SELECT rowid, bm25(labels_fts, {weights}) FROM labels_fts WHERE labels_fts MATCH ?", (expression,)
            ).fetchall()
        except sqlite3.OperationalError as exc:
            if is_fts_query_error(exc):  # the client's text, not the knowledge base: never RAG_UNAVAILABLE
                raise ToolError(
                    "the query text cannot be searched; remove special characters", code="BAD_REQUEST"
                ) from None
            raise
        for rowid, rank in matches:
            bm25[int(rowid)] = -float(rank)  # bm25() is lower-is-better; flip so higher is better
    other: set[int] = set()
    any_column = " OR ".join(f"{c} LIKE ?1 ESCAPE '\\'" for c in columns)
    # a one-character value only ever matches a whole token (ranking.py), so fetch only those
    whole_token = " OR ".join(f"(' ' || {c} || ' ') LIKE ?1 ESCAPE '\\'" for c in columns)
    for value in (v for v in values if len(v) < 3):
        if len(value) == 1:
            sql, arg = whole_token, "% " + _like(value)[1:-1] + " %"
        else:
            sql, arg = any_column, _like(value)
        other.update(r[0] for r in conn.execute(f"SELECT rowid FROM labels_fts WHERE {sql}", (arg,)))
    return bm25, other


def _candidates(conn: sqlite3.Connection, query: str, words: list[QueryWord]) -> tuple[dict[int, float], set[int]]:
    """(bm25 by rowid for FTS matches, rowids found by LIKE or by names contained in the query).

    Each word fetches by its variants, and by its parts only when the variants find little
    (朝日酒造 must not fetch every 酒造): with fewer than FEW hits whole, a word also fetches by
    each part that matches at most a tenth of the knowledge base (山廃 of 山廃仕込み, not 酒造). Category words (お酒, ジュース) fetch only when nothing
    else does, one-character words only when the query has nothing longer (and then only rows
    with that whole token), and a word inside a longer query word not at all: each would pull in
    most of the knowledge base as a side word. Every candidate is still scored on all words.
    """
    fetching = [w for w in words if len(w.text) > 1] or words
    # a word inside a longer one (純米 of 特別純米) is scored, but fetches nothing of its own
    fetching = [w for w in fetching if not any(w.text != o.text and w.text in o.text for o in fetching)]
    common = max(FEW, int(conn.execute("SELECT count(*) FROM labels").fetchone()[0]) // 10)
    bm25: dict[int, float] = {}
    other: set[int] = set()

    def add(found_bm25: dict[int, float], found: set[int]) -> None:
        for rowid, value in found_bm25.items():
            bm25[rowid] = max(value, bm25.get(rowid, value))
        other.update(found)

    for columns in (CONTENT_COLUMNS, FTS_COLUMNS):
        for word in fetching:
            found_bm25, found = _fetch(conn, list(word.variants), columns)
            add(found_bm25, found)
            if len(set(found_bm25) | found) >= FEW:
                continue
            for part in word.parts:  # a compound found rarely whole widens to its (uncommon) parts
                part_bm25, part_found = _fetch(conn, [part], columns)
                if len(set(part_bm25) | part_found) <= common:
                    add(part_bm25, part_found)
        if bm25 or other:
            break
    spoken = " ".join(v for w in words for v in w.variants)
    other.update(
        r[0]
        for r in conn.execute(
            "SELECT rowid FROM labels_fts WHERE (length(brand_name) >= 2 AND instr(?1, brand_name) > 0)"
            " OR (length(brewery) >= 2 AND instr(?1, brewery) > 0)"
            " OR (length(brand_r) >= 3 AND instr(?2, brand_r) > 0)"
            " OR (length(brewery_r) >= 3 AND instr(?2, brewery_r) > 0)"
            " UNION SELECT label_rowid FROM region_terms WHERE instr(?1, term) > 0",
            (query, spoken),
        )
    )
    return bm25, other


def _named(name: str, name_reading: str, query: str, spoken: str, words: set[str]) -> bool:
    """Is a brand/brewery named in the query: as a word, inside the text, or by its reading."""
    if not name:
        return False
    return name in words or (len(name) >= 2 and name in query) or (len(name_reading) >= 3 and name_reading in spoken)


def _meta_bonus(
    doc: dict[str, str], query: str, spoken: str, words: set[str], filters: dict[str, str], regions: list[str]
) -> float:
    bonus = 0.0
    if _named(doc["brand_name"], doc["brand_r"], query, spoken, words):
        bonus += BONUS["brand"]
    if _named(doc["brewery"], doc["brewery_r"], query, spoken, words) or filters.get("brewery") == doc["brewery"]:
        bonus += BONUS["brewery"]
    if any(name in query or name in words for name in regions) or filters.get("region") in [*regions, doc["region"]]:
        bonus += BONUS["region"]
    return round(bonus, 4)


def rank(conn: sqlite3.Connection, query_text: str, filters: dict[str, Any] | None) -> list[Ranked]:
    """Every matching row, best first (relevance order, id tie-break), before de-duplication."""
    query = fold(query_text or "").strip()
    flt = _clean_filters(filters)
    if not query:
        rows = conn.execute("SELECT * FROM labels ORDER BY id").fetchall()
        return [Ranked(r, 0.0, 0.0) for r in rows if _passes(r, flt)]
    words = query_words(query_text)
    bm25, other = _candidates(conn, query, words)
    ids = sorted(set(bm25) | other)
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    rows = [r for r in conn.execute(f"SELECT * FROM labels WHERE rowid IN ({marks})", ids) if _passes(r, flt)]
    if not rows:
        return []
    docs = {
        int(d["rowid"]): {c: d[c] for c in FTS_COLUMNS}
        for d in conn.execute(f"SELECT rowid, * FROM labels_fts WHERE rowid IN ({marks})", ids)
    }
    regions: dict[int, list[str]] = {}
    for rowid, term in conn.execute(f"SELECT label_rowid, term FROM region_terms WHERE label_rowid IN ({marks})", ids):
        regions.setdefault(int(rowid), []).append(term)
    fields = field_scores(words, {r["rowid"]: docs[r["rowid"]] for r in rows})
    best = max((bm25[r["rowid"]] for r in rows if r["rowid"] in bm25), default=0.0)
    spoken = " ".join(v for w in words for v in w.variants)
    texts = {w.text for w in words}
    ranked = []
    for row in rows:
        norm_bm25 = bm25.get(row["rowid"], 0.0) / best if best > 0 else 0.0
        text_score = round(0.9 * fields[row["rowid"]] + 0.1 * norm_bm25, 4)
        bonus = _meta_bonus(docs[row["rowid"]], query, spoken, texts, flt, regions.get(row["rowid"], []))
        if text_score > 0 or bonus > 0:
            ranked.append(Ranked(row, text_score, bonus))
    ranked.sort(key=lambda r: (-r.score, r.row["id"]))
    return ranked


def _text_key(row: sqlite3.Row) -> tuple[str, str, str]:
    """brand, product, brewery as `text_fingerprint`s: equal keys are near-identical label texts."""
    return (
        text_fingerprint(row["brand_name"]),
        text_fingerprint(row["product_name"]),
        text_fingerprint(row["brewery"], company=True),
    )


def suppress_near_duplicates(
    ranked: list[Ranked], phash_threshold: int, limit: int | None = None
) -> tuple[list[Ranked], int]:
    """Keep the first of every group of visually (pHash) or textually near-identical hits.

    Stops once `limit` hits are kept (the top-k cut): what lies beyond is never shown, so it
    need not be compared, and `suppressed` counts the near-duplicates met on the way.
    """
    kept: list[Ranked] = []
    kept_hashes: list[int] = []
    kept_keys: set[tuple[str, str, str]] = set()
    suppressed = 0
    for item in ranked:
        if limit is not None and len(kept) >= limit:
            break
        key = _text_key(item.row)
        ph = int(item.row["phash"], 16) if item.row["phash"] else None
        if key in kept_keys or (
            ph is not None and any((ph ^ other).bit_count() <= phash_threshold for other in kept_hashes)
        ):
            suppressed += 1
            continue
        kept.append(item)
        kept_keys.add(key)
        if ph is not None:
            kept_hashes.append(ph)
    return kept, suppressed


def search(kb: KnowledgeBase, params: dict[str, Any], *, phash_threshold: int = 4) -> dict[str, Any]:
    """The /v1/search result body (without the envelope fields the pipeline adds)."""
    k = int(params.get("k") or 5)
    page = int(params.get("page") or 1)  # null reads as "not given", as the duo-talk client sends it
    page_size = int(params.get("page_size") or 10)
    sort_by = params.get("sort_by") or "relevance"
    with kb.connect() as conn:
        ranked = rank(conn, params.get("query_text") or "", params.get("filters"))
    unique, suppressed = suppress_near_duplicates(ranked, phash_threshold, k)
    top = unique[:k]
    if sort_by == "recency":  # most recently added first: rowids grow with every insert
        top = sorted(top, key=lambda r: -int(r.row["rowid"]))
    elif sort_by != "relevance":
        top = sorted(top, key=lambda r: (normalize(r.row[sort_by]), r.row["id"]))
    start = (page - 1) * page_size
    page_items = top[start : start + page_size]
    first = top[0] if top else None
    return {
        "hits": [row_to_hit(r.row) for r in page_items],
        "next_page": page + 1 if start + page_size < len(top) else None,
        "total": len(top),
        "debug": {
            "score": first.score if first else 0.0,
            "meta_bonus": first.meta_bonus if first else 0.0,
            "text_score": first.text_score if first else 0.0,
            "candidates": len(ranked),
            "suppressed": suppressed,
            "hits": [
                {"id": r.row["id"], "score": r.score, "text_score": r.text_score, "meta_bonus": r.meta_bonus}
                for r in page_items
            ],
        },
    }
