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
  catalog or `temp` (materialized views);
* a table reference is allowed only if it names a user table, a live mat_* view,
  a CTE in scope, or one of `information_schema.tables/columns/schemata`. DuckDB
  resolves unqualified names through the system catalog too, so without this
  `FROM pg_settings`, `FROM duckdb_databases` or `FROM pragma_database_list` would
  read settings and absolute paths. Names of the system catalog (duckdb_*, pragma_*,
  pg_*, sqlite_*), the `system` catalog and the `pg_catalog` schema are refused with
  UNSAFE_QUERY even as CTE names; any other unknown name is refused with SQL_ERROR
  (a typo, not an attack) before DuckDB sees it. CTE scope is conservative: a CTE is
  visible in its query's body and in the CTEs defined after it, not in its own body
  (where DuckDB would read the catalog object of that name), except the recursive
  part of a WITH RECURSIVE;
* time travel (`AT (VERSION => ...)`) is refused;
* a few scalar functions that leak server configuration or query the catalog
  (pg_get_viewdef, get_block_size, ...) or write the log are refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from itertools import accumulate
from typing import Any

import duckdb

from generated.errors import InvalidInputError, SqlError, UnsafeQueryError

from .connection import SqlConnection

MAX_SQL_CHARS = 20_000
ALLOWED_TABLE_FUNCTIONS = frozenset({"range", "generate_series", "unnest"})
DENIED_SCALAR_FUNCTIONS = frozenset(
    {
        "current_setting",
        "getenv",
        "which_secret",
        "setseed",
        "nextval",
        "currval",
        # catalog-reading macros and side effects
        "pg_get_viewdef",
        "pg_get_constraintdef",
        "format_type",
        "get_block_size",
        "write_log",
    }
)
SYSTEM_NAME_PREFIXES = ("duckdb_", "pragma_", "pg_", "sqlite_")
SYSTEM_CATALOGS = frozenset({"system"})
SYSTEM_SCHEMAS = frozenset({"pg_catalog", "system"})
INFORMATION_SCHEMA = "information_schema"
INFORMATION_SCHEMA_VIEWS = frozenset({"tables", "columns", "schemata"})
ALLOWED_REF_TYPES = frozenset(
    {"BASE_TABLE", "JOIN", "SUBQUERY", "TABLE_FUNCTION", "EXPRESSION_LIST", "EMPTY", "EMPTY_FROM"}
)
_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")
MAX_TREE_DEPTH = 500
"""Deepest serialised syntax tree checked (each nested subquery, call or chained operator adds 3 levels);
well inside the recursion any supported Python's JSON decoder manages."""
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = {c: None for c in range(128) if chr(c) not in "[]{}"}


def unsafe(message: str) -> UnsafeQueryError:
    """The catalogued refusal; the message says what to change."""
    return UnsafeQueryError(message)


def check_select(con: SqlConnection, sql: str, *, allowed_catalogs: frozenset[str], tables: Collection[str]) -> str:
    """Return `sql` stripped of trailing semicolons if it is one safe SELECT.

    Raises UNSAFE_QUERY for anything else, or SQL_ERROR when DuckDB
    cannot parse it at all or it names a table that does not exist. `con` is only
    used to parse (no query is run against user tables). `allowed_catalogs` holds
    the catalog names a table reference may use explicitly (the database's own
    name, `temp`, `main`); `tables` the lower-cased names a query may read (the
    database's tables and the live mat_* views).
    """
    if not sql or not sql.strip():
        raise InvalidInputError("The query is empty; send one SELECT statement.")
    if len(sql) > MAX_SQL_CHARS:
        raise InvalidInputError(f"The query is longer than {MAX_SQL_CHARS} characters.")
    if "\x00" in sql:
        raise unsafe("The query contains a NUL character.")
    try:
        statements = con.extract_statements(sql)
    except duckdb.InterruptException:
        raise  # the call's deadline or cancellation, not the query's syntax
    except duckdb.Error as exc:
        raise SqlError(f"The query does not parse: {_first_line(exc)}") from exc
    if len(statements) != 1:
        raise unsafe(f"Send exactly one SELECT statement (got {len(statements)}).")
    statement = statements[0]
    if statement.type != duckdb.StatementType.SELECT:
        kind = statement.type.name
        raise unsafe(f"Only SELECT (or WITH ... SELECT) is allowed; this is a {kind} statement.")
    text = statement.query.rstrip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    prefetched = getattr(statement, "serialized", None)  # a worker's statements carry it (one round trip less)
    tree = _serialize(con, text, prefetched[1] if prefetched and prefetched[0] == text else None)
    _walk(tree, allowed_catalogs, frozenset(t.lower() for t in tables))
    return text


def tree_depth(raw: str) -> int:
    """How deeply the arrays and objects of a JSON text nest (brackets inside strings do not count).

    Measured on the text, before decoding: Python's JSON decoder recurses once per level, and
    where it gives up differs by version (3.11 at about 1000 levels, 3.12 and 3.13 far deeper),
    so the limit is this module's decision, the same on every Python."""
    brackets = _JSON_STRING.sub("", raw).translate(_NOT_BRACKETS)
    return max(accumulate(1 if ch in "[{" else -1 for ch in brackets), default=0)


