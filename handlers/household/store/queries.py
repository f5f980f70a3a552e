"""Read-side queries: months with data, the category tree, monthly sums, a month's rows.

Every query goes through store.ACTIVE / store.EXPENSE / store.INCOME, so duplicates marked by the user
are excluded everywhere. Names are sorted in Python, not by the database: PostgreSQL's collation
would order Japanese text differently from SQLite, and answers must not depend on the engine.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from sqlalchemy import Connection, case, func, select

from generated.household import models

from .. import months
from ..changes import Shape
from . import ACTIVE, EXPENSE, INCOME, t
from .tables import active_months
from .tables import monthly_spending as ms


def data_months(con: Connection) -> list[int]:
    """Months holding any non-duplicate row (from the active_months aggregate)."""
    return sorted(months.parse(m) for m in con.scalars(select(active_months.c.month)))


def category_hierarchy(con: Connection) -> dict[str, list[str]]:
    tree: dict[str, list[str]] = {}
    pairs = con.execute(select(t.c.category_major, t.c.category_minor).where(ACTIVE).distinct()).all()
    for major, minor in sorted(pairs, key=lambda p: (p[0] or "", p[1] or "")):
        tree.setdefault(major, []).append(minor)
    return tree


def shape(con: Connection) -> Shape:
    """The tree, the names that held spending and the months with data, to tell what a write changed."""
    majors, minors = expense_categories(con)
    found = tuple(sorted(con.scalars(select(active_months.c.month))))
    return Shape(category_hierarchy(con), frozenset(majors) | frozenset(minors), found)


def expense_level(con: Connection, name: str) -> models.Level | None:
    """major if `name` is a 大項目 that held spending, else minor if a 中項目 did, else None."""
    for level, column in ((models.Level.major, ms.c.category_major), (models.Level.minor, ms.c.category_minor)):
        if con.execute(select(column).where(column == name).limit(1)).first() is not None:
            return level
    return None


def expense_categories(con: Connection) -> tuple[list[str], list[str]]:
    """(大項目 names, 中項目 names) that ever held spending."""
    majors = sorted(con.scalars(select(ms.c.category_major).distinct()))
    minors = sorted(con.scalars(select(ms.c.category_minor).distinct()))
    return majors, minors


def top_spending_majors(con: Connection, limit: int) -> list[str]:
    """The 大項目 with the most spending over all data, largest first."""
    totals = con.execute(select(ms.c.category_major, func.sum(ms.c.amount)).group_by(ms.c.category_major)).all()
    return [name for name, _ in sorted(totals, key=lambda r: (-int(r[1]), r[0]))[:limit]]


def category_kind(con: Connection, name: str) -> models.CategoryKind | None:
    """For a name without spending: income, transfer or other if some row carries it, else None."""
    is_income = (t.c.is_target == 1) & (t.c.is_transfer == 0) & (t.c.amount > 0)
    income, transfer, count = con.execute(
        select(
            func.coalesce(func.sum(case((is_income, 1), else_=0)), 0),
            func.coalesce(func.sum(case((t.c.is_transfer == 1, 1), else_=0)), 0),
            func.count(),
        ).where(ACTIVE, (t.c.category_major == name) | (t.c.category_minor == name))
    ).one()
    if not count:
        return None
    if income and not transfer:
        return models.CategoryKind.income
    if transfer and not income:
        return models.CategoryKind.transfer
    return models.CategoryKind.other


def monthly_spending(
    con: Connection, start: int, end: int, *, level: models.Level = models.Level.major, category: str | None = None
) -> dict[str, dict[int, int]]:
    """{category → {month → yen spent}} for months in [start, end] (positive yen), from the aggregate."""
    column = ms.c.category_major if level == models.Level.major else ms.c.category_minor
    query = select(column, ms.c.month, func.sum(ms.c.amount)).where(
        ms.c.month >= months.label(start), ms.c.month <= months.label(end)
    )
    if category is not None:
        query = query.where(column == category)
    out: dict[str, dict[int, int]] = {}
    for name, month, total in con.execute(query.group_by(column, ms.c.month)):
        out.setdefault(name, {})[months.parse(month)] = int(total)
    return out


def month_has_data(con: Connection, month: int) -> bool:
    found = select(active_months.c.month).where(active_months.c.month == months.label(month))
    return con.execute(found).first() is not None


def _in_month(month: int) -> Any:
    return (t.c.date >= months.first_day(month)) & (t.c.date < months.first_day(month + 1))


def month_expenses(con: Connection, month: int) -> list[models.ExpenseRow]:
    """The month's expense rows (明細), oldest first."""
    rows = con.execute(
        select(
            t.c.id,
            t.c.date,
            t.c.description,
            t.c.amount,
            t.c.category_major,
            t.c.category_minor,
            t.c.account,
            t.c.memo,
        )
        .where(EXPENSE, _in_month(month))
        .order_by(t.c.date, t.c.id)
    )
    return [
        models.ExpenseRow(
            id=r.id,
            date=date.fromisoformat(r.date),
            description=r.description or "",
            amount=int(r.amount),
            category_major=r.category_major,
            category_minor=r.category_minor,
            account=r.account or "",
            memo=r.memo or "",
        )
        for r in rows
    ]


def month_income(con: Connection, month: int) -> int:
    total = con.scalar(select(func.coalesce(func.sum(t.c.amount), 0)).where(INCOME, _in_month(month)))
    return int(total or 0)


def transaction(con: Connection, tid: int) -> models.TransactionRef | None:
    row = (
        con.execute(
            select(
                t.c.id,
                t.c.date,
                t.c.amount,
                t.c.description,
                t.c.category_major,
                t.c.category_minor,
                t.c.account,
                t.c.source_file,
                t.c.row_number,
                t.c.is_duplicate,
                t.c.duplicate_of,
            ).where(t.c.id == tid)
        )
    ).first()
    if row is None:
        return None
    return models.TransactionRef(
        id=row.id,
        date=date.fromisoformat(row.date),
        amount=int(row.amount),
        description=row.description or "",
        category_major=row.category_major,
        category_minor=row.category_minor,
        account=row.account or "",
        source_file=row.source_file,
        row_number=row.row_number,
        is_duplicate=bool(row.is_duplicate),
        duplicate_of=row.duplicate_of,
    )
