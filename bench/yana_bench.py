"""yana speed figures: search p50/p95 over a few hundred queries, chat (template) p95, first-start load.

Run: .venv/bin/python bench/yana_bench.py   (prints a Markdown table; targets: search p95 < 2000 ms,
chat template p95 < 12000 ms, both far below in practice). Uses a temporary state directory.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from generated.yana.models import ChatInput, SearchInput  # noqa: E402
from handlers.yana import create  # noqa: E402
from kumitate.context import CallContext  # noqa: E402
from kumitate.service import ServiceSetup  # noqa: E402
from kumitate.settings import Settings  # noqa: E402


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main() -> None:
    labels = json.loads((REPO / "data/yana/labels.json").read_text(encoding="utf-8"))["labels"]
    queries: list[dict] = []
    for i, label in enumerate(labels):
        queries.append({"query_text": label["brand_name"], "k": 10})
        if i % 2 == 0:
            queries.append({"query_text": f"{label['region'][:3]}の{label['label_features'][0]}", "k": 10})
        if i % 3 == 0:
            queries.append({"query_text": f"{label['brand_name']}ってどんなお酒？", "k": 5, "page": 1, "page_size": 5})
    queries += [{"query_text": "", "filters": {"category": "juice"}, "k": 20}, {"query_text": "純米", "k": 20}]
    with tempfile.TemporaryDirectory() as tmp:
        setup = ServiceSetup.open("yana", Settings.from_env({}, data_dir=Path(tmp), sample_dir=REPO / "data"))
        started = time.perf_counter()
        yana = create(setup)
        load_ms = (time.perf_counter() - started) * 1000
        ctx = CallContext(service="yana", tool="bench", transport="bench", run_id="bench", trace_id="bench")
        search_ms = []
        for q in queries:
            t = time.perf_counter()
            yana.search(SearchInput.model_validate(q), ctx)
            search_ms.append((time.perf_counter() - t) * 1000)
        chat_ms = []
        for label in labels:
            t = time.perf_counter()
            yana.chat(ChatInput(user_text=f"{label['brand_name']}について教えて", top_k=5), ctx)
            chat_ms.append((time.perf_counter() - t) * 1000)
        setup.close()
    print("| measure | n | p50 ms | p95 ms | max ms |")
    print("|---|---:|---:|---:|---:|")
    print(f"| first start (create DB, load {len(labels)} labels + hashes) | 1 | {load_ms:.0f} | | |")
    for name, values in (("search (handler)", search_ms), ("chat, template mode (handler)", chat_ms)):
        print(
            f"| {name} | {len(values)} | {statistics.median(values):.2f} | {pct(values, 95):.2f} | {max(values):.2f} |"
        )


if __name__ == "__main__":
    main()
