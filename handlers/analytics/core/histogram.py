"""histogram: exactly `bins` equal-width bins over [min, max], computed in SQL.

Edge semantics (documented in the tool spec, tested exactly):
* edges are e_i = min + i * ((max - min) / bins) for 0 < i < bins, written with the
  fewest significant digits that stay within 1e-9 of a bin width of that value
  (267.796, not 267.79600000000005); e_0 = min and e_bins = max exactly;
* bin i counts values v with e_i <= v < e_{i+1} (left-closed), except the last bin,
  which is closed on both ends (e_{bins-1} <= v <= max), so the maximum is counted;
  the returned (rounded) edges are the ones the counts follow;
* NULLs (and NaN) are not binned; they are reported as `null_count`;
* if every value is equal (min == max) there is one bin, [v, v], holding every value
  (`bins` equal-width bins of width 0 would be all empty but one);
* if there are no non-null values, `bins` is empty.

Counts: `row_count` is every row considered (after date_range), NULLs included;
`binned_count` the non-null values, which the bins sum to; `null_count` the rest.
`total_count` is the deprecated name of row_count (it read as "the sum of the bins").

DuckDB's `histogram()` table function picks "nice" boundaries and may return a
different number of bins, so it is not used. A first query gets min/max/counts;
the second assigns a bin index with floor() and then corrects it against the
exact edge values (passed in as a DOUBLE list), so floating-point rounding in the
division can never put a value on the wrong side of an edge.

Extreme ranges stay finite: when max - min overflows a double (-1.7e308 .. 1.7e308)
the edges are interpolated as (min/bins)*(bins-i) + (max/bins)*i and the bin guess
works on halved values. When the range is so narrow that edges collide (a few
subnormal steps, 5e-324 apart), the values are grouped exactly and each is placed
by bisecting the edges, which is the same rule.
"""

from __future__ import annotations

import itertools
import math
from bisect import bisect_right
from typing import Any

from generated.errors import InvalidInputError

from .connection import SqlConnection
from .source import Source, is_numeric, quote_ident

MAX_BINS = 100
EDGE_TOLERANCE = 1e-9  # of a bin width: how far a rounded edge may move
# Below this bin width (subnormal doubles) the width's own rounding error, times up
# to 100 bins, can move an edge by more than a bin: the exact path is used.
MIN_FAST_WIDTH = 1e-320


def bin_width(lo: float, hi: float, bins: int) -> float:
    """(hi - lo) / bins, computed without overflow when hi - lo exceeds the double range."""
    span = hi - lo
    return span / bins if math.isfinite(span) else hi / bins - lo / bins


def short_float(value: float, tolerance: float) -> float:
    """The float with the fewest significant digits within `tolerance` of `value`."""
    if tolerance <= 0 or not math.isfinite(value):
        return value
    for digits in range(1, 17):
        candidate = float(f"{value:.{digits}g}")
        if abs(candidate - value) <= tolerance:
            return candidate
    return value


def bin_edges(lo: float, hi: float, bins: int) -> list[float]:
    """The bins + 1 edges: first exactly `lo`, last exactly `hi`, never decreasing."""
    if hi == lo:
        return [lo] * (bins + 1)
    width = bin_width(lo, hi, bins)
    overflow = not math.isfinite(hi - lo)
    edges = [lo]
    for i in range(1, bins):
        raw = (lo / bins) * (bins - i) + (hi / bins) * i if overflow else lo + i * width
        edge = short_float(raw, width * EDGE_TOLERANCE)
        edges.append(min(max(edge, edges[-1]), hi))
    edges.append(hi)
    return edges


def fast_path_ok(lo: float, hi: float, width: float, edges: list[float]) -> bool:
    """True when every edge is within half a bin of where floor() puts it (guess off by at most 1)."""
    if width < MIN_FAST_WIDTH or width < 4 * math.ulp(max(abs(lo), abs(hi))):
        return False
    return all(a < b for a, b in itertools.pairwise(edges))


