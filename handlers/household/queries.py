"""Read-side SQL: months with data, the category tree, monthly sums, a month's rows.

Every query goes through db.ACTIVE / db.EXPENSE / db.INCOME, so duplicates
marked by the user are excluded everywhere.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from . import months
from .db import ACTIVE, EXPENSE, INCOME


def data_months(con: sqlite3.Connection) -> list[int]:
    """Months holding any non-duplicate row (from the active_months aggregate)."""
    return [months.parse(r[0]) for r in con.execute("SELECT month FROM active_months ORDER BY 1")]


def category_hierarchy(con: sqlite3.Connection) -> dict[str, list[str]]:
    tree: dict[str, list[str]] = {}
    for major, minor in con.execute(
        f"SELECT DISTINCT category_major, category_minor FROM transactions WHERE {ACTIVE} ORDER BY 1, 2"
    ):
        tree.setdefault(major, []).append(minor)
    return tree


def expense_level(con: sqlite3.Connection, name: str) -> str | None:
    """'major' if `name` is a 大項目 that held spending, else 'minor' if a 中項目 did, else None."""
    for level, column in (("major", "category_major"), ("minor", "category_minor")):
        if con.execute(f"SELECT 1 FROM monthly_spending WHERE {column} = ? LIMIT 1", (name,)).fetchone():
            return level
    return None


def expense_categories(con: sqlite3.Connection) -> tuple[list[str], list[str]]:
    """(大項目 names, 中項目 names) that ever held spending."""
    majors = [r[0] for r in con.execute("SELECT DISTINCT category_major FROM monthly_spending ORDER BY 1")]
    minors = [r[0] for r in con.execute("SELECT DISTINCT category_minor FROM monthly_spending ORDER BY 1")]
    return majors, minors


def top_spending_majors(con: sqlite3.Connection, limit: int) -> list[str]:
    """The 大項目 with the most spending over all data, largest first."""
    sql = "SELECT category_major FROM monthly_spending GROUP BY 1 ORDER BY SUM(amount) DESC, 1 LIMIT ?"
    return [r[0] for r in con.execute(sql, (limit,))]


def category_kind(con: sqlite3.Connection, name: str) -> str | None:
    """For a name without spending: 'income', 'transfer' or 'other' if some row carries it, else None."""
    income, transfer, count = con.execute(
        "SELECT COALESCE(SUM(is_target = 1 AND is_transfer = 0 AND amount > 0), 0), COALESCE(SUM(is_transfer = 1), 0), "
        f"COUNT(*) FROM transactions WHERE {ACTIVE} AND (category_major = ? OR category_minor = ?)",
        (name, name),
    ).fetchone()
    if not count:
        return None
    if income and not transfer:
        return "income"
    if transfer and not income:
        return "transfer"
    return "other"


def monthly_spending(
    con: sqlite3.Connection, start: int, end: int, *, level: str = "major", category: str | None = None
) -> dict[str, dict[int, int]]:
    """{category → {month → yen spent}} for months in [start, end] (positive yen), from the aggregate."""
    column = "category_major" if level == "major" else "category_minor"
    sql = f"SELECT {column}, month, SUM(amount) FROM monthly_spending WHERE month >= ? AND month <= ?"
    params: list[object] = [months.label(start), months.label(end)]
    if category is not None:
        sql += f" AND {column} = ?"
        params.append(category)
    sql += " GROUP BY 1, 2"
    out: dict[str, dict[int, int]] = {}
    for name, month, total in con.execute(sql, params):
        out.setdefault(name, {})[months.parse(month)] = int(total)
    return out


def month_has_data(con: sqlite3.Connection, month: int) -> bool:
    return con.execute("SELECT 1 FROM active_months WHERE month = ?", (months.label(month),)).fetchone() is not None


def month_expenses(con: sqlite3.Connection, month: int) -> list[dict[str, Any]]:
    rows = con.execute(
        f"SELECT id, date, description, amount, category_major, category_minor, account, memo FROM transactions "
        f"WHERE {EXPENSE} AND date >= ? AND date < ? ORDER BY date, id",
        (months.first_day(month), months.first_day(month + 1)),
    ).fetchall()
    return [
        {
            "id": r["id"],
            "date": r["date"],
            "description": r["description"] or "",
            "amount": int(r["amount"]),
            "category_major": r["category_major"],
            "category_minor": r["category_minor"],
            "account": r["account"] or "",
            "memo": r["memo"] or "",
        }
        for r in rows
    ]


def month_income(con: sqlite3.Connection, month: int) -> int:
    row = con.execute(
        f"SELECT COALESCE(SUM(amount), 0) FROM transactions WHERE {INCOME} AND date >= ? AND date < ?",
        (months.first_day(month), months.first_day(month + 1)),
    ).fetchone()
    return int(row[0])


def transaction(con: sqlite3.Connection, tid: int) -> dict[str, Any] | None:
    row = con.execute(
        "SELECT id, date, amount, description, category_major, category_minor, account, source_file, row_number, "
        "is_duplicate, duplicate_of FROM transactions WHERE id = ?",
        (tid,),
    ).fetchone()
    if row is None:
        return None
    return {
        "id": row["id"],
        "date": row["date"],
        "amount": int(row["amount"]),
        "description": row["description"] or "",
        "category_major": row["category_major"],
        "category_minor": row["category_minor"],
        "account": row["account"] or "",
        "source_file": row["source_file"],
        "row_number": row["row_number"],
        "is_duplicate": bool(row["is_duplicate"]),
        "duplicate_of": row["duplicate_of"],
    }
