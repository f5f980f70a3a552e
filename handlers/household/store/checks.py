"""Duplicate checks in the household store: record candidates, user decisions, restore (seed §10.5–10.8).

Confirming and restoring each run in one serialised write (store.Store.write),
so a check's decision and the transaction's flag never disagree.

Each detection run (core.detection) replaces the undecided candidates: pending checks (no
user_decision) that the run does not find again are deleted, so the candidates
of an earlier, looser run disappear once a stricter one is run. Decided checks
(duplicate / not_duplicate / skip) are always kept. A run limited to
`transaction_ids` only replaces the pending checks between those transactions.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from sqlalchemy import Connection, RowMapping, delete, func, select, update

from generated.household import models

from .. import changes, problems
from ..records import Options
from . import Store, chunks, refresh_aggregates, t
from .queries import shape, transaction
from .tables import checks, now

c = checks
#: a 64-bit INTEGER: an id outside this range names no row (and the drivers refuse to bind it)
MAX_ID = 2**63 - 1


def _stored_id(value: int, kind: str) -> int:
    """`value` if it can name a stored row, else NOT_FOUND: the specs bound ids, this keeps the store safe anyway."""
    if not 1 <= value <= MAX_ID:
        raise problems.not_found(kind, value)
    return value


def _refresh_month_of(con: Connection, tid: int) -> str:
    """Rebuild the aggregates of the month of `tid`; returns that month ('YYYY-MM')."""
    month = str(con.scalar(select(t.c.date).where(t.c.id == tid)))[:7]
    refresh_aggregates(con, month)
    return month


def load_columns(con: Connection, ids: list[int] | None) -> tuple[list[int], list[int], list[int], list[int]]:
    """(ids, days as date.toordinal(), amounts, is_transfer) of the transactions not marked as duplicates.

    is_transfer is the kind the search pairs within: a 振替 row is only compared with 振替 rows.
    """
    rows = con.execute(
        select(t.c.id, t.c.date, t.c.amount, func.coalesce(t.c.is_transfer, 0)).where(t.c.is_duplicate == 0)
    ).all()
    if ids:
        wanted = set(ids)
        rows = [r for r in rows if r[0] in wanted]
    if not rows:
        return [], [], [], []
    tids, dates, amounts, kinds = (list(col) for col in zip(*rows, strict=True))
    ordinals = {d: date.fromisoformat(d).toordinal() for d in set(dates)}  # a few thousand distinct dates
    return tids, [ordinals[d] for d in dates], [int(a) for a in amounts], [int(k) for k in kinds]


def _remove_stale(con: Connection, ids: list[int] | None, id_1: list[int], id_2: list[int]) -> int:
    """Delete the pending checks (within the scanned transactions) that are not among the found pairs."""
    if not ids and not id_1:
        return int(con.execute(delete(c).where(c.c.user_decision.is_(None))).rowcount)
    pending = con.execute(
        select(c.c.id, c.c.transaction_id_1, c.c.transaction_id_2).where(c.c.user_decision.is_(None))
    ).all()
    if ids:
        wanted = set(ids)
        pending = [r for r in pending if r[1] in wanted and r[2] in wanted]
    found = set(zip(id_1, id_2, strict=True))
    stale = [r[0] for r in pending if (r[1], r[2]) not in found]
    for part in chunks(stale):
        con.execute(delete(c).where(c.c.id.in_(part)))
    return len(stale)


def _upsert(store: Store) -> Any:
    """Record a candidate pair, or refresh a pending one; a decided pair keeps its decision and score."""
    ins = store.insert(c)
    refreshed = ("detection_date_tolerance", "detection_amount_tolerance_abs", "detection_amount_tolerance_pct")
    return ins.on_conflict_do_update(
        index_elements=[c.c.transaction_id_1, c.c.transaction_id_2],
        set_={name: ins.excluded[name] for name in (*refreshed, "similarity_score", "detected_at")},
        where=c.c.user_decision.is_(None),
    )


def replace_candidates(
    store: Store, con: Connection, opts: Options, ids: list[int] | None, found: tuple[list[int], list[int], list[float]]
) -> tuple[int, int]:
    """Store the found pairs (id_1, id_2, score) as pending checks, replacing the pending ones not found again.

    Returns (checks removed, checks added). Call inside `store.write()`.
    """
    id_1, id_2, scores = found
    removed = _remove_stale(con, ids, id_1, id_2)
    existing = con.scalar(select(func.count()).select_from(c)) or 0
    if scores:
        stamp = now()
        con.execute(
            _upsert(store),
            [
                {
                    "transaction_id_1": int(a),
                    "transaction_id_2": int(b),
                    "detection_date_tolerance": opts.date_tolerance_days,
                    "detection_amount_tolerance_abs": opts.amount_tolerance_abs,
                    "detection_amount_tolerance_pct": opts.amount_tolerance_pct,
                    "similarity_score": float(score),
                    "detected_at": stamp,
                }
                for a, b, score in zip(id_1, id_2, scores, strict=True)
            ],
        )
    return removed, (con.scalar(select(func.count()).select_from(c)) or 0) - existing


def _candidate(con: Connection, row: RowMapping) -> models.DuplicateCandidate:
    t1 = transaction(con, row["transaction_id_1"])
    t2 = transaction(con, row["transaction_id_2"])
    assert t1 is not None and t2 is not None  # foreign keys
    return models.DuplicateCandidate(
        check_id=row["id"],
        transaction_1=t1,
        transaction_2=t2,
        similarity_score=float(row["similarity_score"]),
        date_diff_days=abs(t1.date.toordinal() - t2.date.toordinal()),
        amount_diff=abs(t1.amount - t2.amount),
        user_decision=models.UserDecision(row["user_decision"]),
    )


def list_candidates(store: Store, limit: int, skip_checked: bool) -> models.DuplicateCandidateList:
    query = select(c)
    if skip_checked:
        a, b = t.alias("a"), t.alias("b")
        query = (
            query.join(a, a.c.id == c.c.transaction_id_1)
            .join(b, b.c.id == c.c.transaction_id_2)
            .where(c.c.user_decision.is_(None), a.c.is_duplicate == 0, b.c.is_duplicate == 0)
        )
    with store.read() as con:
        total = con.scalar(select(func.count()).select_from(query.subquery())) or 0
        rows = con.execute(query.order_by(c.c.similarity_score.desc(), c.c.id).limit(limit)).mappings().all()
        return models.DuplicateCandidateList(candidates=[_candidate(con, r) for r in rows], total=total)


def _check(con: Connection, check_id: int) -> RowMapping:
    row = con.execute(select(c).where(c.c.id == check_id)).mappings().first()
    if row is None:
        raise problems.not_found("duplicate_not_found", check_id)
    return row


def detail(store: Store, check_id: int) -> models.DuplicateCandidateDetail:
    _stored_id(check_id, "duplicate_not_found")
    with store.read() as con:
        row = _check(con, check_id)
        candidate = _candidate(con, row)
    return models.DuplicateCandidateDetail(
        **dict(candidate),
        detection_params=models.DetectionParams(
            date_tolerance_days=row["detection_date_tolerance"],
            amount_tolerance_abs=float(row["detection_amount_tolerance_abs"]),
            amount_tolerance_pct=float(row["detection_amount_tolerance_pct"]),
        ),
        detected_at=row["detected_at"],
        decided_at=row["decided_at"],
    )


def _set_mark(con: Connection, tid: int, duplicate_of: int | None) -> str:
    """Mark `tid` as a duplicate of `duplicate_of`, or un-mark it (None); the user has now checked it.

    Returns the month whose rows that changed."""
    stamp = now()
    con.execute(
        update(t)
        .where(t.c.id == tid)
        .values(
            is_duplicate=int(duplicate_of is not None),
            duplicate_of=duplicate_of,
            duplicate_checked=1,
            duplicate_checked_at=stamp,
            updated_at=stamp,
        )
    )
    return _refresh_month_of(con, tid)


def confirm(store: Store, check_id: int, decision: str) -> models.ConfirmDuplicateOutput:
    """Record a decision; 'duplicate' marks transaction_id_2 as a duplicate of transaction_id_1.

    Changing a 'duplicate' decision to anything else un-marks the transaction again. Once committed,
    subscribers hear of the resources a mark set or lifted changed (handlers.household.changes).
    """
    try:
        chosen = models.Decision(decision)
    except ValueError:
        raise problems.invalid("判定値が不正です（duplicate/not_duplicate/skipのいずれか）") from None
    _stored_id(check_id, "duplicate_not_found")
    with store.write() as con:
        before = shape(con)
        result, month = _decide(con, check_id, chosen)
        after = shape(con) if month else before
    changes.announce(before, after, [month] if month else [])
    return result


def _decide(
    con: Connection, check_id: int, decision: models.Decision
) -> tuple[models.ConfirmDuplicateOutput, str | None]:
    """`confirm` in its transaction: (its answer, the month whose rows a mark set or lifted changed)."""
    row = _check(con, check_id)
    keep, mark = row["transaction_id_1"], row["transaction_id_2"]
    marked = con.execute(select(t.c.is_duplicate, t.c.duplicate_of).where(t.c.id == mark)).one()
    con.execute(update(c).where(c.c.id == check_id).values(user_decision=decision.value, decided_at=now()))
    month: str | None = None
    if decision is models.Decision.duplicate:
        if marked.is_duplicate:
            raise problems.conflict("already_marked", mark)
        month = _set_mark(con, mark, keep)
        message = f"重複として記録しました。取引ID {mark} にフラグが設定されました。"
        return _confirmed(check_id, decision, mark, message), month
    unmarked: int | None = None
    if row["user_decision"] == models.Decision.duplicate and marked.is_duplicate and marked.duplicate_of == keep:
        month = _set_mark(con, mark, None)
        unmarked = mark
    con.execute(
        update(t)
        .where(t.c.id.in_([keep, mark]), t.c.is_duplicate == 0)
        .values(duplicate_checked=1, duplicate_checked_at=now())
    )
    label = "重複ではない" if decision is models.Decision.not_duplicate else "保留"
    message = f"「{label}」として記録しました。"
    if unmarked is not None:
        message += f"取引ID {unmarked} の重複フラグを解除しました。"
    return _confirmed(check_id, decision, None, message), month


def _confirmed(
    check_id: int, decision: models.Decision, marked: int | None, message: str
) -> models.ConfirmDuplicateOutput:
    return models.ConfirmDuplicateOutput(
        success=True,
        check_id=check_id,
        decision=decision,
        marked_transaction_id=marked,
        message=message,
    )


def restore(store: Store, transaction_id: int) -> models.RestoreDuplicateOutput:
    """Un-mark a transaction; the checks that marked it become 'not_duplicate' (the user said it was wrong)."""
    _stored_id(transaction_id, "transaction_not_found")
    with store.write() as con:
        row = con.execute(select(t.c.is_duplicate, t.c.duplicate_of).where(t.c.id == transaction_id)).first()
        if row is None:
            raise problems.not_found("transaction_not_found", transaction_id)
        if not row.is_duplicate:
            raise problems.conflict("not_marked", transaction_id)
        before = shape(con)
        con.execute(
            update(t).where(t.c.id == transaction_id).values(is_duplicate=0, duplicate_of=None, updated_at=now())
        )
        con.execute(
            update(c)
            .where(
                c.c.transaction_id_2 == transaction_id,
                c.c.transaction_id_1 == row.duplicate_of,
                c.c.user_decision == models.Decision.duplicate.value,
            )
            .values(user_decision=models.Decision.not_duplicate.value, decided_at=now())
        )
        month = _refresh_month_of(con, transaction_id)
        after = shape(con)
    changes.announce(before, after, [month])
    return models.RestoreDuplicateOutput(
        success=True, transaction_id=transaction_id, message=f"取引ID {transaction_id} を復元しました。"
    )


def stats(store: Store) -> models.DuplicateStats:
    with store.read() as con:
        total, marked = con.execute(
            select(func.count(), func.coalesce(func.sum(t.c.is_duplicate), 0)).select_from(t)
        ).one()
        decided = con.execute(select(c.c.user_decision, func.count()).group_by(c.c.user_decision)).all()
        counts = {k or "pending": int(v) for k, v in decided}
    total, marked = int(total), int(marked)
    rate = round(marked * 100 / total, 2) if total else 0.0
    return models.DuplicateStats(
        total_transactions=total,
        marked_duplicates=marked,
        total_checks=sum(counts.values()),
        pending_checks=counts.get("pending", 0),
        confirmed_duplicate=counts.get("duplicate", 0),
        confirmed_not_duplicate=counts.get("not_duplicate", 0),
        skipped_checks=counts.get("skip", 0),
        duplicate_rate=rate,
    )
