"""histogram: exactly `bins` equal-width bins over [min, max], computed in SQL.

Edge semantics (documented in the tool spec, tested exactly):
* edges are e_i = min + i * ((max - min) / bins) for i < bins, and e_bins = max;
* bin i counts values v with e_i <= v < e_{i+1} (left-closed), except the last bin,
  which is closed on both ends (e_{bins-1} <= v <= max), so the maximum is counted;
* NULLs (and NaN) are not binned; they are reported as `null_count`;
* if every value is equal (min == max) all edges are equal and, by the rule above,
  every value lands in the last bin;
* if there are no non-null values, `bins` is empty.

DuckDB's `histogram()` table function picks "nice" boundaries and may return a
different number of bins, so it is not used. A first query gets min/max/counts;
the second assigns a bin index with floor() and then corrects it against the
exact edge values (passed in as a DOUBLE list), so floating-point rounding in the
division can never put a value on the wrong side of an edge.
"""

from __future__ import annotations

import math
from typing import Any

import duckdb

from kumitate.errors import ToolError

from .source import Source, is_numeric, quote_ident

MAX_BINS = 100


def bin_edges(lo: float, hi: float, bins: int) -> list[float]:
    """The bins + 1 edges; the last edge is exactly `hi`."""
    width = (hi - lo) / bins
    return [lo + i * width for i in range(bins)] + [hi]


def compute_histogram(con: duckdb.DuckDBPyConnection, source: Source, column: str, bins: int) -> dict[str, Any]:
    if not 1 <= bins <= MAX_BINS:
        raise ToolError(f"bins must be between 1 and {MAX_BINS}.", code="INVALID_INPUT")
    type_name = source.column_type(column)
    if type_name is None:
        names = ", ".join(n for n, _ in source.columns)
        raise ToolError(f"No column named {column!r}. Columns: {names}.", code="INVALID_INPUT")
    if not is_numeric(type_name):
        raise ToolError(f"Column {column!r} is {type_name}; histogram needs a numeric column.", code="INVALID_INPUT")
    c = quote_ident(column)
    value = f"CAST({c} AS DOUBLE)"
    valid = f"{c} IS NOT NULL AND NOT isnan({value})"
    total, non_null, lo, hi = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE {valid}), min({value}) FILTER (WHERE {valid}), "
        f"max({value}) FILTER (WHERE {valid}) FROM {source.from_sql} AS s"
    ).fetchall()[0]
    result: dict[str, Any] = {
        "column": column,
        "bins": [],
        "total_count": int(total),
        "null_count": int(total - non_null),
        "min": lo,
        "max": hi,
        "bin_width": None,
    }
    if not non_null:
        return result
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ToolError(f"Column {column!r} holds infinite values; filter them out first.", code="INVALID_INPUT")
    edges = bin_edges(lo, hi, bins)
    counts = [0] * bins
    if hi == lo:
        counts[-1] = int(non_null)
    else:
        width = (hi - lo) / bins
        # 1-based list indexing: edges[k + 1] is e_k.
        rows = con.execute(
            f"""
            WITH v AS (SELECT {value} AS x FROM {source.from_sql} AS s WHERE {valid}),
            g AS (SELECT x, least(greatest(CAST(floor((x - $lo) / $width) AS BIGINT), 0), $last) AS k FROM v)
            SELECT CASE
                     WHEN k > 0 AND x < $edges[k + 1] THEN k - 1
                     WHEN k < $last AND x >= $edges[k + 2] THEN k + 1
                     ELSE k END AS b,
                   count(*)
            FROM g GROUP BY b
            """,
            {"lo": lo, "width": width, "last": bins - 1, "edges": edges},
        ).fetchall()
        for b, n in rows:
            counts[int(b)] += int(n)
    result["bins"] = [{"min": edges[i], "max": edges[i + 1], "count": counts[i]} for i in range(bins)]
    result["bin_width"] = (hi - lo) / bins
    return result
