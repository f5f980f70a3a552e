"""Static checks on user SQL, before DuckDB runs any of it.

The sandboxed connection (see `connection.py`) is the real wall: the database is
read-only, file access is off except for the exports directory, and the
configuration is locked. These checks sit in front of it so that an LLM gets a
precise, catalogued UNSAFE_QUERY instead of a DuckDB permission error, and so that
the one directory the sandbox must allow (exports, for COPY ... TO) cannot be read
back through SQL: handles are capabilities, not paths.

Rules:
* exactly one statement, of type SELECT (a WITH ... SELECT is a SELECT);
* the statement must serialise with `json_serialize_sql` (plain SELECT / set
  operations; DESCRIBE, SUMMARIZE, SHOW and PIVOT statements are refused);
* table functions only from a small allow-list (`range`, `generate_series`, `unnest`):
  this refuses read_csv, read_parquet, read_text, read_blob, glob, query, query_table,
  duckdb_* metadata functions, pragma_* and every extension scanner;
* a table name must be a plain identifier (no quoted file paths such as
  `FROM '/etc/passwd'` or `FROM 'x.parquet'`), and may only name the database's own
  catalog, `temp` (materialized views) or `information_schema`;
* a few scalar functions that leak server configuration are refused.
"""

from __future__ import annotations

import json
import re
from typing import Any

import duckdb

from kumitate.errors import ToolError

MAX_SQL_CHARS = 20_000
ALLOWED_TABLE_FUNCTIONS = frozenset({"range", "generate_series", "unnest"})
DENIED_SCALAR_FUNCTIONS = frozenset({"current_setting", "getenv", "which_secret", "setseed", "nextval", "currval"})
ALLOWED_REF_TYPES = frozenset(
    {"BASE_TABLE", "JOIN", "SUBQUERY", "TABLE_FUNCTION", "EXPRESSION_LIST", "EMPTY", "EMPTY_FROM"}
)
_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")


def unsafe(message: str) -> ToolError:
    """The catalogued refusal; the message says what to change."""
    return ToolError(message, code="UNSAFE_QUERY")


def check_select(con: duckdb.DuckDBPyConnection, sql: str, *, allowed_catalogs: frozenset[str]) -> str:
    """Return `sql` stripped of trailing semicolons if it is one safe SELECT.

    Raises ToolError(UNSAFE_QUERY) for anything else, or SQL_ERROR when DuckDB
    cannot parse it at all. `con` is only used to parse (no query is run against
    user tables). `allowed_catalogs` holds the catalog names a table reference may
    use explicitly (the database's own name, `temp`, `main`).
    """
    if not sql or not sql.strip():
        raise ToolError("The query is empty; send one SELECT statement.", code="INVALID_INPUT")
    if len(sql) > MAX_SQL_CHARS:
        raise ToolError(f"The query is longer than {MAX_SQL_CHARS} characters.", code="INVALID_INPUT")
    if "\x00" in sql:
        raise unsafe("The query contains a NUL character.")
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise ToolError(f"The query does not parse: {_first_line(exc)}", code="SQL_ERROR") from exc
    if len(statements) != 1:
        raise unsafe(f"Send exactly one SELECT statement (got {len(statements)}).")
    statement = statements[0]
    if statement.type != duckdb.StatementType.SELECT:
        kind = statement.type.name
        raise unsafe(f"Only SELECT (or WITH ... SELECT) is allowed; this is a {kind} statement.")
    text = statement.query.rstrip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    tree = _serialize(con, text)
    _walk(tree, allowed_catalogs)
    return text


def _serialize(con: duckdb.DuckDBPyConnection, text: str) -> Any:
    try:
        raw = con.execute("SELECT json_serialize_sql(?::VARCHAR)", [text]).fetchall()[0][0]
    except duckdb.Error as exc:  # pragma: no cover - json_serialize_sql reports errors in its result
        raise unsafe(f"The query could not be analysed: {_first_line(exc)}") from exc
    tree = json.loads(raw)
    if tree.get("error"):
        kind = tree.get("error_type", "")
        message = tree.get("error_message", "")
        if kind == "parser":
            raise ToolError(f"The query does not parse: {message}", code="SQL_ERROR")
        raise unsafe(
            "Only plain SELECT queries are allowed (DESCRIBE, SUMMARIZE, SHOW and PIVOT are not); "
            "read the analytics://schema resource for table and column names."
        )
    return tree


def _walk(node: Any, allowed_catalogs: frozenset[str]) -> None:
    """Visit every dict in the serialised tree and apply the reference rules."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        if item.get("class") == "FUNCTION":
            name = str(item.get("function_name", "")).lower()
            if name in DENIED_SCALAR_FUNCTIONS:
                raise unsafe(f"The function {name}() is not allowed.")
        if _is_table_ref(item):
            _check_ref(item, allowed_catalogs)
        stack.extend(v for v in item.values() if isinstance(v, dict | list))


def _is_table_ref(item: dict[str, Any]) -> bool:
    """Table references carry alias and sample; expressions carry a class, query nodes modifiers."""
    return "type" in item and "alias" in item and "sample" in item and "class" not in item and "modifiers" not in item


def _check_ref(ref: dict[str, Any], allowed_catalogs: frozenset[str]) -> None:
    kind = ref.get("type")
    if kind not in ALLOWED_REF_TYPES:
        raise unsafe(f"This kind of FROM item ({kind}) is not allowed; select from the database's tables.")
    if kind == "TABLE_FUNCTION":
        function = ref.get("function") or {}
        name = str(function.get("function_name", "")).lower()
        if name not in ALLOWED_TABLE_FUNCTIONS:
            raise unsafe(
                f"The table function {name}() is not allowed (no file or metadata access from SQL). "
                "Query the tables listed in analytics://schema; use export to get data out."
            )
    elif kind == "BASE_TABLE":
        table = str(ref.get("table_name", ""))
        if not _PLAIN_NAME.match(table):
            raise unsafe(
                f"{table!r} is not a table name; reading files from SQL is not allowed. "
                "Query the tables listed in analytics://schema."
            )
        catalog = str(ref.get("catalog_name", "")).lower()
        schema = str(ref.get("schema_name", "")).lower()
        if catalog and catalog not in allowed_catalogs:
            raise unsafe(f"The catalog {catalog!r} is not available; use unqualified table names.")
        if schema and schema not in allowed_catalogs | {"main", "information_schema"}:
            raise unsafe(f"The schema {schema!r} is not available; use unqualified table names.")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
