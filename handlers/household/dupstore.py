"""Duplicate checks in SQLite: record candidates, user decisions, restore (seed §10.5–10.8).

Confirming and restoring each run in one SQLite transaction (BEGIN IMMEDIATE),
so a check's decision and the transaction's flag never disagree.

Each detection run replaces the undecided candidates: pending checks (no
user_decision) that the run does not find again are deleted, so the candidates
of an earlier, looser run disappear once a stricter one is run. Decided checks
(duplicate / not_duplicate / skip) are always kept. A run limited to
`transaction_ids` only replaces the pending checks between those transactions.
"""

from __future__ import annotations

import sqlite3
from datetime import date
from itertools import repeat
from typing import Any

from kumitate.context import progress

from . import problems
from .db import Database, refresh_aggregates
from .duplicates import Item, Options, find_candidates, search
from .queries import transaction

DECISIONS = ("duplicate", "not_duplicate", "skip")
#: SQLite INTEGER: an id outside this range names no row (and sqlite3 would raise OverflowError binding it)
MAX_ID = 2**63 - 1


def _stored_id(value: int, kind: str) -> int:
    """`value` if it can name a stored row, else NOT_FOUND: the specs bound ids, this keeps the store safe anyway."""
    if not 1 <= value <= MAX_ID:
        raise problems.not_found(kind, value)
    return value


UPSERT = """
INSERT INTO duplicate_checks (transaction_id_1, transaction_id_2, detection_date_tolerance,
    detection_amount_tolerance_abs, detection_amount_tolerance_pct, similarity_score)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT(transaction_id_1, transaction_id_2) DO UPDATE SET
    detection_date_tolerance = excluded.detection_date_tolerance,
    detection_amount_tolerance_abs = excluded.detection_amount_tolerance_abs,
    detection_amount_tolerance_pct = excluded.detection_amount_tolerance_pct,
    similarity_score = excluded.similarity_score,
    detected_at = CURRENT_TIMESTAMP
WHERE duplicate_checks.user_decision IS NULL
"""


def _refresh_month_of(con: sqlite3.Connection, tid: int) -> None:
    day = con.execute("SELECT date FROM transactions WHERE id = ?", (tid,)).fetchone()[0]
    refresh_aggregates(con, str(day)[:7])


def load_columns(con: sqlite3.Connection, ids: list[int] | None) -> tuple[list[int], list[int], list[int], list[int]]:
    """(ids, days as date.toordinal(), amounts, is_transfer) of the transactions not marked as duplicates.

    is_transfer is the kind the search pairs within: a 振替 row is only compared with 振替 rows.
    """
    cur = con.cursor()
    cur.row_factory = None  # plain tuples
    rows = cur.execute(
        "SELECT id, date, amount, COALESCE(is_transfer, 0) FROM transactions WHERE is_duplicate = 0"
    ).fetchall()
    if ids:
        wanted = set(ids)
        rows = [r for r in rows if r[0] in wanted]
    if not rows:
        return [], [], [], []
    tids, dates, amounts, kinds = (list(c) for c in zip(*rows, strict=True))
    ordinals = {d: date.fromisoformat(d).toordinal() for d in set(dates)}  # a few thousand distinct dates
    return tids, [ordinals[d] for d in dates], [int(a) for a in amounts], [int(k) for k in kinds]


def load_items(con: sqlite3.Connection, ids: list[int] | None) -> list[Item]:
    return [Item(*t) for t in zip(*load_columns(con, ids), strict=True)]


def _remove_stale(con: sqlite3.Connection, ids: list[int] | None, id_1: list[int], id_2: list[int]) -> int:
    """Delete the pending checks (within the scanned transactions) that are not among the found pairs."""
    if not ids and not id_1:
        return int(con.execute("DELETE FROM duplicate_checks WHERE user_decision IS NULL").rowcount)
    cur = con.cursor()
    cur.row_factory = None
    pending = cur.execute(
        "SELECT id, transaction_id_1, transaction_id_2 FROM duplicate_checks WHERE user_decision IS NULL"
    ).fetchall()
    if ids:
        wanted = set(ids)
        pending = [r for r in pending if r[1] in wanted and r[2] in wanted]
    found = set(zip(id_1, id_2, strict=True))
    stale = [(r[0],) for r in pending if (r[1], r[2]) not in found]
    con.executemany("DELETE FROM duplicate_checks WHERE id = ?", stale)
    return len(stale)


#: candidates stored per run by default: far more than anyone reviews one by one
MAX_STORED_CANDIDATES = 10_000


