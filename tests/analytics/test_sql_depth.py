"""The SQL guard's depth limit is its own, the same on Python 3.11, 3.12 and 3.13.

Before it was explicit, an over-deep query was refused only because 3.11's JSON decoder raised
RecursionError on the serialised tree; 3.12 and 3.13 decode far deeper, so the query went through.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import duckdb
import pytest

from handlers.analytics.core.sql_guard import MAX_TREE_DEPTH, check_select, tree_depth
from kumitate.errors import ToolError


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    connection = duckdb.connect()
    connection.execute("CREATE TABLE splits (avg_hr INTEGER)")
    yield connection
    connection.close()


def _check(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    return check_select(con, sql, allowed_catalogs=frozenset({"memory", "main", "temp"}), tables={"splits"})


def _nested(levels: int) -> str:
    return "SELECT count(*) FROM " + "(SELECT * FROM " * levels + "splits" + ") t" * levels


def test_tree_depth_counts_brackets_outside_strings() -> None:
    assert tree_depth("{}") == 1 and tree_depth('{"a": [1, {"b": []}]}') == 4
    assert tree_depth(json.dumps({"s": "[[[{{{" * 100, "t": ['\\"]]]']})) == 2
    assert tree_depth("1") == 0


@pytest.mark.parametrize("levels", [400, 1000])
def test_over_deep_queries_are_refused_on_every_python(con: duckdb.DuckDBPyConnection, levels: int) -> None:
    with pytest.raises(ToolError) as err:
        _check(con, _nested(levels))
    assert err.value.code == "UNSAFE_QUERY" and "nested too deeply" in err.value.message
    assert f"at most {MAX_TREE_DEPTH}" in err.value.message


def test_the_limit_is_where_it_says(con: duckdb.DuckDBPyConnection) -> None:
    deepest = max(n for n in range(1, 200) if tree_depth(_serialised(con, _nested(n))) <= MAX_TREE_DEPTH)
    assert deepest >= 100, "a hundred nested subqueries are still checked"
    assert _check(con, _nested(deepest)).startswith("SELECT")
    with pytest.raises(ToolError):
        _check(con, _nested(deepest + 1))
    # brackets in a string literal are not nesting
    assert _check(con, "SELECT '" + "(" * 5000 + "' AS s FROM splits")


def _serialised(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    raw = con.execute("SELECT json_serialize_sql(?::VARCHAR)", [sql]).fetchall()[0][0]
    assert isinstance(raw, str)
    return raw
