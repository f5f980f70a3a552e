"""Okapi BM25 over the search documents, in Python, so both storage engines rank alike.

SQLite's FTS5 has bm25() and PostgreSQL has none, so the engines only say which documents
contain a value; this module scores them the way FTS5 does: per value an idf over the labels
(log((N - n + 0.5) / (n + 0.5)), at least 1e-6), a column-weighted count of its occurrences,
and the document's length in trigrams against the mean (k1 = 1.2, b = 0.75). In search it only
breaks ties (0.1 of the text score), but it must be the same number on both engines.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

K1 = 1.2
B = 0.75


def occurrences(value: str, text: str) -> int:
    """Overlapping occurrences, as a trigram phrase index counts them (ささ in さささ: 2)."""
    count, start = 0, text.find(value)
    while start >= 0:
        count += 1
        start = text.find(value, start + 1)
    return count


def bm25(
    values: Sequence[str],
    weights: Mapping[str, float],
    docs: Mapping[int, Mapping[str, str]],
    lengths: Mapping[int, int],
    n_labels: int,
    mean_length: float,
) -> dict[int, float]:
    """Higher is better. `docs` must hold every label that contains one of `values` in a weighted
    column (the engine's candidates), so the document frequencies are exact."""
    scores = dict.fromkeys(docs, 0.0)
    for value in values:
        freq = {pk: sum(w * occurrences(value, doc.get(c, "")) for c, w in weights.items()) for pk, doc in docs.items()}
        n = sum(1 for f in freq.values() if f > 0)
        if n == 0:
            continue
        idf = max(math.log((n_labels - n + 0.5) / (n + 0.5)), 1e-6)
        for pk, f in freq.items():
            if f > 0:
                norm = 1 - B + B * (lengths.get(pk, 0) / mean_length if mean_length else 0.0)
                scores[pk] += idf * f * (K1 + 1) / (f + K1 * norm)
    return {pk: s for pk, s in scores.items() if s > 0}