def _counts_fast(
    con: SqlConnection, source: Source, value: str, valid: str, lo: float, hi: float, edges: list[float]
) -> list[int]:
    """Strictly increasing edges: floor() guess, then a one-step correction against the edges."""
    bins = len(edges) - 1
    scale = 1.0 if math.isfinite(hi - lo) else 0.5  # halves never overflow when subtracted
    span = hi * scale - lo * scale
    counts = [0] * bins
    # 1-based list indexing: edges[k + 1] is e_k.
    rows = con.execute(
        f"""
        WITH v AS (SELECT {value} AS x FROM {source.from_sql} AS s WHERE {valid}),
        g AS (
            SELECT x, least(greatest(CAST(floor((x * $scale - $lo * $scale) / $span * $bins) AS BIGINT), 0), $last) AS k
            FROM v
        )
        SELECT CASE
                 WHEN k > 0 AND x < $edges[k + 1] THEN k - 1
                 WHEN k < $last AND x >= $edges[k + 2] THEN k + 1
                 ELSE k END AS b,
               count(*)
        FROM g GROUP BY b
        """,
        {"lo": lo, "scale": scale, "span": span, "bins": bins, "last": bins - 1, "edges": edges},
    ).fetchall()
    for b, n in rows:
        counts[int(b)] += int(n)
    return counts


def _counts_exact(con: SqlConnection, source: Source, value: str, valid: str, edges: list[float]) -> list[int]:
    """A range only a few representable doubles wide: group the values, bisect the edges.

    This path runs only when a bin is narrower than 4 steps of the doubles' spacing
    (or than MIN_FAST_WIDTH), so the values take few distinct doubles.
    """
    bins = len(edges) - 1
    interior = edges[1:bins]
    counts = [0] * bins
    rows = con.execute(f"SELECT {value} AS x, count(*) FROM {source.from_sql} AS s WHERE {valid} GROUP BY x").fetchall()
    for x, n in rows:
        counts[min(bisect_right(interior, float(x)), bins - 1)] += int(n)
    return counts


def compute_histogram(con: SqlConnection, source: Source, column: str, bins: int) -> dict[str, Any]:
    if not 1 <= bins <= MAX_BINS:
        raise InvalidInputError(f"bins must be between 1 and {MAX_BINS}.")
    found = source.find_column(column)
    if found is None:
        names = ", ".join(n for n, _ in source.columns)
        raise InvalidInputError(f"No column named {column!r}. Columns: {names}.")
    column = found
    type_name = source.column_type(column) or ""
    if not is_numeric(type_name):
        raise InvalidInputError(f"Column {column!r} is {type_name}; histogram needs a numeric column.")
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
        "row_count": int(total),
        "binned_count": int(non_null),
        "null_count": int(total - non_null),
        "total_count": int(total),
        "min": lo,
        "max": hi,
        "bin_width": None,
    }
    if not non_null:
        return result
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise InvalidInputError(
            f"Column {column!r} holds infinite values; filter them out first (WHERE isfinite({column})).",
        )
    width = bin_width(lo, hi, bins)
    if not math.isfinite(width):  # only bins=1 over a range wider than the largest double
        raise InvalidInputError(
            f"The range of {column!r} ({lo:g} .. {hi:g}) is wider than a double can hold in one bin; "
            "ask for at least 2 bins or rescale the column in SQL.",
        )
    if hi == lo:
        result["bins"] = [{"min": lo, "max": hi, "count": int(non_null)}]
        result["bin_width"] = 0.0
        return result
    edges = bin_edges(lo, hi, bins)
    if fast_path_ok(lo, hi, width, edges):
        counts = _counts_fast(con, source, value, valid, lo, hi, edges)
    else:
        counts = _counts_exact(con, source, value, valid, edges)
    result["bins"] = [{"min": edges[i], "max": edges[i + 1], "count": counts[i]} for i in range(bins)]
    result["bin_width"] = short_float(width, abs(width) * EDGE_TOLERANCE)
    return result
