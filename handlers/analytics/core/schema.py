"""The analytics://schema resource: what an LLM needs to plan queries.

Tables, column names, types and descriptions (the COMMENTs the generator stores
in the database) and row counts. The database is read-only, so this is computed
once at start-up; live materialized views are appended per call.
"""

from __future__ import annotations

from typing import Any

from .connection import SqlConnection
from .source import quote_ident


def describe_database(con: SqlConnection) -> list[dict[str, Any]]:
    """Every table of the opened database (not temp), sorted by name."""
    db = con.execute("SELECT current_database()").fetchall()[0][0]
    tables = con.execute(
        "SELECT table_name, comment FROM duckdb_tables() WHERE database_name = ? AND NOT temporary "
        "AND schema_name = 'main' ORDER BY table_name",
        [db],
    ).fetchall()
    columns = con.execute(
        "SELECT table_name, column_name, data_type, comment FROM duckdb_columns() "
        "WHERE database_name = ? AND schema_name = 'main' ORDER BY table_name, column_index",
        [db],
    ).fetchall()
    by_table: dict[str, list[dict[str, Any]]] = {}
    for table, column, type_name, comment in columns:
        entry = {"name": column, "type": type_name}
        if comment:
            entry["description"] = comment
        by_table.setdefault(table, []).append(entry)
    out = []
    for table, comment in tables:
        rows = con.execute(f"SELECT count(*) FROM {quote_ident(table)}").fetchall()[0][0]
        item: dict[str, Any] = {"name": table, "row_count": int(rows), "columns": by_table.get(table, [])}
        if comment:
            item["description"] = comment
        out.append(item)
    return out
