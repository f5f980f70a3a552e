"""Ranked, de-duplicated, paged label search (the domain core behind /v1/search and chat's RAG).

The query is analysed into content words (handlers.yana.japanese: folding, readings,
morphological analysis); candidates come from the storage engine (handlers.yana.store.labels:
substring tests over folded text and readings, an FTS5 trigram index on SQLite, pg_trgm on
PostgreSQL, LIKE for words under 3 characters) plus rows whose brand, brewery or region is
named in the query. Everything after that is Python, so both engines give the same hits. Ranking (figures rounded to 4 decimals, in `debug`):

* text_score = 0.9 * field score (handlers.yana.core.ranking: field-weighted word matches, brand
  and brewery above features, product and region; idf-weighted over the words)
  + 0.1 * bm25_norm (handlers.yana.core.bm25 over the text and reading columns, as FTS5 computes
  it, relative to the best candidate: a tie-breaker);
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

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from generated.yana.errors import BadRequestError, RagUnavailableError
from handlers.yana.core.bm25 import bm25 as bm25_scores
from handlers.yana.core.ranking import field_scores
from handlers.yana.japanese import QueryWord, fold, query_words
from handlers.yana.store.kb import READING_FIELDS, TEXT_FIELDS, KnowledgeBase, row_to_hit
from handlers.yana.store.labels import Connection, LabelStore, StorageError, UnsearchableQuery
from handlers.yana.text import normalize, text_fingerprint
from kumitate.errors import ToolError

# brand, product, brewery, region, features, category words; then the reading columns
BM25_WEIGHTS = dict(
    zip(TEXT_FIELDS + READING_FIELDS, (5.0, 2.0, 3.0, 2.0, 1.0, 0.5, 4.0, 1.5, 2.5, 1.5, 1.0), strict=True)
)
BONUS = {"brand": 0.2, "brewery": 0.15, "region": 0.1}
SORT_KEYS = ("relevance", "brand_name", "brewery", "region", "id", "recency")
FTS_COLUMNS = TEXT_FIELDS + READING_FIELDS
FEW = 5
CONTENT_COLUMNS = tuple(c for c in FTS_COLUMNS if c != "category_words")


@contextmanager
def rag_unavailable(message: str) -> Iterator[None]:
    """A knowledge base that cannot be read (database lost, locked, broken) is RAG_UNAVAILABLE:
    the seed's client then resends chat with use_rag=false."""
    try:
        yield
    except ToolError as error:
        if error.code != "STORAGE_UNAVAILABLE":
            raise
        raise RagUnavailableError(message) from error
    except StorageError as error:
        raise RagUnavailableError(message) from error


@dataclass(frozen=True, slots=True)
class Ranked:
    row: dict[str, Any]
    text_score: float
    meta_bonus: float

    @property
    def score(self) -> float:
        return round(self.text_score + self.meta_bonus, 4)


@dataclass(slots=True)
class Candidates:
    """What the engine found: labels containing a long value (per fetch, for bm25) or found otherwise."""

    fetches: list[tuple[list[str], tuple[str, ...], set[int]]]
    other: set[int]

    @property
    def matched(self) -> set[int]:
        return set().union(*(found for _, _, found in self.fetches))

    def all(self) -> set[int]:
        return self.matched | self.other


def _clean_filters(filters: dict[str, Any] | None) -> dict[str, str]:
    return {k: fold(str(v)).strip() for k, v in (filters or {}).items() if v is not None and str(v).strip()}


def _passes(row: dict[str, Any], filters: dict[str, str]) -> bool:
    if "category" in filters and row["category"] != filters["category"]:
        return False
    if "region" in filters and filters["region"] not in fold(row["region"]):
        return False
    return not ("brewery" in filters and filters["brewery"] not in fold(row["brewery"]))


def _fetch(
    store: LabelStore, conn: Connection, values: list[str], columns: tuple[str, ...], into: Candidates
) -> set[int]:
    """Labels where one of `values` occurs in one of `columns` (recorded in `into`); returns them."""
    long_values = [v for v in values if len(v) >= 3]
    found = store.containing(conn, long_values, columns)
    if found:
        into.fetches.append((long_values, columns, found))
    # a one-character value only ever matches a whole token (ranking.py), so fetch only those
    short = set().union(*(store.containing_short(conn, v, columns) for v in values if len(v) < 3))
    into.other.update(short)
    return found | short


