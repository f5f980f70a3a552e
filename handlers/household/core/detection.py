"""A duplicate-detection run: read the transactions, search the pairs, store the best (seed §10.5).

The search is core.duplicates; the stored checks and what a run replaces are store.checks.
"""

from __future__ import annotations

from generated.household import models
from kumitate.context import progress

from ..records import Options
from ..store import Connection, Store, checks
from .duplicates import Item, find_candidates, search


def load_items(con: Connection, ids: list[int] | None) -> list[Item]:
    """The transactions a search compares (all, or those of `ids`), duplicates already marked left out."""
    return [Item(*row) for row in zip(*checks.load_columns(con, ids), strict=True)]


def detect(store: Store, opts: Options, ids: list[int] | None, max_stored: int) -> models.DetectDuplicatesOutput:
    """Search and store the candidates: the best `max_stored` by score (then ids) when a run finds more.

    The cap keeps a loose search (±31 days, a wide amount band: 100k+ pairs) from filling the table with
    pairs nobody can review; `candidates_truncated` says it happened, and the caller warns.
    """
    with store.write() as con:
        progress(0, 3, "取引を読み込んでいます")
        tids, days, amounts, kinds = checks.load_columns(con, ids)
        progress(1, 3, "重複候補を探しています")
        found = search(tids, days, amounts, opts, kinds)
        if found is None:  # outside the vectorised search's exact range
            pairs = find_candidates([Item(*row) for row in zip(tids, days, amounts, kinds, strict=True)], opts)
            found = ([p.id_1 for p in pairs], [p.id_2 for p in pairs], [p.score for p in pairs])
        id_1, id_2, scores = found
        count = len(scores)
        if count > max_stored:  # best first already: keep the head
            id_1, id_2, scores = id_1[:max_stored], id_2[:max_stored], scores[:max_stored]
        progress(2, 3, "重複候補を記録しています")
        removed, new = checks.replace_candidates(store, con, opts, ids, (id_1, id_2, scores))
    message = f"{count}件の重複候補が見つかりました" if count else "重複候補は見つかりませんでした"
    if count > len(scores):
        message += f"（スコアの高い{len(scores)}件だけを記録しました）"
    return models.DetectDuplicatesOutput(
        candidates_count=count,
        new_candidates=new,
        removed_candidates=removed,
        checked_transactions=len(tids),
        stored_candidates=len(scores),
        candidates_truncated=count > len(scores),
        message=message,
    )
