"""household benchmark: import, trend, duplicate detection (vs a pairwise baseline), chart rendering.

    .venv/bin/python bench/household_bench.py

Prints a Markdown table. Targets: import 100k rows < 3 s, 5-year trend < 100 ms,
duplicate detection over 100k transactions < 2 s, chart render < 1 s.

The main data set is deliberately dense (scale 34: ~1,800 rows a month, ~60 a day, so ±2 days ±100 yen
pairs up 789k candidate pairs). One extra row repeats the tolerant detection on ~100k rows at the
density of a real household book (scale 1: ~65 rows a month, spread over 128 years instead of 5).
"""

from __future__ import annotations

import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.report import print_table  # noqa: E402
from generated.household.bindings import SERVICE  # noqa: E402
from handlers.household import create as create_handlers  # noqa: E402
from handlers.household.core.detection import load_items  # noqa: E402
from handlers.household.core.duplicates import find_candidates, find_candidates_pairwise  # noqa: E402
from handlers.household.records import Options  # noqa: E402
from kumitate.context import CallContext, bound  # noqa: E402
from kumitate.service import ServiceSetup  # noqa: E402
from kumitate.settings import Settings  # noqa: E402

TOOLS = {tool.name: tool for tool in SERVICE.tools}


class Wire:
    """The service as the pipeline drives it: JSON data in (validated into the tool's input model), the output
    model dumped to JSON data out, so the figures include what every call pays for its types."""

    def __init__(self, handlers: Any) -> None:
        self.handlers, self.core = handlers, handlers.core

    def __getattr__(self, tool: str) -> Any:
        binding = TOOLS[tool]

        def call(data: dict[str, Any], ctx: CallContext) -> Any:
            with bound(ctx):  # the current call, as the pipeline sets it (chart URLs)
                out = getattr(self.handlers, tool)(binding.input_model.model_validate(data), ctx)
            return out.model_dump(mode="json", by_alias=True, exclude_unset=True)

        return call


SETUPS: list[ServiceSetup] = []


def create(var: Path, samples: Path, exports: Path) -> Wire:
    """The service with its state under `var`, no samples, importing `exports` (closed at the end of the run)."""
    (samples / "household").mkdir(parents=True, exist_ok=True)
    env = {"KUMITATE_DATA_DIR": str(var), "KUMITATE_SAMPLE_DIR": str(samples), "HOUSEHOLD_DATA_DIR": str(exports)}
    SETUPS.append(ServiceSetup.open("household", Settings.from_env(env)))
    return Wire(create_handlers(SETUPS[-1]))


spec = importlib.util.spec_from_file_location("hh_generate", ROOT / "data" / "household" / "generate.py")
assert spec and spec.loader
generate_mod = importlib.util.module_from_spec(spec)
sys.modules["hh_generate"] = generate_mod
spec.loader.exec_module(generate_mod)

ROWS: list[tuple[str, str, str, str]] = []
T = TypeVar("T")


def timed(fn: Callable[[], T], repeat: int = 1) -> tuple[float, T]:
    """The median of `repeat` timed calls of `fn`, in seconds, and the last call's result."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def add(what: str, measured: str, target: str = "", ok: bool | None = None) -> None:
    ROWS.append((what, measured, target, "" if ok is None else ("yes" if ok else "NO")))


def reexport_one_month(exports: Path) -> str:
    """Rewrite the first export as MoneyForward would after a change: a new row on top, one amount edited."""
    path = sorted(exports.glob("*.csv"))[0]
    lines = path.read_bytes().decode("cp932").splitlines(keepends=True)
    cells = lines[1].split(",")
    cells[3] = '"-1"'  # the amount of the newest row
    first = ",".join(cells)
    new = first.replace(cells[9].strip(), '"bench-new-row-id"') if len(cells) > 9 else first
    path.write_bytes("".join([lines[0], new, first, *lines[2:]]).encode("cp932"))
    return path.name.split("_")[1][:7]


def realistic_detection(tmp: Path, ctx: CallContext, fuzzy: Mapping[str, object]) -> None:
    """The tolerant detection on ~100k rows at a real household's density (scale 1, 128 years)."""
    exports = tmp / "exports_realistic"
    generate_mod.generate(exports, start="2022-01", end="2149-12", seed=2, scale=1.0)
    svc = create(tmp / "var_realistic", tmp / "samples", exports)
    seconds, det = timed(lambda: svc.detect_duplicates(fuzzy, ctx))  # type: ignore[attr-defined]
    add(
        f"detect_duplicates, ±2 days ±100 yen, realistic density: {det['checked_transactions']:,} tx at ~65/month "
        f"({det['candidates_count']:,} pairs, {det['stored_candidates']:,} stored)",
        f"{seconds:.2f} s",
        "< 2 s",
        seconds < 2,
    )


