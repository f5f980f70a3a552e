"""The import's statements: the rows stored for an export file, and the writes that make them equal to it.

core/importer.py decides what changes (which file supersedes which, which stored rows a file adopts,
`identity.plan`); every statement it runs is here, in the order and batches it runs them: one
executemany per adoption, parking and placing, ids `IN (...)` in `CHUNK`s, new rows through
`Store.insert_rows` (the driver's executemany, PostgreSQL's COPY). Each function runs in the
caller's write (`Store.write()`), so a whole import stays one transaction.

A row travels as a tuple in `ROW_COLUMNS` order, as core/csvfile.py's `RowTuple` holds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, or_, select, update

from . import Store, chunks, t
from .tables import checks, now

#: the stored columns a row tuple holds, in its order
ROW_COLUMNS = (
    "row_number",
    "date",
    "amount",
    "description",
    "category_major",
    "category_minor",
    "account",
    "memo",
    "is_target",
    "is_transfer",
    "external_id",
)
_TEXT = {"description", "category_major", "category_minor", "account", "memo", "external_id"}
#: (id, *row) of stored rows; NULL text (a row written by other code) reads as the parser's "" for an empty cell
STORED_ROW = select(
    t.c.id, *(func.coalesce(t.c[name], "").label(name) if name in _TEXT else t.c[name] for name in ROW_COLUMNS)
)


def row_values(source: str, row: Sequence[Any]) -> dict[str, Any]:
    """A row tuple of `source` as the columns it is stored in."""
    return {"source_file": source, **dict(zip(ROW_COLUMNS, row, strict=True))}


def sources(con: Connection) -> set[str]:
    """Every source (export file) that rows are stored for."""
    return set(con.scalars(select(t.c.source_file).distinct()))


def rows_of(con: Connection, source: str) -> list[tuple[Any, ...]]:
    """(id, *row) of every row stored for `source`, in no particular order (an adoption matches by number)."""
    return [tuple(r) for r in con.execute(STORED_ROW.where(t.c.source_file == source)).all()]


def rows_in_order(con: Connection, source: str) -> list[tuple[Any, ...]]:
    """(id, *row) of every row stored for `source`, by row number (the file's order)."""
    return list(map(tuple, con.execute(STORED_ROW.where(t.c.source_file == source).order_by(t.c.row_number))))


def move(con: Connection, moves: Sequence[tuple[int, str]]) -> None:
    """Give each stored row (id, new source) its new source, keeping its id and duplicate decisions."""
    if moves:
        con.execute(
            update(t).where(t.c.id == bindparam("tid")).values(source_file=bindparam("source")),
            [{"tid": tid, "source": source} for tid, source in moves],
        )


def delete_transactions(con: Connection, ids: list[int]) -> None:
    """Delete rows, the duplicate checks that refer to them, and the marks that point at them."""
    for part in chunks(ids):
        con.execute(delete(checks).where(or_(checks.c.transaction_id_1.in_(part), checks.c.transaction_id_2.in_(part))))
        con.execute(
            update(t).where(t.c.duplicate_of.in_(part)).values(is_duplicate=0, duplicate_of=None, updated_at=now())
        )
    for part in chunks(ids):
        con.execute(delete(t).where(t.c.id.in_(part)))


def forget_pending_checks(con: Connection, ids: list[int]) -> None:
    """Delete the undecided duplicate checks of these rows (decided pairs stay)."""
    for part in chunks(ids):
        pairs_of = or_(checks.c.transaction_id_1.in_(part), checks.c.transaction_id_2.in_(part))
        con.execute(delete(checks).where(checks.c.user_decision.is_(None), pairs_of))


def place(con: Connection, source: str, placed: Sequence[tuple[int, Sequence[Any]]]) -> None:
    """Rewrite stored rows (id, new row tuple) as rows of `source`: every one first parked on a free row
    number (minus its id), so that no two collide on (source_file, row_number) while they are placed."""
    if not placed:
        return
    by_id = t.c.id == bindparam("tid")
    con.execute(update(t).where(by_id).values(row_number=-t.c.id), [{"tid": tid} for tid, _ in placed])
    fields: dict[str, Any] = {name: bindparam(f"new_{name}") for name in ("source_file", *ROW_COLUMNS)}
    placing = update(t).where(by_id).values(**fields, updated_at=now())
    con.execute(
        placing, [{"tid": tid, **{f"new_{k}": v for k, v in row_values(source, r).items()}} for tid, r in placed]
    )


def add(store: Store, con: Connection, source: str, rows: Sequence[Sequence[Any]]) -> None:
    """Insert new rows of `source` (through the driver: see `Store.insert_rows`)."""
    if rows:
        store.insert_rows(con, t, ("source_file", *ROW_COLUMNS), [(source, *r) for r in rows])


def ids_with_prefix(con: Connection, prefix: str) -> list[int]:
    """Ids of the rows whose source starts with `prefix` (taken literally: no LIKE wildcards)."""
    return list(con.scalars(select(t.c.id).where(t.c.source_file.startswith(prefix, autoescape=True))))


def stamp(con: Connection) -> tuple[Any, ...]:
    """(count, last id, last update) of the transactions: changes when any row is added, removed or edited."""
    return tuple(con.execute(select(func.count(), func.max(t.c.id), func.max(t.c.updated_at))).one())


def count(con: Connection) -> int:
    """How many transactions are stored."""
    return int(con.scalar(select(func.count()).select_from(t)) or 0)
