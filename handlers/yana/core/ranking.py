"""How well a label matches a query: field-weighted word matching (pure Python, no SQL).

A label is its index document (handlers.yana.store.kb.index_document): per field the folded text
and the folded reading. A query is a list of `QueryWord`s (handlers.yana.japanese).

* A word matches a field as a whole token (1.0), as the start of a token (0.8) or inside one
  (0.7); against the reading 0.9 / 0.6. One-character words match whole tokens only (作, 梵),
  two-character readings whole tokens only, so an incidental kanji or a short reading never
  makes a hit. A word's parts (山廃仕込み → 山廃) count at PART_FACTOR.
* Fields weigh what a person means: brand 1.0, brewery 0.9, label features 0.8, product 0.7,
  region 0.6, category words 0.3. A word's score is its best field.
* The label's field score is the idf-weighted mean over the query's words (a word every
  candidate has, such as お酒, counts little; a word no candidate has is left out).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from handlers.yana.japanese import QueryWord

FIELD_WEIGHTS = {
    "brand_name": 1.0,
    "brewery": 0.9,
    "features": 0.8,
    "product_name": 0.7,
    "region": 0.6,
    "category_words": 0.3,
}
READING_COLUMN = {
    "brand_name": "brand_r",
    "product_name": "product_r",
    "brewery": "brewery_r",
    "region": "region_r",
    "features": "features_r",
}
PART_FACTOR = 0.6


def _in_text(value: str, padded: str, whole: float, start: float, inside: float, min_inside: int) -> float:
    """`padded` is the field text with a space on each side, so token edges are plain substring tests."""
    if value not in padded:
        return 0.0
    if f" {value} " in padded:
        return whole
    if len(value) < min_inside:
        return 0.0
    return start if f" {value}" in padded else inside


class Document:
    """A label's index document prepared for matching: every field padded, plus all text at once."""

    __slots__ = ("everything", "fields")

    def __init__(self, doc: Mapping[str, str]) -> None:
        self.fields = [
            (
                weight,
                f" {doc.get(field, '')} ",
                f" {doc.get(READING_COLUMN.get(field, ''), '')} ",
                doc.get(field, "").replace(" ", ""),
            )
            for field, weight in FIELD_WEIGHTS.items()
        ]
        self.everything = " ".join(f"{t}{r}" for _, t, r, _ in self.fields)


def value_quality(value: str, text: str, reading: str, compact: str = "") -> float:
    """How well one query string matches one field (padded folded text and padded reading)."""
    if value == compact:
        return 1.0
    return max(_in_text(value, text, 1.0, 0.8, 0.7, 2), _in_text(value, reading, 0.9, 0.6, 0.6, 3))


def word_score(word: QueryWord, doc: Document) -> float:
    """The best weighted field match of one query word in a label."""
    variants = [v for v in word.variants if v in doc.everything]
    parts = [p for p in word.parts if p in doc.everything]
    if not variants and not parts:
        return 0.0
    best = 0.0
    for weight, text, read, compact in doc.fields:
        quality = max((value_quality(v, text, read, compact) for v in variants), default=0.0)
        if quality < 1.0 and parts:
            quality = max(quality, PART_FACTOR * max(value_quality(p, text, read, compact) for p in parts))
        best = max(best, weight * quality)
    return best


def field_scores(words: Sequence[QueryWord], docs: Mapping[int, Mapping[str, str]]) -> dict[int, float]:
    """Field score in [0, 1] of every candidate label (by rowid)."""
    prepared = {rowid: Document(doc) for rowid, doc in docs.items()}
    per_word = [{rowid: word_score(w, doc) for rowid, doc in prepared.items()} for w in words]
    total = len(docs)
    weights = []
    for scores in per_word:
        df = sum(1 for s in scores.values() if s > 0)
        weights.append(math.log(1 + total / df) if df else 0.0)
    norm = sum(weights)
    if norm == 0:
        return dict.fromkeys(docs, 0.0)
    return {rowid: sum(w * s[rowid] for w, s in zip(weights, per_word, strict=True)) / norm for rowid in docs}