COLD_CHART = """
import sys, time
sys.path.insert(0, sys.argv[1])
t0 = time.perf_counter()
from handlers.household.core import charts
charts.png(charts.category_figure("2024年6月 支出内訳", ["食費", "住居", "交通費", "その他"], [5, 4, 3, 2], "pie", 800, 600))
print(time.perf_counter() - t0)
"""


def cold_chart_seconds() -> float:
    """First chart in a fresh interpreter: numpy + matplotlib import, font load, render (no query, no cache)."""
    out = subprocess.run([sys.executable, "-c", COLD_CHART, str(ROOT)], check=True, capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="household_bench_"))
    exports = tmp / "exports"
    generate_mod.generate(exports, start="2020-01", end="2024-12", seed=1, scale=34.0)
    ctx = SERVICE.direct_call("bench")

    seconds, svc = timed(lambda: create(tmp / "var", tmp / "samples", exports))
    report = svc.core.startup_report  # type: ignore[attr-defined]
    n = report.total_imported
    add(f"import {n:,} rows / {report.files_processed} files (fresh DB)", f"{seconds:.2f} s", "< 3 s", seconds < 3)
    seconds, again = timed(lambda: svc.import_household_data({}, ctx))  # type: ignore[attr-defined]
    add(f"re-import (idempotent: {again['total_imported']} new)", f"{seconds:.2f} s", "", None)
    month = reexport_one_month(exports)
    seconds, changed = timed(lambda: svc.import_household_data({}, ctx))  # type: ignore[attr-defined]
    add(
        f"re-import with {month} re-exported (a new row on top, one amount edited: "
        f"+{changed['total_imported']} ~{changed['total_changed']} -{changed['total_removed']})",
        f"{seconds:.2f} s",
        "",
        None,
    )

    trend_args = {"category": "食費", "start_month": "2020-01", "end_month": "2024-12"}
    seconds, _ = timed(lambda: svc.get_category_trend(trend_args, ctx), repeat=7)  # type: ignore[attr-defined]
    add("trend, one category, 60 months (median of 7)", f"{seconds * 1000:.1f} ms", "< 100 ms", seconds < 0.1)
    top3 = {"start_month": "2020-01", "end_month": "2024-12"}
    seconds, _ = timed(lambda: svc.get_category_trend(top3, ctx), repeat=7)  # type: ignore[attr-defined]
    add("trend, top 3 categories, 60 months (median of 7)", f"{seconds * 1000:.1f} ms", "< 100 ms", seconds < 0.1)

    seconds, det = timed(lambda: svc.detect_duplicates({}, ctx))  # type: ignore[attr-defined]
    add(
        f"detect_duplicates, {det['checked_transactions']:,} tx, exact (tool: load + search + store)",
        f"{seconds:.2f} s",
        "< 2 s",
        seconds < 2,
    )
    fuzzy = {"date_tolerance_days": 2, "amount_tolerance_abs": 100, "min_similarity_score": 0.8}
    seconds, det2 = timed(lambda: svc.detect_duplicates(fuzzy, ctx))  # type: ignore[attr-defined]
    add(
        f"detect_duplicates, ±2 days ±100 yen ({det2['candidates_count']:,} pairs, {det2['stored_candidates']:,} stored)",
        f"{seconds:.2f} s",
        "< 2 s",
        seconds < 2,
    )

    realistic_detection(tmp, ctx, fuzzy)

    with svc.core.store.read() as con:  # type: ignore[attr-defined]
        items = load_items(con, None)
    fuzzy_opts = Options(date_tolerance_days=2, amount_tolerance_abs=100, min_similarity_score=0.8)
    cases = [("exact", Options()), ("±2 days ±100 yen", fuzzy_opts)]
    search_s = 0.0
    for label, opts in cases:
        search_s, found = timed(partial(find_candidates, items, opts))
        add(
            f"search only (sort + window), {len(items):,} tx, {label} ({len(found):,} pairs)",
            f"{search_s * 1000:.0f} ms",
        )
    subset = items[:: max(1, len(items) // 4000)][:4000]
    factor = (len(items) / len(subset)) ** 2
    base_s = 0.0
    for label, opts in cases:
        base_s, base = timed(partial(find_candidates_pairwise, subset, opts))
        win_s, win = timed(partial(find_candidates, subset, opts))
        assert base == win, "window search must equal the pairwise baseline"
        add(
            f"pairwise baseline on a {len(subset):,}-tx subset, {label} (same result as window: {len(win)} pairs)",
            f"{base_s:.2f} s (window {win_s * 1000:.0f} ms)",
        )
    add(
        f"pairwise baseline (±2 days ±100 yen) extrapolated to {len(items):,} tx (× {factor:.0f}, O(n²))",
        f"≈ {base_s * factor:.0f} s",
        f"window is ≈ {base_s * factor / max(search_s, 1e-9):.0f}× faster",
    )

    seconds, _ = timed(
        lambda: svc.get_monthly_household(  # type: ignore[attr-defined]
            {"year": 2024, "month": 6, "output_format": "image", "graph_type": "pie"}, ctx
        )
    )
    add(
        "first chart (pie 800x600, includes matplotlib import + font load; numpy already loaded by the detection)",
        f"{seconds * 1000:.0f} ms",
        "< 1 s",
        seconds < 1,
    )
    seconds = cold_chart_seconds()
    add(
        "first chart in a fresh process (numpy + matplotlib import, font load, render; no query)",
        f"{seconds * 1000:.0f} ms",
        "< 1 s",
        seconds < 1,
    )
    for graph, args in [("pie", {"year": 2024, "month": 7}), ("bar", {"year": 2024, "month": 7})]:
        chart = {**args, "output_format": "image", "graph_type": graph}
        seconds, _ = timed(partial(svc.get_monthly_household, chart, ctx), repeat=3)  # type: ignore[attr-defined]
        add(
            f"monthly chart {graph} 800x600 (median of 3, incl. query)",
            f"{seconds * 1000:.0f} ms",
            "< 1 s",
            seconds < 1,
        )
    for graph in ["line", "area"]:
        trend = {**top3, "output_format": "image", "graph_type": graph, "image_size": "1920x1080"}
        seconds, _ = timed(partial(svc.get_category_trend, trend, ctx), repeat=3)  # type: ignore[attr-defined]
        add(
            f"trend chart {graph} 1920x1080, 60 months × 3 (median of 3)",
            f"{seconds * 1000:.0f} ms",
            "< 1 s",
            seconds < 1,
        )

    print(f"household bench — {n:,} generated rows, Python {sys.version.split()[0]}\n")
    print_table(["what", "measured", "target", "met"], ROWS)


if __name__ == "__main__":
    try:
        main()
    finally:
        for setup in SETUPS:
            setup.close()