def _serialize(con: SqlConnection, text: str, raw: str | None = None) -> Any:
    """`text`'s syntax tree (json_serialize_sql, or `raw` when the worker already returned it), depth-checked."""
    if raw is None:
        try:
            raw = con.execute("SELECT json_serialize_sql(?::VARCHAR)", [text]).fetchall()[0][0]
        except duckdb.Error as exc:  # pragma: no cover - json_serialize_sql reports errors in its result
            raise unsafe(f"The query could not be analysed: {_first_line(exc)}") from exc
    depth = tree_depth(raw)
    if depth > MAX_TREE_DEPTH:
        raise unsafe(
            f"The query is nested too deeply to be checked ({depth} levels in its syntax tree, at most"
            f" {MAX_TREE_DEPTH}: about {MAX_TREE_DEPTH // 3} nested subqueries, function calls or chained"
            " operators); flatten nested subqueries into WITH clauses."
        )
    tree = json.loads(raw)
    if tree.get("error"):
        kind = tree.get("error_type", "")
        message = tree.get("error_message", "")
        if kind == "parser":
            raise SqlError(f"The query does not parse: {message}")
        raise unsafe(
            "Only plain SELECT queries are allowed (DESCRIBE, SUMMARIZE, SHOW and PIVOT are not); "
            "read the analytics://schema resource for table and column names."
        )
    return tree


def _walk(tree: Any, allowed_catalogs: frozenset[str], tables: frozenset[str]) -> None:
    """Visit every dict in the serialised tree and apply the reference rules.

    Each item travels with the CTE names visible at that point. A query node (it has
    a `cte_map`) makes its CTEs visible in its body; CTE i's own query sees only the
    CTEs before it, and a RECURSIVE_CTE_NODE adds its name in its recursive part.
    """
    stack: list[tuple[Any, frozenset[str]]] = [(tree, frozenset())]
    while stack:
        item, ctes = stack.pop()
        if isinstance(item, list):
            stack.extend((v, ctes) for v in item)
            continue
        if not isinstance(item, dict):
            continue
        cte_map = item.get("cte_map")
        if isinstance(cte_map, dict):
            entries = [e for e in cte_map.get("map") or [] if isinstance(e, dict)]
            names = [str(e.get("key", "")).lower() for e in entries]
            for i, entry in enumerate(entries):
                stack.append((entry.get("value"), ctes | frozenset(names[:i])))
            inner = ctes | frozenset(names)
            skip = {"cte_map"}
            if item.get("type") == "RECURSIVE_CTE_NODE":
                skip.add("right")
                stack.append((item.get("right"), inner | {str(item.get("cte_name", "")).lower()}))
            stack.extend((v, inner) for k, v in item.items() if k not in skip and isinstance(v, dict | list))
            continue
        if item.get("class") == "FUNCTION":
            name = str(item.get("function_name", "")).lower()
            if name in DENIED_SCALAR_FUNCTIONS:
                raise unsafe(f"The function {name}() is not allowed.")
        if _is_table_ref(item):
            _check_ref(item, allowed_catalogs, tables, ctes)
        stack.extend((v, ctes) for v in item.values() if isinstance(v, dict | list))


def _is_table_ref(item: dict[str, Any]) -> bool:
    """Table references carry alias and sample; expressions carry a class, query nodes modifiers."""
    return "type" in item and "alias" in item and "sample" in item and "class" not in item and "modifiers" not in item


def _is_system_name(name: str) -> bool:
    return name.startswith(SYSTEM_NAME_PREFIXES)


def _check_ref(
    ref: dict[str, Any], allowed_catalogs: frozenset[str], tables: frozenset[str], ctes: frozenset[str]
) -> None:
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
        _check_base_table(ref, allowed_catalogs, tables, ctes)


def _check_base_table(
    ref: dict[str, Any], allowed_catalogs: frozenset[str], tables: frozenset[str], ctes: frozenset[str]
) -> None:
    table = str(ref.get("table_name", ""))
    if not _PLAIN_NAME.match(table):
        raise unsafe(
            f"{table!r} is not a table name; reading files from SQL is not allowed. "
            "Query the tables listed in analytics://schema."
        )
    if ref.get("at_clause"):
        raise unsafe("Time travel (AT ...) is not allowed; query the current tables.")
    name = table.lower()
    catalog = str(ref.get("catalog_name", "")).lower()
    schema = str(ref.get("schema_name", "")).lower()
    if _is_system_name(name) or catalog in SYSTEM_CATALOGS or schema in SYSTEM_SCHEMAS:
        raise unsafe(
            f"{table!r} is part of DuckDB's system catalog, which is not available. "
            "Read the analytics://schema resource for tables, columns and row counts."
        )
    if schema == INFORMATION_SCHEMA:
        own = allowed_catalogs - {"temp", "main"}
        if (catalog and catalog not in own) or name not in INFORMATION_SCHEMA_VIEWS:
            views = ", ".join(f"information_schema.{v}" for v in sorted(INFORMATION_SCHEMA_VIEWS))
            raise unsafe(f"Only {views} are available from information_schema.")
        return
    if catalog and catalog not in allowed_catalogs:
        raise unsafe(f"The catalog {catalog!r} is not available; use unqualified table names.")
    if schema and schema not in allowed_catalogs | {"main"}:
        raise unsafe(f"The schema {schema!r} is not available; use unqualified table names.")
    if (not catalog and not schema and name in ctes) or name in tables:
        return
    available = ", ".join(sorted(tables))
    raise SqlError(
        f"No table named {table!r}. Tables and live views: {available} (see analytics://schema).",
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
