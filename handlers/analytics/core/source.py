"""Turn a tool's `table_or_query` (+ optional date range) into a safe FROM clause.

A bare identifier names a table (a database table or a materialized view); anything
else must pass the SQL guard and is wrapped as a subquery. The wrapper puts the
user text between newlines so a trailing `-- comment` cannot swallow the closing
parenthesis.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from generated.errors import InvalidInputError, NotFoundError

from .connection import SqlConnection
from .sql_guard import check_select

# A bare table name: letters (any script), digits and underscores, not starting with a digit.
IDENTIFIER = re.compile(r"^[^\W\d]\w*$")
QUOTED_IDENTIFIER = re.compile(r'^"((?:[^"]|"")+)"$')
TIMESTAMPTZ = "TIMESTAMP WITH TIME ZONE"
TEMPORAL_TYPES = ("TIMESTAMP", "DATE", TIMESTAMPTZ, "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS")
NUMERIC_TYPES = (
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "HUGEINT",
    "UTINYINT",
    "USMALLINT",
    "UINTEGER",
    "UBIGINT",
    "UHUGEINT",
    "FLOAT",
    "DOUBLE",
)


def quote_ident(name: str) -> str:
    """Double-quote an identifier for DuckDB."""
    return '"' + name.replace('"', '""') + '"'


def is_numeric(type_name: str) -> bool:
    return type_name in NUMERIC_TYPES or type_name.startswith("DECIMAL")


def is_temporal(type_name: str) -> bool:
    return type_name in TEMPORAL_TYPES


@dataclass(frozen=True, slots=True)
class Source:
    """A FROM-able SQL fragment plus what the caller asked for."""

    from_sql: str
    kind: str  # "table" or "query"
    name: str | None
    columns: tuple[tuple[str, str], ...]
    date_column: str | None = None

    def column_type(self, column: str) -> str | None:
        for name, type_name in self.columns:
            if name == column:
                return type_name
        return None

    def find_column(self, column: str) -> str | None:
        """The source's name for `column`: an exact match, else the one case-insensitive match.

        DuckDB resolves identifiers case-insensitively, so `Pace_S_Per_Km` means
        `pace_s_per_km`; when two columns differ only in case, only the exact name works.
        """
        if self.column_type(column) is not None:
            return column
        folded = [name for name, _ in self.columns if name.casefold() == column.casefold()]
        return folded[0] if len(folded) == 1 else None


def wrap_query(sql: str) -> str:
    return f"(\n{sql}\n)"


def describe(con: SqlConnection, from_sql: str) -> tuple[tuple[str, str], ...]:
    rows = con.execute(f"DESCRIBE SELECT * FROM {from_sql} AS s").fetchall()
    # The type of an untyped NULL column prints as '"NULL"'; report it as NULL.
    return tuple((str(r[0]), str(r[1]).strip('"')) for r in rows)


def resolve(
    con: SqlConnection,
    table_or_query: str,
    *,
    tables: dict[str, str],
    allowed_catalogs: frozenset[str],
) -> Source:
    """Resolve a table name (case-insensitive, from `tables`: lower name -> real name) or a SELECT."""
    text = table_or_query.strip()
    quoted = QUOTED_IDENTIFIER.match(text)
    if quoted or IDENTIFIER.match(text):
        if quoted:
            text = quoted.group(1).replace('""', '"')
        real = tables.get(text.lower())
        if real is None:
            available = ", ".join(sorted(tables.values()))
            raise NotFoundError(f"No table named {text!r}. Available: {available}.")
        from_sql = quote_ident(real)
        return Source(from_sql, "table", real, describe(con, from_sql))
    sql = check_select(con, text, allowed_catalogs=allowed_catalogs, tables=tables)
    from_sql = wrap_query(sql)
    return Source(from_sql, "query", None, describe(con, from_sql))


def parse_date_range(date_range: list[str] | None) -> tuple[date, date] | None:
    """Validate an inclusive [start, end] pair of ISO dates."""
    if not date_range:
        return None
    if len(date_range) != 2:
        raise InvalidInputError("date_range must be [start, end] as YYYY-MM-DD dates.")
    try:
        start, end = date.fromisoformat(date_range[0]), date.fromisoformat(date_range[1])
    except ValueError as exc:
        raise InvalidInputError(f"date_range must hold YYYY-MM-DD dates: {exc}") from exc
    if end < start:
        raise InvalidInputError("date_range end is before its start.")
    return start, end


def pick_date_column(source: Source, requested: str | None) -> str | None:
    """The explicit date column, or the first temporal column, or None."""
    if requested:
        name = source.find_column(requested)
        if name is None:
            raise InvalidInputError(f"No column named {requested!r} in the source.")
        type_name = source.column_type(name) or ""
        if not is_temporal(type_name):
            raise InvalidInputError(f"date_column {requested!r} is {type_name}, not a date or timestamp.")
        return name
    for name, type_name in source.columns:
        if is_temporal(type_name):
            return name
    return None


def date_bounds_sql(type_name: str, start: date, end: date) -> tuple[str, str | None]:
    """SQL literals for `column >= lower` and `column < upper` (None: no upper bound).

    DATE and plain TIMESTAMP columns hold local wall-clock time: the bounds are local
    midnights. A TIMESTAMPTZ column holds instants; comparing it with a plain TIMESTAMP
    would make DuckDB read the bound in the server's TimeZone setting, so the result
    would depend on where the server runs. Its days are UTC days instead, with the
    offset written into the literal.
    """
    after = end + timedelta(days=1) if end < date.max else None
    if type_name == TIMESTAMPTZ:
        return (
            f"TIMESTAMPTZ '{start.isoformat()} 00:00:00+00'",
            None if after is None else f"TIMESTAMPTZ '{after.isoformat()} 00:00:00+00'",
        )
    return f"TIMESTAMP '{start.isoformat()}'", None if after is None else f"TIMESTAMP '{after.isoformat()}'"


def apply_date_range(source: Source, date_range: list[str] | None, date_column: str | None) -> Source:
    """Return a Source filtered to the inclusive date range on its date column."""
    column = pick_date_column(source, date_column)
    bounds = parse_date_range(date_range)
    if bounds is None:
        return Source(source.from_sql, source.kind, source.name, source.columns, column)
    if column is None:
        raise InvalidInputError(
            "date_range was given but the source has no DATE or TIMESTAMP column; filter in SQL instead.",
        )
    start, end = bounds
    col = quote_ident(column)
    lower, upper = date_bounds_sql(source.column_type(column) or "", start, end)
    condition = f"{col} >= {lower}" + ("" if upper is None else f" AND {col} < {upper}")
    filtered = f"(SELECT * FROM {source.from_sql} AS d WHERE {condition})"
    return Source(filtered, source.kind, source.name, source.columns, column)
