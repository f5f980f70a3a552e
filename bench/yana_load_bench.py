"""Seed 001's bounded load run: 2 parallel duo conversations × 6–20 turns through the SpeakerProvider
(HTTP mode) against a real yana server on loopback. Records throughput and failure rate.

Run: python -m bench.yana_load_bench   (template provider: no LLM configured)
"""

from __future__ import annotations

import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

from handlers.yana.client import SpeakerConfig, YanaSpeaker
from tests.conftest import start_server, stop_server

PROMPTS = [
    "獺祭ってどんなお酒？",
    "十四代の蔵はどこ？",
    "新潟のお酒を教えて",
    "りんごジュースのおすすめは？",
    "辛口が好きなんやけど",
    "八海山はどう？",
    "山口のお酒ある？",
    "純米大吟醸って何が違うん？",
    "黒龍の話して",
    "みかんジュースある？",
]


def conversation(config: SpeakerConfig, turns: int, seed: int, out: list[tuple[float, bool, int]]) -> None:
    rng = random.Random(seed)
    speaker = YanaSpeaker(config.build_client(), config)
    for turn in range(turns):
        started = time.perf_counter()
        text, meta = speaker.generate(
            rng.choice(PROMPTS), run_id=f"load-{seed}-{turn}", top_k=3, filters={}, timeout_ms=12000
        )
        out.append(
            (time.perf_counter() - started, bool(text) and "fallback" not in meta and "skipped" not in meta, len(text))
        )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp) / "var", Path(tmp) / "server.log")
        try:
            rows = []
            for turns in (6, 12, 20):
                time.sleep(10)  # let the 5 rps / burst 50 bucket (one per client address) refill between runs
                results: list[tuple[float, bool, int]] = []
                config = SpeakerConfig(mode="http", http_base=server.url)
                threads = [
                    threading.Thread(target=conversation, args=(config, turns, seed, results)) for seed in (1, 2)
                ]
                started = time.perf_counter()
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                wall = time.perf_counter() - started
                latencies = sorted(r[0] * 1000 for r in results)
                failures = sum(not ok for _, ok, _ in results)
                rows.append(
                    (
                        turns,
                        len(results),
                        len(results) / wall,
                        failures / len(results),
                        statistics.median(latencies),
                        latencies[int(0.95 * (len(latencies) - 1))],
                    )
                )
        finally:
            stop_server(server)
    print("2 parallel conversations through SpeakerProvider (HTTP) → yana /v1/chat, template provider, loopback;")
    print("yana's declared rate limit (5 rps, burst 50) applies, so each run starts with a full bucket.\n")
    print("| turns × conversations | turns | throughput (turns/s) | failure rate | p50 ms | p95 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for turns, n, tput, fail, p50, p95 in rows:
        print(f"| {turns} × 2 | {n} | {tput:.1f} | {fail:.1%} | {p50:.1f} | {p95:.1f} |")


if __name__ == "__main__":
    main()