def detect(
    db: Database, opts: Options, ids: list[int] | None, max_stored: int = MAX_STORED_CANDIDATES
) -> dict[str, Any]:
    """Search and store the candidates: the best `max_stored` by score (then ids) when a run finds more.

    The cap keeps a loose search (±31 days, a wide amount band: 100k+ pairs) from filling the table with
    pairs nobody can review; `candidates_truncated` says it happened, and the caller warns.
    """
    # Foreign keys off for this write: every pair is made of ids read inside this same transaction,
    # so the two lookups per inserted row could never fail (they cost ~40% of the upsert).
    with db.transaction(foreign_keys=False) as con:
        progress(0, 3, "取引を読み込んでいます")
        tids, days, amounts, kinds = load_columns(con, ids)
        progress(1, 3, "重複候補を探しています")
        found = search(tids, days, amounts, opts, kinds)
        if found is None:  # outside the vectorised search's exact range
            pairs = find_candidates([Item(*t) for t in zip(tids, days, amounts, kinds, strict=True)], opts)
            found = ([c.id_1 for c in pairs], [c.id_2 for c in pairs], [c.score for c in pairs])
        id_1, id_2, scores = found
        count = len(scores)
        if count > max_stored:  # best first already: keep the head
            id_1, id_2, scores = id_1[:max_stored], id_2[:max_stored], scores[:max_stored]
        progress(2, 3, "重複候補を記録しています")
        removed = _remove_stale(con, ids, id_1, id_2)
        existing = con.execute("SELECT COUNT(*) FROM duplicate_checks").fetchone()[0]
        con.executemany(
            UPSERT,
            zip(
                id_1,
                id_2,
                repeat(opts.date_tolerance_days),
                repeat(opts.amount_tolerance_abs),
                repeat(opts.amount_tolerance_pct),
                scores,
            ),
        )
        new = con.execute("SELECT COUNT(*) FROM duplicate_checks").fetchone()[0] - existing
    message = f"{count}件の重複候補が見つかりました" if count else "重複候補は見つかりませんでした"
    if count > len(scores):
        message += f"（スコアの高い{len(scores)}件だけを記録しました）"
    return {
        "candidates_count": count,
        "new_candidates": new,
        "removed_candidates": removed,
        "checked_transactions": len(tids),
        "stored_candidates": len(scores),
        "candidates_truncated": count > len(scores),
        "message": message,
    }


def _check_dict(con: sqlite3.Connection, row: sqlite3.Row) -> dict[str, Any]:
    t1 = transaction(con, row["transaction_id_1"])
    t2 = transaction(con, row["transaction_id_2"])
    assert t1 is not None and t2 is not None  # foreign keys
    days = abs(date.fromisoformat(str(t1["date"])).toordinal() - date.fromisoformat(str(t2["date"])).toordinal())
    return {
        "check_id": row["id"],
        "transaction_1": t1,
        "transaction_2": t2,
        "similarity_score": float(row["similarity_score"]),
        "date_diff_days": days,
        "amount_diff": abs(int(t1["amount"]) - int(t2["amount"])),  # type: ignore[call-overload]
        "user_decision": row["user_decision"],
    }


def list_candidates(db: Database, limit: int, skip_checked: bool) -> dict[str, Any]:
    sql = "SELECT c.* FROM duplicate_checks c"
    if skip_checked:
        sql += (
            " JOIN transactions a ON a.id = c.transaction_id_1 JOIN transactions b ON b.id = c.transaction_id_2"
            " WHERE c.user_decision IS NULL AND a.is_duplicate = 0 AND b.is_duplicate = 0"
        )
    with db.connect() as con:
        total = con.execute(sql.replace("SELECT c.*", "SELECT COUNT(*)", 1)).fetchone()[0]
        rows = con.execute(sql + " ORDER BY c.similarity_score DESC, c.id LIMIT ?", (limit,)).fetchall()
        return {"candidates": [_check_dict(con, r) for r in rows], "total": total}


def detail(db: Database, check_id: int) -> dict[str, Any]:
    _stored_id(check_id, "duplicate_not_found")
    with db.connect() as con:
        row = con.execute("SELECT * FROM duplicate_checks WHERE id = ?", (check_id,)).fetchone()
        if row is None:
            raise problems.not_found("duplicate_not_found", check_id)
        out = _check_dict(con, row)
    out["detection_params"] = {
        "date_tolerance_days": row["detection_date_tolerance"],
        "amount_tolerance_abs": float(row["detection_amount_tolerance_abs"]),
        "amount_tolerance_pct": float(row["detection_amount_tolerance_pct"]),
    }
    out["detected_at"] = row["detected_at"]
    out["decided_at"] = row["decided_at"]
    return out


