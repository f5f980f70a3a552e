"""household benchmark: import, trend, duplicate detection (vs a pairwise baseline), chart rendering.

    .venv/bin/python bench/household_bench.py

Prints a Markdown table. Targets: import 100k rows < 3 s, 5-year trend < 100 ms,
duplicate detection over 100k transactions < 2 s, chart render < 1 s.
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from handlers.household import create  # noqa: E402
from handlers.household.duplicates import Options, find_candidates, find_candidates_pairwise  # noqa: E402
from handlers.household.dupstore import load_items  # noqa: E402
from kumitate.context import CallContext  # noqa: E402
from kumitate.settings import Settings  # noqa: E402

spec = importlib.util.spec_from_file_location("hh_generate", ROOT / "data" / "household" / "generate.py")
assert spec and spec.loader
generate_mod = importlib.util.module_from_spec(spec)
sys.modules["hh_generate"] = generate_mod
spec.loader.exec_module(generate_mod)

ROWS: list[tuple[str, str, str, str]] = []


def timed(fn, repeat: int = 1) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def add(what: str, measured: str, target: str, ok: bool | None = None) -> None:
    ROWS.append((what, measured, target, "" if ok is None else ("yes" if ok else "NO")))


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="household_bench_"))
    exports = tmp / "exports"
    generate_mod.generate(exports, start="2020-01", end="2024-12", seed=1, scale=34.0)
    empty_samples = tmp / "samples"
    (empty_samples / "household").mkdir(parents=True)
    settings = Settings(data_dir=tmp / "var", sample_dir=empty_samples, public_base_url="http://127.0.0.1:8000")
    ctx = CallContext(service="household", tool="bench", transport="bench", run_id="b", trace_id="b")

    seconds, svc = timed(lambda: create(settings, env={"HOUSEHOLD_DATA_DIR": str(exports)}))
    report = svc.core.startup_report  # type: ignore[attr-defined]
    n = report["total_imported"]
    add(f"import {n:,} rows / {report['files_processed']} files (fresh DB)", f"{seconds:.2f} s", "< 3 s", seconds < 3)
    seconds, again = timed(lambda: svc.import_household_data({}, ctx))  # type: ignore[attr-defined]
    add(f"re-import (idempotent: {again['total_imported']} new)", f"{seconds:.2f} s", "", None)

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
        f"detect_duplicates, ±2 days ±100 yen ({det2['candidates_count']:,} pairs)",
        f"{seconds:.2f} s",
        "< 2 s",
        seconds < 2,
    )

    with svc.core.db.connect() as con:  # type: ignore[attr-defined]
        items = load_items(con, None)
    opts = Options()
    seconds, _ = timed(lambda: find_candidates(items, opts))
    add(f"search only (sort + window), {len(items):,} tx", f"{seconds * 1000:.0f} ms", "", None)
    subset = items[:: max(1, len(items) // 4000)][:4000]
    base_s, base = timed(lambda: find_candidates_pairwise(subset, opts))
    win_s, win = timed(lambda: find_candidates(subset, opts))
    assert base == win, "window search must equal the pairwise baseline"
    factor = (len(items) / len(subset)) ** 2
    add(
        f"pairwise baseline on a {len(subset):,}-tx subset (same result as window: {len(win)} pairs)",
        f"{base_s:.2f} s (window {win_s * 1000:.0f} ms)",
        "",
        None,
    )
    add(
        f"pairwise baseline extrapolated to {len(items):,} tx (× {factor:.0f}, O(n²))",
        f"≈ {base_s * factor:.0f} s",
        f"window is ≈ {base_s * factor / max(seconds, 1e-9):.0f}× faster",
        None,
    )

    seconds, _ = timed(
        lambda: svc.get_monthly_household(  # type: ignore[attr-defined]
            {"year": 2024, "month": 6, "output_format": "image", "graph_type": "pie"}, ctx
        )
    )
    add(
        "first chart (pie 800x600, includes matplotlib import + font load)",
        f"{seconds * 1000:.0f} ms",
        "< 1 s",
        seconds < 1,
    )
    for graph, args in [("pie", {"year": 2024, "month": 7}), ("bar", {"year": 2024, "month": 7})]:
        seconds, _ = timed(
            lambda a=args, g=graph: svc.get_monthly_household(  # type: ignore[attr-defined]
                {**a, "output_format": "image", "graph_type": g}, ctx
            ),
            repeat=3,
        )
        add(
            f"monthly chart {graph} 800x600 (median of 3, incl. query)",
            f"{seconds * 1000:.0f} ms",
            "< 1 s",
            seconds < 1,
        )
    for graph in ["line", "area"]:
        seconds, _ = timed(
            lambda g=graph: svc.get_category_trend(  # type: ignore[attr-defined]
                {**top3, "output_format": "image", "graph_type": g, "image_size": "1920x1080"}, ctx
            ),
            repeat=3,
        )
        add(
            f"trend chart {graph} 1920x1080, 60 months × 3 (median of 3)",
            f"{seconds * 1000:.0f} ms",
            "< 1 s",
            seconds < 1,
        )

    print(f"household bench — {n:,} generated rows, Python {sys.version.split()[0]}\n")
    print("| what | measured | target | met |")
    print("|---|---|---|---|")
    for row in ROWS:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
