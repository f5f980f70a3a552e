"""The household store on kumitate's storage layer: its writes, its reads and the aggregates.

The layer opens the connections (SQLite pragmas or the PostgreSQL pool) and commits under the
call's commit gate; this module adds what is household's own:

* every write is serialised with every other household write, on every instance: SQLite's
  BEGIN IMMEDIATE does it for the embedded file, a transaction-scoped advisory lock for
  PostgreSQL. An import reads what is stored and then writes the difference, so two imports at
  once (two instances, or two callers) must not both see an empty month and both add it;
* `ACTIVE` / `EXPENSE` / `INCOME`, through which every aggregate reads, so that a transaction
  marked as a duplicate disappears everywhere at once;
* `refresh_aggregates`, run inside every write that changes transactions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import (
    Column,
    ColumnDefault,
    ColumnElement,
    Table,
    and_,
    delete,
    func,
    insert,
    literal_column,
    select,
    true,
)
from sqlalchemy import Connection as Connection  # what write() and read() yield: core/ hands it back to the store
from sqlalchemy.dialects import postgresql, sqlite

from kumitate.storage import Database

from .tables import active_months, monthly_spending, transactions
from .tables import metadata as metadata  # household's tables (`kumitate db revision --service household`)

t = transactions

#: rows that exist for every aggregate (not marked as a duplicate)
ACTIVE: ColumnElement[bool] = t.c.is_duplicate == 0
#: spending: counted (計算対象=1), money out, not a transfer (振替=1), not a duplicate
EXPENSE: ColumnElement[bool] = and_(ACTIVE, t.c.is_target == 1, t.c.is_transfer == 0, t.c.amount < 0)
#: income: counted, money in, not a transfer, not a duplicate
INCOME: ColumnElement[bool] = and_(ACTIVE, t.c.is_target == 1, t.c.is_transfer == 0, t.c.amount > 0)
#: 'YYYY-MM' of a transaction (literal positions: PostgreSQL matches GROUP BY expressions textually)
MONTH = func.substr(t.c.date, literal_column("1"), literal_column("7"))

#: one PostgreSQL advisory lock for household writes ("hous")
WRITE_LOCK_ID = 0x686F7573
#: ids per `IN (...)`: far below SQLite's 32,766 and psycopg's 65,535 bound parameters
CHUNK = 5000


class Store:
    """The storage layer's `Database`, used the household way."""

    def __init__(self, database: Database) -> None:
        self.database = database

    @property
    def dialect(self) -> str:
        return self.database.dialect

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """One atomic household write, serialised with every other one (see the module docstring)."""
        with self.database.transaction() as conn:
            if self.dialect == "postgresql":
                conn.execute(select(func.pg_advisory_xact_lock(WRITE_LOCK_ID)))
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with self.database.read() as conn:
            yield conn

    def insert(self, table: Any) -> postgresql.Insert | sqlite.Insert:
        """The dialect's INSERT, for ON CONFLICT clauses (the same SQL on both engines)."""
        return (postgresql.insert if self.dialect == "postgresql" else sqlite.insert)(table)

    def insert_rows(
        self, conn: Connection, table: Table, columns: Sequence[str], rows: Iterable[Sequence[Any]]
    ) -> None:
        """INSERT `rows` (tuples in `columns` order) in the write of `conn`, through the driver.

        SQLAlchemy's executemany builds and processes a parameter dict per row (with the dicts themselves,
        most of the storage time of a 100k-row import); the driver takes the tuples as they are: SQLite's
        executemany, PostgreSQL's COPY. The Python-side defaults of the table's other columns are filled
        once per call, as SQLAlchemy would fill them per row.
        """
        defaults = {c.name: _default(c) for c in table.columns if c.name not in columns and c.default is not None}
        quote = conn.dialect.identifier_preparer.quote
        names = ", ".join(quote(n) for n in [*columns, *defaults])
        tail = tuple(defaults.values())
        cursor = conn.connection.cursor()
        try:
            if self.dialect == "postgresql":
                with cursor.copy(f"COPY {quote(table.name)} ({names}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row((*row, *tail))
            else:
                marks = ", ".join("?" * (len(columns) + len(tail)))
                sql = f"INSERT INTO {quote(table.name)} ({names}) VALUES ({marks})"
                cursor.executemany(sql, [(*row, *tail) for row in rows])
        finally:
            cursor.close()

    def analyze(self, conn: Connection) -> None:
        """Fresh planner statistics after a bulk change (PostgreSQL's autovacuum keeps its own)."""
        if self.dialect == "sqlite":
            conn.exec_driver_sql("PRAGMA analysis_limit=1000")
            conn.exec_driver_sql("ANALYZE")  # keeps the planner off the low-selectivity is_duplicate index


def _default(column: Column[Any]) -> Any:
    """A column's Python-side default value (a callable one called now)."""
    default = column.default
    assert isinstance(default, ColumnDefault)
    return default.arg(None) if default.is_callable else default.arg


def chunks(ids: Sequence[int]) -> Iterable[Sequence[int]]:
    for start in range(0, len(ids), CHUNK):
        yield ids[start : start + CHUNK]


def month_range(month: str) -> ColumnElement[bool]:
    """Transactions of one month ('YYYY-MM'), as a range the date index answers."""
    year, mon = int(month[:4]), int(month[5:7])
    following = f"{year + mon // 12:04d}-{mon % 12 + 1:02d}-01"
    return and_(t.c.date >= f"{month}-01", t.c.date < following)


def refresh_aggregates(conn: Connection, month: str | None = None) -> None:
    """Rebuild monthly_spending / active_months, for one month ('YYYY-MM') or all; call inside the write."""
    if month is None:
        where: ColumnElement[bool] = true()
        conn.execute(delete(monthly_spending))
        conn.execute(delete(active_months))
    else:
        where = month_range(month)
        conn.execute(delete(monthly_spending).where(monthly_spending.c.month == month))
        conn.execute(delete(active_months).where(active_months.c.month == month))
    spent = (
        select(MONTH, t.c.category_major, t.c.category_minor, -func.sum(t.c.amount))
        .where(EXPENSE, where)
        .group_by(MONTH, t.c.category_major, t.c.category_minor)
    )
    conn.execute(insert(monthly_spending).from_select(["month", "category_major", "category_minor", "amount"], spent))
    conn.execute(insert(active_months).from_select(["month"], select(MONTH).where(ACTIVE, where).distinct()))