def confirm(db: Database, check_id: int, decision: str) -> dict[str, Any]:
    """Record a decision; 'duplicate' marks transaction_id_2 as a duplicate of transaction_id_1.

    Changing a 'duplicate' decision to anything else un-marks the transaction again.
    """
    if decision not in DECISIONS:
        raise problems.invalid("判定値が不正です（duplicate/not_duplicate/skipのいずれか）")
    _stored_id(check_id, "duplicate_not_found")
    with db.transaction() as con:
        row = con.execute("SELECT * FROM duplicate_checks WHERE id = ?", (check_id,)).fetchone()
        if row is None:
            raise problems.not_found("duplicate_not_found", check_id)
        keep, mark = row["transaction_id_1"], row["transaction_id_2"]
        marked = con.execute("SELECT is_duplicate, duplicate_of FROM transactions WHERE id = ?", (mark,)).fetchone()
        con.execute(
            "UPDATE duplicate_checks SET user_decision = ?, decided_at = CURRENT_TIMESTAMP WHERE id = ?",
            (decision, check_id),
        )
        if decision == "duplicate":
            if marked["is_duplicate"]:
                raise problems.conflict("already_marked", mark)
            con.execute(
                "UPDATE transactions SET is_duplicate = 1, duplicate_of = ?, duplicate_checked = 1, "
                "duplicate_checked_at = CURRENT_TIMESTAMP, updated_at = CURRENT_TIMESTAMP WHERE id = ?",
                (keep, mark),
            )
            _refresh_month_of(con, mark)
            return {
                "success": True,
                "check_id": check_id,
                "decision": decision,
                "marked_transaction_id": mark,
                "message": f"重複として記録しました。取引ID {mark} にフラグが設定されました。",
            }
        unmarked = None
        if row["user_decision"] == "duplicate" and marked["is_duplicate"] and marked["duplicate_of"] == keep:
            con.execute(
                "UPDATE transactions SET is_duplicate = 0, duplicate_of = NULL, duplicate_checked = 1, "
                "duplicate_checked_at = CURRENT_TIMESTAMP, updated_at = CURRENT_TIMESTAMP WHERE id = ?",
                (mark,),
            )
            unmarked = mark
            _refresh_month_of(con, mark)
        con.execute(
            "UPDATE transactions SET duplicate_checked = 1, duplicate_checked_at = CURRENT_TIMESTAMP "
            "WHERE id IN (?, ?) AND is_duplicate = 0",
            (keep, mark),
        )
        label = "重複ではない" if decision == "not_duplicate" else "保留"
        message = f"「{label}」として記録しました。"
        if unmarked is not None:
            message += f"取引ID {unmarked} の重複フラグを解除しました。"
        return {
            "success": True,
            "check_id": check_id,
            "decision": decision,
            "marked_transaction_id": None,
            "message": message,
        }


def restore(db: Database, transaction_id: int) -> dict[str, Any]:
    """Un-mark a transaction; the checks that marked it become 'not_duplicate' (the user said it was wrong)."""
    _stored_id(transaction_id, "transaction_not_found")
    with db.transaction() as con:
        row = con.execute(
            "SELECT is_duplicate, duplicate_of FROM transactions WHERE id = ?", (transaction_id,)
        ).fetchone()
        if row is None:
            raise problems.not_found("transaction_not_found", transaction_id)
        if not row["is_duplicate"]:
            raise problems.conflict("not_marked", transaction_id)
        con.execute(
            "UPDATE transactions SET is_duplicate = 0, duplicate_of = NULL, updated_at = CURRENT_TIMESTAMP "
            "WHERE id = ?",
            (transaction_id,),
        )
        con.execute(
            "UPDATE duplicate_checks SET user_decision = 'not_duplicate', decided_at = CURRENT_TIMESTAMP "
            "WHERE transaction_id_2 = ? AND transaction_id_1 = ? AND user_decision = 'duplicate'",
            (transaction_id, row["duplicate_of"]),
        )
        _refresh_month_of(con, transaction_id)
    return {"success": True, "transaction_id": transaction_id, "message": f"取引ID {transaction_id} を復元しました。"}


def stats(db: Database) -> dict[str, Any]:
    with db.connect() as con:
        total, marked = con.execute("SELECT COUNT(*), COALESCE(SUM(is_duplicate), 0) FROM transactions").fetchone()
        counts = dict(
            con.execute(
                "SELECT COALESCE(user_decision, 'pending'), COUNT(*) FROM duplicate_checks GROUP BY 1"
            ).fetchall()
        )
    rate = round(marked * 100 / total, 2) if total else 0.0
    return {
        "total_transactions": total,
        "marked_duplicates": marked,
        "total_checks": sum(counts.values()),
        "pending_checks": counts.get("pending", 0),
        "confirmed_duplicate": counts.get("duplicate", 0),
        "confirmed_not_duplicate": counts.get("not_duplicate", 0),
        "skipped_checks": counts.get("skip", 0),
        "duplicate_rate": rate,
    }
