"""Use case 2: form-anomaly drill-down ("look at 30 s around where ground-contact time spiked").

LLM: export a small list of candidate spikes (aggregated in SQL), then export the +-30 s window
around the largest one.  Code: correlate GCT with pace / heart rate / elevation in the window,
scatter plot.  LLM: receives statistics + chart path and proposes a cause.
Run: python examples/analytics/anomaly_drilldown.py
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import polars as pl
from _common import Session

from handlers.analytics.client import safe_json_output, safe_load_export, safe_summary_table

SPIKES = """
WITH t AS (
  SELECT activity_id, elapsed_s, ground_contact_time_ms AS gct,
         avg(ground_contact_time_ms) OVER (PARTITION BY activity_id ORDER BY elapsed_s
                                           ROWS BETWEEN 60 PRECEDING AND 60 FOLLOWING) AS baseline
  FROM time_series_metrics WHERE activity_id BETWEEN 10001 AND 10010)
SELECT activity_id, min(elapsed_s) AS start_s, count(*) AS seconds, round(max(gct - baseline), 1) AS excess_ms
FROM (SELECT *, elapsed_s - row_number() OVER (PARTITION BY activity_id ORDER BY elapsed_s) AS grp
      FROM t WHERE gct > baseline + 30)
GROUP BY activity_id, grp HAVING count(*) >= 5 ORDER BY excess_ms DESC
"""


def main() -> None:
    s = Session()
    try:
        candidates = s.call("export", {"query": SPIKES, "max_rows": 500})
        spikes = safe_load_export(candidates["handle"], max_rows=500, exports_dir=s.exports_dir)
        s.show(safe_summary_table(spikes, max_rows=4))
        top = spikes.row(0, named=True)
        lo, hi = top["start_s"] - 30, top["start_s"] + top["seconds"] + 30
        window = s.call(
            "export",
            {
                "query": (
                    "SELECT elapsed_s, ground_contact_time_ms, pace_s_per_km, heart_rate, elevation_m, cadence_spm "
                    f"FROM time_series_metrics WHERE activity_id = {top['activity_id']} "
                    f"AND elapsed_s BETWEEN {lo} AND {hi} ORDER BY elapsed_s"
                )
            },
        )
        df = safe_load_export(window["handle"], exports_dir=s.exports_dir)
        df = df.with_columns(pl.col("elevation_m").diff().fill_null(0).alias("climb_m_per_s"))
        inside = df.filter(pl.col("elapsed_s").is_between(top["start_s"], top["start_s"] + top["seconds"] - 1))
        outside = df.filter(~pl.col("elapsed_s").is_between(top["start_s"], top["start_s"] + top["seconds"] - 1))
        corr = {
            c: round(float(df.select(pl.corr("ground_contact_time_ms", c)).item() or 0), 2)
            for c in ("pace_s_per_km", "heart_rate", "climb_m_per_s", "cadence_spm")
        }
        chart = s.charts / "gct_anomaly.png"
        fig, ax = plt.subplots(figsize=(5, 4))
        ax.scatter(df["pace_s_per_km"], df["ground_contact_time_ms"], c=df["elapsed_s"], s=12)
        ax.set_xlabel("pace s/km")
        ax.set_ylabel("GCT ms")
        fig.savefig(chart, dpi=80)
        plt.close(fig)
        s.show(
            safe_json_output(
                {
                    "activity_id": top["activity_id"],
                    "spike": {"start_s": top["start_s"], "seconds": top["seconds"], "excess_ms": top["excess_ms"]},
                    "gct_ms": {
                        "inside": round(float(inside["ground_contact_time_ms"].mean()), 1),
                        "around": round(float(outside["ground_contact_time_ms"].mean()), 1),
                    },
                    "pace_change_s_per_km": round(
                        float(inside["pace_s_per_km"].mean() - outside["pace_s_per_km"].mean()), 1
                    ),
                    "corr_with_gct": corr,
                    "chart": str(chart),
                }
            )
        )
        s.report(df.to_dicts() + spikes.to_dicts())
    finally:
        s.close()


if __name__ == "__main__":
    main()
