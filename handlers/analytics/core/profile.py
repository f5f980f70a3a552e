"""profile: summary statistics of a table or query, trimmed to ~1 KB.

Two aggregate scans (see compute_profile); bench/analytics_bench.py keeps a
million-row profile under 300 ms. Derived statistics (mean, median, std) are rounded to 4 significant digits:
an LLM reasons about "312.5 s/km", not "312.4978...". If the JSON is larger than
the budget, whole columns are dropped, least useful first (ids and keys, then
timestamps, then text, keeping numeric measures: `usefulness`), and a warning names
them with the `columns=[...]` argument that profiles them.
"""

from __future__ import annotations

import json
import math
import re
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

from generated.errors import InvalidInputError

from .connection import SqlConnection
from .source import TIMESTAMPTZ, Source, is_numeric, is_temporal, quote_ident

PROFILE_MAX_BYTES = 1024
MAX_TEXT = 24


def json_size(data: Any) -> int:
    """Bytes of the compact UTF-8 JSON encoding (what travels to the LLM)."""
    return len(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def round_sig(value: float, digits: int = 4) -> float | int | None:
    """Round to `digits` significant digits (keeping every integer digit); integral results become ints.

    NaN and ±Infinity have no JSON form: they come back as None (callers report them
    as null with a warning). Integer digits are kept only up to 1e15, where a double
    still holds them; larger magnitudes are rounded to `digits` significant digits.
    """
    if not math.isfinite(value):
        return None
    if value == 0:
        return 0
    # Never lose integer digits: 10003.5 -> 10004, not 1e4.
    keep_integer = 10 ** (digits - 1) <= abs(value) < 1e15
    rounded = float(round(value)) if keep_integer else float(f"{value:.{digits}g}")
    return int(rounded) if rounded.is_integer() and abs(rounded) < 1e15 else rounded


def plain(value: Any) -> Any:
    """A JSON-friendly scalar for a DuckDB value (min/max keep full precision)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, Decimal):
        return round_sig(float(value), 8)
    if isinstance(value, float):
        return round_sig(value, 8)
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else value[: MAX_TEXT - 1] + "…"
    if isinstance(value, int):
        return value
    return str(value)[:MAX_TEXT]


def _extreme_sql(func: str, column_sql: str, type_name: str) -> str:
    """min/max of a column; TIMESTAMPTZ as the UTC wall-clock TIMESTAMP.

    Fetching a TIMESTAMPTZ into Python needs pytz (not a dependency) and would show
    the server's time zone; the UTC TIMESTAMP is exact and `_extreme` adds the Z.
    """
    if type_name == TIMESTAMPTZ:
        return f"timezone('UTC', {func}({column_sql}))"
    return f"{func}({column_sql})"


def _extreme(value: Any, type_name: str) -> Any:
    out = plain(value)
    return out + "Z" if type_name == TIMESTAMPTZ and isinstance(out, str) else out


EXACT_DISTINCT_MAX_ROWS = 200_000
SINGLE_PASS_MAX_COLUMNS = 4
_PLACEHOLDER = 1234.5  # a typical 4-significant-digit value; trim_profile catches wider ones


def _has_min_max(type_name: str) -> bool:
    return is_numeric(type_name) or is_temporal(type_name) or type_name in ("VARCHAR", "BOOLEAN", "TIME", "UUID")


def _is_non_finite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def _column_entry(
    type_name: str, row_count: int, non_null: int, lo: Any, hi: Any, non_finite: list[str]
) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": type_name}
    if _has_min_max(type_name):
        entry["min"], entry["max"] = _extreme(lo, type_name), _extreme(hi, type_name)
        non_finite += [stat for stat, value in (("min", lo), ("max", hi)) if _is_non_finite(value)]
    entry["null_rate"] = round((row_count - non_null) / row_count, 4) if row_count else 0
    return entry


def _placeholder(entry: dict[str, Any], row_count: int) -> dict[str, Any]:
    """The entry as it will look once the expensive statistics are in (worst-case widths)."""
    full = dict(entry)
    if is_numeric(entry["type"]):
        full.update(mean=_PLACEHOLDER, median=_PLACEHOLDER, std=_PLACEHOLDER)
    if "min" in entry:
        full["distinct_count"] = row_count
    return full


ID_NAME = re.compile(r"(^|_)(id|key|uuid|idx|index)$|^.+(Id|ID|Key)$")


def usefulness(name: str, type_name: str) -> int:
    """Rank of a column for the size budget (lower is kept first).

    Users profile data for its measures (pace, heart rate, cadence...); identifiers,
    keys and timestamps say little in a profile (the date range is reported on its
    own), so they are the first to go: numeric measures 0, other values (text,
    booleans) 1, dates and timestamps 2, ids and keys 3.
    """
    if ID_NAME.search(name) or type_name == "UUID":
        return 3
    if is_temporal(type_name) or type_name in ("TIME", "INTERVAL"):
        return 2
    return 0 if is_numeric(type_name) else 1


def by_usefulness(columns: list[tuple[str, str]]) -> list[str]:
    """Column names, most useful first; ties keep the source order."""
    ranked = sorted(enumerate(columns), key=lambda item: (usefulness(*item[1]), item[0]))
    return [name for _, (name, _) in ranked]


def _omitted_warning(dropped: list[str], max_bytes: int) -> str:
    why = f"{len(dropped)} column(s) omitted to fit {max_bytes} bytes (ids, keys and timestamps go first)"
    asked = json.dumps(dropped, ensure_ascii=False)
    if len(asked) > max_bytes // 3:
        return f"{why}. Profile the others a few at a time with columns=[...] (names in analytics://schema)."
    return f"{why}; profile them with columns={asked}."


def fit_columns(
    base: dict[str, Any],
    entries: dict[str, dict[str, Any]],
    priority: list[str],
    max_bytes: int,
    omitted: list[str] | None = None,
) -> tuple[list[str], list[str]]:
    """The columns kept (in `entries` order) and the warnings: drop the least useful until the JSON fits.

    `omitted` names columns left out earlier; the warning lists them first.
    """
    for keep in range(len(priority), -1, -1):
        kept = set(priority[:keep])
        dropped = [*(omitted or []), *priority[keep:]]
        warnings = [*base["warnings"], _omitted_warning(dropped, max_bytes)] if dropped else base["warnings"]
        columns = {n: e for n, e in entries.items() if n in kept}
        if json_size(dict(base, columns=columns, warnings=warnings)) <= max_bytes:
            return list(columns), warnings
    return [], [*base["warnings"], "All column statistics omitted (size limit)."]


def compute_profile(
    con: SqlConnection,
    source: Source,
    *,
    max_bytes: int = PROFILE_MAX_BYTES,
    columns: list[str] | None = None,
) -> dict[str, Any]:
    """Cheap statistics for every column, expensive ones only for columns that fit.

    Pass 1 gets the row count, date range, null counts and min/max. From those the
    budget decides which columns fit (sizing each with placeholder values), and pass 2
    computes mean/median/std/distinct for just those, so no work is thrown away.
    A query with few columns (all of which fit anyway) is scanned once instead, since
    re-running a query costs more than the statistics.
    `distinct_count` is exact up to EXACT_DISTINCT_MAX_ROWS rows and may be a
    HyperLogLog estimate above (a warning says so). std is the sample standard deviation.
    Statistics that are not finite (NaN, ±Infinity, or an overflow of the double range)
    have no JSON form: they are null, and a warning names the column and statistics.
    """
    chosen = _select_columns(source, columns)
    # Explicitly requested columns keep the caller's order of importance.
    priority = [name for name, _ in chosen] if columns else by_usefulness(chosen)
    single_pass = source.kind == "query" and len(chosen) <= SINGLE_PASS_MAX_COLUMNS
    exprs = ["count(*)"]
    date_type = (source.column_type(source.date_column) or "") if source.date_column else ""
    if source.date_column:
        d = quote_ident(source.date_column)
        exprs += [_extreme_sql("min", d, date_type), _extreme_sql("max", d, date_type)]
    for name, type_name in chosen:
        c = quote_ident(name)
        exprs.append(f"count({c})")
        if _has_min_max(type_name):
            exprs += [_extreme_sql("min", c, type_name), _extreme_sql("max", c, type_name)]
    plan: list[tuple[str, list[str]]] = []
    if single_pass:
        more, plan = _expensive_plan(chosen, approx=False)
        exprs += more
    values = iter(con.execute(f"SELECT {', '.join(exprs)} FROM {source.from_sql} AS s").fetchall()[0])
    row_count = int(next(values))
    date_range = None
    if source.date_column:
        first, last = next(values), next(values)
        date_range = [_extreme(first, date_type), _extreme(last, date_type)] if first is not None else None
    entries: dict[str, dict[str, Any]] = {}
    non_finite: dict[str, list[str]] = {name: [] for name, _ in chosen}
    for name, type_name in chosen:
        non_null = int(next(values))
        lo, hi = (next(values), next(values)) if _has_min_max(type_name) else (None, None)
        entries[name] = _column_entry(type_name, row_count, non_null, lo, hi, non_finite[name])
    approx = row_count > EXACT_DISTINCT_MAX_ROWS and not single_pass
    base: dict[str, Any] = {
        "source": source.name if source.kind == "table" else "query",
        "row_count": row_count,
        "date_column": source.date_column,
        "date_range": date_range,
        "columns": {},
        "warnings": [f"distinct_count is a HyperLogLog estimate (over {EXACT_DISTINCT_MAX_ROWS:,} rows)."]
        if approx
        else [],
    }
    if single_pass:
        _apply_expensive(values, plan, entries, non_finite)
        warnings = [*base["warnings"], *_non_finite_warning(non_finite, entries)]
        return trim_profile(dict(base, columns=entries, warnings=warnings), max_bytes, priority)
    placeholders = {n: _placeholder(e, row_count) for n, e in entries.items()}
    kept, _ = fit_columns(base, placeholders, priority, max_bytes)
    kept_entries = {n: entries[n] for n in kept}
    more, plan = _expensive_plan([(n, entries[n]["type"]) for n in kept], approx)
    if more:
        values = iter(con.execute(f"SELECT {', '.join(more)} FROM {source.from_sql} AS s").fetchall()[0])
        _apply_expensive(values, plan, kept_entries, non_finite)
    warnings = [*base["warnings"], *_non_finite_warning(non_finite, kept_entries)]
    omitted = [n for n in priority if n not in kept_entries]
    return trim_profile(dict(base, columns=kept_entries, warnings=warnings), max_bytes, priority, omitted)


def _non_finite_warning(non_finite: dict[str, list[str]], kept: dict[str, Any]) -> list[str]:
    """One warning naming the statistics reported as null because they are NaN or infinite."""
    parts = [f"{name} ({', '.join(stats)})" for name, stats in non_finite.items() if stats and name in kept]
    if not parts:
        return []
    return [
        "Not finite (NaN, Infinity or beyond the double range), reported as null: "
        + "; ".join(parts)
        + ". Filter with WHERE isfinite(col) to profile the finite values."
    ]


def _select_columns(source: Source, columns: list[str] | None) -> list[tuple[str, str]]:
    if not columns:
        return list(source.columns)
    types = dict(source.columns)
    found = {c: source.find_column(c) for c in columns}
    missing = [c for c, name in found.items() if name is None]
    if missing:
        raise InvalidInputError(f"No column(s) {', '.join(missing)} in the source. Columns: {', '.join(types)}.")
    names = [name for name in found.values() if name is not None]
    return [(name, types[name]) for name in dict.fromkeys(names)]


def _expensive_plan(columns: list[tuple[str, str]], approx: bool) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """SQL for mean/median/std/distinct_count of `columns`, and how to read the results back."""
    exprs: list[str] = []
    plan: list[tuple[str, list[str]]] = []
    for name, type_name in columns:
        c = quote_ident(name)
        stats: list[str] = []
        if is_numeric(type_name):
            # Everything in DOUBLE: 128-bit integers (HUGEINT/UHUGEINT) would overflow sums
            # and median interpolation in their own type; stddev_samp is DuckDB's stable
            # one-pass (Welford) estimate, exact for data on a large offset (1e9 + {0, 1}).
            x = f"CAST({c} AS DOUBLE)"
            exprs += [f"avg({x})", f"median({x})", f"stddev_samp({x})"]
            stats += ["mean", "median", "std"]
        if _has_min_max(type_name):
            exprs.append(f"approx_count_distinct({c})" if approx else f"count(DISTINCT {c})")
            stats.append("distinct_count")
        plan.append((name, stats))
    return exprs, plan


def _apply_expensive(
    values: Any,
    plan: list[tuple[str, list[str]]],
    entries: dict[str, dict[str, Any]],
    non_finite: dict[str, list[str]],
) -> None:
    """Fill mean/median/std/distinct_count into `entries`, keeping a stable key order.

    Non-finite results become None and are recorded in `non_finite[name]`.
    """
    for name, stats in plan:
        got = {s: next(values) for s in stats}
        entry = entries[name]
        for stat in ("mean", "median", "std"):
            if stat in got:
                value = got[stat]
                entry[stat] = None if value is None else round_sig(float(value))
                if value is not None and entry[stat] is None:
                    non_finite[name].append(stat)
        if "distinct_count" in got:
            entry["distinct_count"] = int(got["distinct_count"])
        keys: tuple[str, ...] = ("type", "min", "max", "mean", "median", "std")
        ordered: dict[str, Any] = {k: entry[k] for k in keys if k in entry}
        ordered.update({k: v for k, v in entry.items() if k not in ordered})
        entries[name] = ordered


def trim_profile(
    result: dict[str, Any], max_bytes: int, priority: list[str] | None = None, omitted: list[str] | None = None
) -> dict[str, Any]:
    """Drop the least useful columns (`priority`: most useful first) until the JSON fits; a warning names them
    and the `omitted` ones left out before."""
    if json_size(result) <= max_bytes and not omitted:
        return result
    entries = result["columns"]
    order = [n for n in (priority or list(entries)) if n in entries]
    kept, warnings = fit_columns(result, entries, order, max_bytes, omitted)
    return dict(result, columns={n: entries[n] for n in kept}, warnings=warnings)
