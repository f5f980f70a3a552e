"""Ranked, de-duplicated, paged label search (the domain core behind /v1/search and chat's RAG).

Ranking (all figures rounded to 4 decimals, written into `debug`):

* text_score = 0.5 * bm25_norm + 0.5 * coverage
  - bm25_norm: FTS5 bm25 of the row (brand weighted highest) divided by the best
    bm25 among the candidates, so 1.0 is the best text match of this query;
  - coverage: the share of query terms found as substrings of the row's text
    (this is what 1–2 character terms, served by LIKE, contribute).
* meta_bonus = 0.2 if the brand, 0.15 if the brewery, 0.1 if a region name
  (prefecture or municipality, with or without 県/市/町…) appears in the query
  text or equals a query term or a filter value. Brands of one character count
  only as a whole query term (作, 南), never as a substring.
* score = text_score + meta_bonus; ties break on id, ascending, so paging is stable.

Candidates are the union of FTS matches (terms of ≥ 3 characters), LIKE matches
(shorter terms) and rows whose brand/brewery/region occurs in the query — the
last makes conversational queries such as 獺祭ってどんなお酒？ work.
Filters are hard: category equal, region and brewery contained (小樽 matches
北海道小樽市); an empty string means no filter.

Near-duplicates are suppressed after ranking and before the top-k cut: a hit is
dropped if a better one has a pHash within `phash_threshold` bits, or a
near-identical text: brand, product and brewery equal once width, case, spaces,
punctuation/symbols, katakana vs hiragana and company designators (株式会社, (株) …)
are ignored (`text_fingerprint`). Edit-distance similarity is deliberately not
used: distinct products differ by one character (作 玄乃智 / 穂乃智 score 0.91,
久保田 千寿 / 萬寿 0.89 with difflib). The check is a set lookup, so it costs
nothing next to the query. `k` caps the de-duplicated ranking and
`page`/`page_size` page through those k hits.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from handlers.yana.kb import KnowledgeBase, row_to_hit, search_text
from handlers.yana.text import normalize, query_terms, text_fingerprint
from kumitate.errors import ToolError

BM25_WEIGHTS = (5.0, 2.0, 3.0, 2.0, 1.0, 0.5)  # brand, product, brewery, region, features, category words
BONUS = {"brand": 0.2, "brewery": 0.15, "region": 0.1}
SORT_KEYS = ("relevance", "brand_name", "brewery", "region", "id")


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
    return {k: normalize(str(v)).strip() for k, v in (filters or {}).items() if v is not None and str(v).strip()}


def _passes(row: sqlite3.Row, filters: dict[str, str]) -> bool:
    if "category" in filters and row["category"] != filters["category"]:
        return False
    if "region" in filters and filters["region"] not in normalize(row["region"]):
        return False
    return not ("brewery" in filters and filters["brewery"] not in normalize(row["brewery"]))


def _candidates(conn: sqlite3.Connection, query: str, terms: list[str]) -> tuple[dict[int, float], set[int]]:
    """(bm25 by rowid for FTS matches, rowids found by LIKE or metadata containment)."""
    bm25: dict[int, float] = {}
    long_terms = [t for t in terms if len(t) >= 3]
    if long_terms:
        weights = ", ".join(str(w) for w in BM25_WEIGHTS)
        try:
            matches = conn.execute(
                f"SELECT rowid, bm25(labels_fts, {weights}) FROM labels_fts WHERE labels_fts MATCH ?",
                (_fts_expression(long_terms),),
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
    for term in (t for t in terms if len(t) < 3):
        like = "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        other.update(
            r[0]
            for r in conn.execute(
                "SELECT rowid FROM labels_fts WHERE brand_name LIKE ?1 ESCAPE '\\' OR product_name LIKE ?1 ESCAPE '\\'"
                " OR brewery LIKE ?1 ESCAPE '\\' OR region LIKE ?1 ESCAPE '\\' OR features LIKE ?1 ESCAPE '\\'"
                " OR category_words LIKE ?1 ESCAPE '\\'",
                (like,),
            )
        )
    if query:
        other.update(
            r[0]
            for r in conn.execute(
                "SELECT rowid FROM labels_fts WHERE (length(brand_name) >= 2 AND instr(?1, brand_name) > 0)"
                " OR (length(brewery) >= 2 AND instr(?1, brewery) > 0)"
                " UNION SELECT label_rowid FROM region_terms WHERE instr(?1, term) > 0",
                (query,),
            )
        )
    return bm25, other


def _meta_bonus(
    row: sqlite3.Row, query: str, terms: list[str], filters: dict[str, str], regions: dict[int, list[str]]
) -> float:
    brand, brewery = normalize(row["brand_name"]), normalize(row["brewery"])
    bonus = 0.0
    if brand and (brand in terms or (len(brand) >= 2 and brand in query)):
        bonus += BONUS["brand"]
    if brewery and (brewery in terms or (len(brewery) >= 2 and brewery in query) or filters.get("brewery") == brewery):
        bonus += BONUS["brewery"]
    names = regions.get(row["rowid"], [])
    if any(name in query or name in terms for name in names) or filters.get("region") in [
        *names,
        normalize(row["region"]),
    ]:
        bonus += BONUS["region"]
    return round(bonus, 4)


def rank(conn: sqlite3.Connection, query_text: str, filters: dict[str, Any] | None) -> list[Ranked]:
    """Every matching row, best first (relevance order, id tie-break), before de-duplication."""
    query = normalize(query_text or "").strip()
    terms = query_terms(query) if query else []
    flt = _clean_filters(filters)
    if not query:
        rows = conn.execute("SELECT * FROM labels ORDER BY id").fetchall()
        return [Ranked(r, 0.0, 0.0) for r in rows if _passes(r, flt)]
    bm25, other = _candidates(conn, query, terms)
    ids = sorted(set(bm25) | other)
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    rows = [r for r in conn.execute(f"SELECT * FROM labels WHERE rowid IN ({marks})", ids) if _passes(r, flt)]
    regions: dict[int, list[str]] = {}
    for rowid, term in conn.execute(f"SELECT label_rowid, term FROM region_terms WHERE label_rowid IN ({marks})", ids):
        regions.setdefault(int(rowid), []).append(term)
    best = max((bm25[r["rowid"]] for r in rows if r["rowid"] in bm25), default=0.0)
    ranked = []
    for row in rows:
        norm_bm25 = bm25.get(row["rowid"], 0.0) / best if best > 0 else 0.0
        text = search_text(row)
        coverage = sum(1 for t in terms if t in text) / len(terms) if terms else 0.0
        text_score = round(0.5 * norm_bm25 + 0.5 * coverage, 4)
        ranked.append(Ranked(row, text_score, _meta_bonus(row, query, terms, flt, regions)))
    ranked.sort(key=lambda r: (-r.score, r.row["id"]))
    return ranked


def _text_key(row: sqlite3.Row) -> tuple[str, str, str]:
    """brand, product, brewery as `text_fingerprint`s: equal keys are near-identical label texts."""
    return (
        text_fingerprint(row["brand_name"]),
        text_fingerprint(row["product_name"]),
        text_fingerprint(row["brewery"], company=True),
    )


def suppress_near_duplicates(ranked: list[Ranked], phash_threshold: int) -> tuple[list[Ranked], int]:
    """Keep the first of every group of visually (pHash) or textually near-identical hits."""
    kept: list[Ranked] = []
    kept_hashes: list[int] = []
    kept_keys: set[tuple[str, str, str]] = set()
    suppressed = 0
    for item in ranked:
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
    k = int(params.get("k", 10))
    page = int(params.get("page", 1))
    page_size = int(params.get("page_size", 10))
    sort_by = params.get("sort_by", "relevance")
    with kb.connect() as conn:
        ranked = rank(conn, params.get("query_text", ""), params.get("filters"))
    unique, suppressed = suppress_near_duplicates(ranked, phash_threshold)
    top = unique[:k]
    if sort_by != "relevance":
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
