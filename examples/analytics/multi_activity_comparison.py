"""Use case 3: compare heart rate across the last five ~10 km runs.

LLM: profile() per-activity summary statistics (no rows), then export() only the heart-rate
series of those five runs.  Code: align on a normalised time axis (0-100 %), zone shares,
overlay chart.  LLM: receives a comparison table of five lines and explains the trend.
Run: python examples/analytics/multi_activity_comparison.py
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import polars as pl
from _common import Session

from handlers.analytics.client import safe_load_export, safe_summary_table, validate_output

LAST_FIVE = "SELECT activity_id FROM activities WHERE distance_km BETWEEN 9 AND 11 ORDER BY start_time DESC LIMIT 5"
ZONES = [(0, 135, "Z1-2"), (135, 155, "Z3"), (155, 170, "Z4"), (170, 250, "Z5")]


def main() -> None:
    s = Session()
    try:
        s.call(
            "profile",
            {
                "table_or_query": f"SELECT avg_hr, max_hr, avg_pace_s_per_km FROM activities "
                f"WHERE activity_id IN ({LAST_FIVE})"
            },
        )
        meta = s.call(
            "export",
            {
                "query": (
                    "SELECT activity_id, elapsed_s, heart_rate FROM time_series_metrics "
                    f"WHERE activity_id IN ({LAST_FIVE}) ORDER BY activity_id, elapsed_s"
                )
            },
        )
        df = safe_load_export(meta["handle"], max_rows=20_000, exports_dir=s.exports_dir)
        df = df.with_columns(
            (pl.col("elapsed_s") / pl.col("elapsed_s").max().over("activity_id") * 100).alias("pct"),
        ).with_columns((pl.col("pct") // 5 * 5).alias("pct_bin"))
        curves = df.group_by("activity_id", "pct_bin").agg(pl.col("heart_rate").mean()).sort("activity_id", "pct_bin")
        zone = pl.when(pl.col("heart_rate") < ZONES[0][1]).then(pl.lit(ZONES[0][2]))
        for lo, hi, name in ZONES[1:]:
            zone = zone.when(pl.col("heart_rate").is_between(lo, hi, closed="left")).then(pl.lit(name))
        shares = (
            df.drop_nulls("heart_rate")
            .with_columns(zone.alias("zone"))
            .group_by("activity_id")
            .agg(
                pl.col("heart_rate").mean().round(1).alias("hr_mean"),
                *[((pl.col("zone") == name).mean() * 100).round(0).alias(name) for _, _, name in ZONES],
                (
                    pl.col("heart_rate").filter(pl.col("pct") >= 80).mean()
                    - pl.col("heart_rate").filter(pl.col("pct") < 20).mean()
                )
                .round(1)
                .alias("drift_bpm"),
            )
            .sort("activity_id")
        )
        chart = s.charts / "hr_comparison.png"
        fig, ax = plt.subplots(figsize=(7, 3))
        for (activity_id,), part in curves.group_by("activity_id", maintain_order=True):
            ax.plot(part["pct_bin"], part["heart_rate"], label=str(activity_id))
        ax.set_xlabel("% of run")
        ax.set_ylabel("HR bpm")
        ax.legend(fontsize=7)
        fig.savefig(chart, dpi=80)
        plt.close(fig)
        table = safe_summary_table(shares)
        assert validate_output(table) == (True, None)
        s.show(table + f"\nchart: {chart}")
        s.report(df.select("activity_id", "elapsed_s", "heart_rate").to_dicts())
    finally:
        s.close()


if __name__ == "__main__":
    main()
