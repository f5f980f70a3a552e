"""yana search quality and speed on the bundled KB: recall@5 and MRR over the graded relevance set, p95.

Run: .venv/bin/python -m bench.yana_search_bench   (targets: recall@5 >= 0.9, MRR >= 0.8, p95 <= 20 ms)

The relevance set is tests/yana/relevance.json (kana variants, kanji forms, readings, names,
styles, conversational questions; grade 2 = asked for, 1 = fair). "before" is the search of
commit YANA_SEARCH_BASELINE (default 6249b52, substring trigram search without readings),
exported with `git archive` and run in a subprocess against the same relevance set.

* recall@5: per query, relevant labels in the top 5 / min(5, number of relevant labels);
* MRR: per query, 1 / rank of the first relevant label (0 if none in the top 10);
* p95: handler latency of the relevance queries (each run 5 times, after one warm-up pass).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RELEVANCE = REPO / "tests" / "yana" / "relevance.json"
BASELINE = os.environ.get("YANA_SEARCH_BASELINE", "6249b52")


def _open(root: Path, tmp: Path) -> tuple[Callable[[str], list[str]], Callable[[], None]]:
    """The search of the checkout under `root` as (query → the ids of its top 10, close). An older
    checkout (the baseline) has no ServiceSetup: its `create(settings, env)` takes and returns dicts."""
    from handlers.yana import create
    from kumitate.context import CallContext
    from kumitate.settings import Settings

    ctx = CallContext(service="yana", tool="bench", transport="bench", run_id="bench", trace_id="bench")
    try:
        from generated.yana.models import SearchInput
        from kumitate.service import ServiceSetup
    except ImportError:
        settings = Settings(data_dir=tmp, sample_dir=root / "data", public_base_url="http://127.0.0.1:8000")
        old: Any = create(settings, env={})  # type: ignore[call-arg,arg-type]
        return lambda q: [h["id"] for h in old.search({"query_text": q, "k": 10}, ctx)["hits"]], lambda: None
    setup = ServiceSetup.open("yana", Settings.from_env({}, data_dir=tmp, sample_dir=root / "data"))
    yana = create(setup)
    return lambda q: [h.id for h in yana.search(SearchInput(query_text=q, k=10), ctx).hits], setup.close


def evaluate(root: Path) -> dict[str, float]:
    """Metrics of the search code under `root` (imported from there) over the relevance set."""
    sys.path.insert(0, str(root))
    queries = json.loads(RELEVANCE.read_text(encoding="utf-8"))["queries"]
    with tempfile.TemporaryDirectory() as tmp:
        search, close = _open(root, Path(tmp))
        recalls, reciprocal, times = [], [], []
        misses: list[str] = []
        for rnd in range(6):
            for q in queries:
                started = time.perf_counter()
                hits = search(q["query"])
                if rnd:
                    times.append((time.perf_counter() - started) * 1000)
                    continue
                relevant = q["relevant"]
                found = sum(1 for h in hits[:5] if h in relevant)
                recalls.append(found / min(5, len(relevant)))
                rank = next((i for i, h in enumerate(hits, start=1) if h in relevant), None)
                reciprocal.append(1 / rank if rank else 0.0)
                if found < min(5, len(relevant)) or rank != 1:
                    misses.append(q["query"])
        close()
    ordered = sorted(times)
    return {
        "queries": len(queries),
        "recall_at_5": round(statistics.mean(recalls), 3),
        "mrr": round(statistics.mean(reciprocal), 3),
        "p50_ms": round(statistics.median(times), 2),
        "p95_ms": round(ordered[round(0.95 * (len(ordered) - 1))], 2),
        "misses": misses,  # type: ignore[dict-item]
    }


def _run(root: Path) -> dict[str, float] | None:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.yana_search_bench", "--evaluate", str(root)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        print(proc.stderr[-1500:], file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _baseline() -> dict[str, float] | None:
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "base.tar"
        made = subprocess.run(
            ["git", "archive", "--format=tar", "-o", str(archive), BASELINE], cwd=REPO, capture_output=True, check=False
        )
        if made.returncode != 0:
            return None
        with tarfile.open(archive) as tar:
            tar.extractall(Path(tmp) / "base", filter="data")
        return _run(Path(tmp) / "base")


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--evaluate":
        print(json.dumps(evaluate(Path(sys.argv[2]))))
        return 0
    after = _run(REPO)
    before = _baseline()
    if after is None:
        return 1
    n = after["queries"]
    print(f"Relevance set: {n} graded queries (tests/yana/relevance.json); k = 10; handler calls, bundled KB.\n")
    print("| search | recall@5 | MRR | p50 ms | p95 ms |")
    print("|---|---:|---:|---:|---:|")
    rows = [(f"before ({BASELINE}: trigram substrings)", before), ("after (SudachiPy readings + field ranking)", after)]
    for name, m in rows:
        if m is None:
            print(f"| {name} | n/a | n/a | n/a | n/a |")
            continue
        print(f"| {name} | {m['recall_at_5']:.3f} | {m['mrr']:.3f} | {m['p50_ms']:.2f} | {m['p95_ms']:.2f} |")
    print(f"\nTargets: recall@5 >= 0.9, MRR >= 0.8, p95 <= 20 ms. Imperfect queries after: {after['misses'] or 'none'}")
    return 0 if after["recall_at_5"] >= 0.9 and after["mrr"] >= 0.8 and after["p95_ms"] <= 20 else 1


if __name__ == "__main__":
    sys.exit(main())
