"""Use case 4: this month's pace distribution ("show me my running pace distribution for March").

LLM: histogram(table='splits', column='pace_s_per_km', date_range) -> 10-20 bins, no raw data.
The LLM explains the distribution from the bins alone; no export, no code needed.
Run: python examples/analytics/pace_histogram.py
"""

from __future__ import annotations

from _common import Session

from handlers.analytics.client import safe_json_output, safe_load_export


def fmt(seconds: float) -> str:
    return f"{int(seconds // 60)}:{round(seconds % 60):02d}"


def main() -> None:
    s = Session()
    try:
        march = ["2025-03-01", "2025-03-31"]
        h = s.call(
            "histogram", {"table_or_query": "splits", "column": "pace_s_per_km", "bins": 12, "date_range": march}
        )
        mode = max(h["bins"], key=lambda b: b["count"])
        binned = h["total_count"] - h["null_count"]
        under_5 = sum(b["count"] for b in h["bins"] if b["max"] <= 300)
        s.show(
            safe_json_output(
                {
                    "splits": binned,
                    "range": f"{fmt(h['min'])}-{fmt(h['max'])} /km",
                    "most_common": f"{fmt(mode['min'])}-{fmt(mode['max'])} /km ({mode['count']} splits)",
                    "share_faster_than_5_00": round(under_5 / binned, 2),
                    "bars": "".join(" ▁▂▃▄▅▆▇█"[min(8, round(8 * b["count"] / mode["count"]))] for b in h["bins"]),
                }
            )
        )
        # Only to measure the alternative: the raw split rows the LLM would otherwise have read.
        raw = s.service.export(
            {"query": "SELECT * FROM splits WHERE start_time >= DATE '2025-03-01' AND start_time < DATE '2025-04-01'"}
        )
        s.report(safe_load_export(raw["handle"], exports_dir=s.exports_dir).to_dicts())
    finally:
        s.close()


if __name__ == "__main__":
    main()