def _candidates(store: LabelStore, conn: Connection, query: str, words: list[QueryWord]) -> Candidates:
    """Labels containing a query word (by variant, or by an uncommon part) or naming a brand/brewery/region.

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
    common = max(FEW, store.count(conn) // 10)
    for columns in (CONTENT_COLUMNS, FTS_COLUMNS):
        found = Candidates([], set())
        for word in fetching:
            if len(_fetch(store, conn, list(word.variants), columns, found)) >= FEW:
                continue
            for part in word.parts:  # a compound found rarely whole widens to its (uncommon) parts
                trial = Candidates([], set())
                if len(_fetch(store, conn, [part], columns, trial)) <= common:
                    found.fetches += trial.fetches
                    found.other |= trial.other
        if found.all():
            break
    spoken = " ".join(v for w in words for v in w.variants)
    found.other |= store.named_in(conn, query, spoken)
    return found


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


def rank(store: LabelStore, conn: Connection, query_text: str, filters: dict[str, Any] | None) -> list[Ranked]:
    """Every matching row, best first (relevance order, id tie-break), before de-duplication."""
    query = fold(query_text or "").strip()
    flt = _clean_filters(filters)
    if not query:
        rows = sorted(store.labels(conn), key=lambda r: r["id"])
        return [Ranked(r, 0.0, 0.0) for r in rows if _passes(r, flt)]
    words = query_words(query_text)
    candidates = _candidates(store, conn, query, words)
    pks = candidates.all()
    if not pks:
        return []
    rows = [r for r in store.labels(conn, pks) if _passes(r, flt)]
    if not rows:
        return []
    docs = store.documents(conn, pks)
    regions = store.region_terms(conn, pks)
    n_labels, mean_length = store.stats(conn)
    lengths = {r["pk"]: int(r["doc_len"]) for r in rows}
    matched = {r["pk"] for r in rows} & candidates.matched
    bm25: dict[int, float] = {}
    for values, columns, found in candidates.fetches:
        scored = bm25_scores(
            values,
            {c: BM25_WEIGHTS[c] for c in columns},
            {pk: docs[pk] for pk in found},
            {pk: lengths.get(pk, 0) for pk in found},
            n_labels,
            mean_length,
        )
        for pk, value in scored.items():
            if pk in matched:
                bm25[pk] = max(value, bm25.get(pk, value))
    fields = field_scores(words, {r["pk"]: docs[r["pk"]] for r in rows})
    best = max(bm25.values(), default=0.0)
    spoken = " ".join(v for w in words for v in w.variants)
    texts = {w.text for w in words}
    ranked = []
    for row in rows:
        norm_bm25 = bm25.get(row["pk"], 0.0) / best if best > 0 else 0.0
        text_score = round(0.9 * fields[row["pk"]] + 0.1 * norm_bm25, 4)
        bonus = _meta_bonus(docs[row["pk"]], query, spoken, texts, flt, regions.get(row["pk"], []))
        if text_score > 0 or bonus > 0:
            ranked.append(Ranked(row, text_score, bonus))
    ranked.sort(key=lambda r: (-r.score, r.row["id"]))
    return ranked


def _text_key(row: dict[str, Any]) -> tuple[str, str, str]:
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
    try:
        with kb.read() as conn:
            ranked = rank(kb.store, conn, params.get("query_text") or "", params.get("filters"))
    except UnsearchableQuery:  # the client's text, not the knowledge base: never RAG_UNAVAILABLE
        raise BadRequestError("the query text cannot be searched; remove special characters") from None
    unique, suppressed = suppress_near_duplicates(ranked, phash_threshold, k)
    top = unique[:k]
    if sort_by == "recency":  # most recently added first: rowids grow with every insert
        top = sorted(top, key=lambda r: -int(r.row["pk"]))
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
