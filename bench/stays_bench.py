"""Benchmark of summarize_stays on 100,000 records: handler time, median of several runs.

Target: the handler (per-record validation + summary) under 300 ms for 100,000 records.
Run: .venv/bin/python bench/stays_bench.py   (prints a Markdown table)
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generated.stays.models import SummarizeStaysInput  # noqa: E402
from handlers.stays import create  # noqa: E402
from handlers.stays.core import summarize  # noqa: E402
from kumitate.context import CallContext  # noqa: E402
from kumitate.service import ServiceSetup  # noqa: E402
from kumitate.settings import Settings  # noqa: E402

N = 100_000
RUNS = 9
TARGET_MS = 300.0


def records(n: int = N) -> list[dict[str, Any]]:
    """Realistic mix: refs, 500 districts, +09:00 timestamps; 1% bad (no code / bad ts / bad ref)."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        hour, minute = divmod(i % 600, 60)
        record: dict[str, Any] = {
            "ref": f"day{i // 1000}-stop{i % 1000}",
            "code": f"{13100 + i % 500}",
            "name": f"地区{i % 500}",
            "start_ts": f"2024-05-01T{hour:02d}:{minute:02d}:00+09:00",
            "end_ts": f"2024-05-01T{hour + 10:02d}:{minute:02d}:30+09:00",
        }
        if i % 300 == 0:
            del record["code"]
        elif i % 300 == 100:
            record["start_ts"] = "2024-05-01"
        elif i % 300 == 200:
            record["ref"] = "has space"
        out.append(record)
    return out


def timings_ms(fn: Callable[[], object]) -> tuple[float, float]:
    """(median, best) of RUNS runs; the best shows what a quiet machine does."""
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), min(times)


def main() -> None:
    data = records()
    setup = ServiceSetup.open(
        "stays", Settings(data_dir=Path(tempfile.mkdtemp()), sample_dir=ROOT / "data", public_base_url="")
    )
    service = create(setup)
    ctx = CallContext(service="stays", tool="summarize_stays", transport="bench", run_id="b", trace_id="b")
    seq_input = {"stays": data}
    agg_input = {"stays": data, "mode": "aggregate"}

    rows = [
        ("handler, sequence (validated data in)", timings_ms(lambda: service.summarize_stays(seq_input, ctx)), True),
        ("handler, aggregate (validated data in)", timings_ms(lambda: service.summarize_stays(agg_input, ctx)), True),
        ("core only, sequence", timings_ms(lambda: summarize({"stays": data})), False),
        ("core only, aggregate", timings_ms(lambda: summarize({"stays": data, "mode": "aggregate"})), False),
        (
            "pydantic model_validate (no longer on the request path: handler_input is data)",
            timings_ms(lambda: SummarizeStaysInput.model_validate({"stays": data})),
            False,
        ),
    ]
    setup.close()
    print(f"summarize_stays, {N:,} records (1 % invalid), {RUNS} runs each, Python {sys.version.split()[0]}\n")
    print("| what | median ms | best ms | target (median) |")
    print("|---|---:|---:|---|")
    for what, (median, best), targeted in rows:
        target = (f"< {TARGET_MS:.0f} ms " + ("OK" if median < TARGET_MS else "MISSED")) if targeted else ""
        print(f"| {what} | {median:.1f} | {best:.1f} | {target} |")


if __name__ == "__main__":
    main()
