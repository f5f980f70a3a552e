"""Use case 1: per-second interval analysis ("analyse pace changes second by second in 15:00-25:00").

LLM: export(time range) -> handle.  Code: load, 10 s rolling mean, split into hard reps and
jogs, chart.  LLM: receives a ~10-line summary + chart path and interprets it.
Run: python examples/analytics/interval_analysis.py
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import polars as pl
from _common import Session

from handlers.analytics.client import safe_json_output, safe_load_export, validate_output


def main() -> None:
    s = Session()
    try:
        # PLAN/EXPORT (LLM): pick the first interval session, export 10 minutes of per-second data.
        meta = s.call(
            "export",
            {
                "query": (
                    "SELECT t.elapsed_s, t.pace_s_per_km, t.heart_rate FROM time_series_metrics t "
                    "WHERE t.activity_id = (SELECT min(activity_id) FROM activities WHERE activity_type = 'intervals') "
                    "AND t.elapsed_s BETWEEN 900 AND 1499 ORDER BY t.elapsed_s"
                )
            },
        )
        # CODE: load under the row limit, smooth, segment.
        df = safe_load_export(meta["handle"], max_rows=10_000, exports_dir=s.exports_dir)
        df = df.with_columns(pl.col("pace_s_per_km").rolling_mean(10, min_samples=1).alias("pace_10s"))
        df = df.with_columns((pl.col("pace_10s") < 320).alias("hard"))
        df = df.with_columns((pl.col("hard") != pl.col("hard").shift(1)).fill_null(True).cum_sum().alias("segment"))
        segments = (
            df.group_by("segment", maintain_order=True)
            .agg(
                pl.col("hard").first(),
                pl.len().alias("seconds"),
                pl.col("pace_s_per_km").mean().alias("pace"),
                pl.col("heart_rate").max().alias("hr_max"),
            )
            .filter(pl.col("seconds") >= 30)
        )
        hard = segments.filter(pl.col("hard"))
        jog = segments.filter(~pl.col("hard"))
        chart = s.charts / "interval_pace.png"
        fig, ax = plt.subplots(figsize=(8, 3))
        ax.plot(df["elapsed_s"], df["pace_s_per_km"], lw=0.5, alpha=0.5, label="1 s")
        ax.plot(df["elapsed_s"], df["pace_10s"], lw=1.5, label="10 s rolling")
        ax.invert_yaxis()
        ax.set_xlabel("elapsed s")
        ax.set_ylabel("pace s/km")
        ax.legend()
        fig.savefig(chart, dpi=80)
        plt.close(fig)
        summary = {
            "window": "15:00-25:00",
            "reps": hard.height,
            "rep_pace_s_per_km": [round(p, 1) for p in hard["pace"].to_list()],
            "jog_pace_mean": round(float(jog["pace"].mean() or 0), 1),
            "rep_hr_max": hard["hr_max"].to_list(),
            "pace_std_within_reps": round(float(df.filter(pl.col("hard"))["pace_s_per_km"].std() or 0), 1),
            "max_deviation_from_10s_mean": round(float((df["pace_s_per_km"] - df["pace_10s"]).abs().max() or 0), 1),
            "chart": str(chart),
        }
        # RESULT: validated small JSON goes back to the LLM.
        text = safe_json_output(summary)
        assert validate_output(text) == (True, None)
        s.show(text)
        s.report(df.select("elapsed_s", "pace_s_per_km", "heart_rate").to_dicts())
    finally:
        s.close()


if __name__ == "__main__":
    main()
