"""attendance benchmarks: parse throughput and evaluation of 1,000 invitees x 200 slots.

Targets: parse >= 2,000 utterances/s; evaluate 1,000 x 200 < 50 ms. Also timed: the worst
utterance we know (2,000 digits, the schema's maxLength) and 5,000 invitees.
Run: .venv/bin/python bench/attendance_bench.py  (prints a Markdown table)
"""

from __future__ import annotations

import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from handlers.attendance.core.evaluate import evaluate_attendance
from handlers.attendance.core.parse import parse_attendance_intent

INVITEES = [
    {"user_id": "1", "display_name": "山田 太郎", "reading": "やまだ たろう", "groups": ["営業部", "Team A"]},
    {
        "user_id": "2",
        "display_name": "田中 花子",
        "reading": "たなか はなこ",
        "aliases": ["ハナちゃん"],
        "groups": ["営業部", "Team A"],
    },
    {"user_id": "3", "display_name": "佐藤 次郎", "groups": ["営業部"]},
    {"user_id": "4", "display_name": "鈴木 一郎", "groups": ["開発部", "Team B"]},
    {"user_id": "5", "display_name": "高橋 美咲", "groups": ["開発部", "Team B"]},
    {"email": "ito@example.com", "display_name": "伊藤 健", "groups": ["開発部"]},
    {"list_member_id": "77", "display_name": "渡辺 翔"},
    {"user_id": "8", "display_name": "小林 愛"},
]
UTTERANCES = [
    "山田さんと田中さんは必須、あと2人",
    "全員参加必須",
    "8人中5人以上が参加できればOK",
    "営業部から2人 または 開発部から1人",
    "誰か1人でも参加できればOK",
    "みんなで集まりたい",
    "1人欠けてもOK、平日の午後に1時間",
    "過半数が集まれば開催、候補を5つ",
    "ハナちゃんは絶対、ほかに三人",
    "木村さんは必須",
    "山田さんと田中さん、または佐藤さんと鈴木さんが揃えばOK",
    "全員必須。3人以上でOK",
]


def bench_parse(seconds: float = 2.0) -> tuple[float, float]:
    count = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        for text in UTTERANCES:
            parse_attendance_intent({"text": text, "invitees": INVITEES})
        count += len(UTTERANCES)
    elapsed = time.perf_counter() - started
    return count / elapsed, elapsed / count * 1e6


def bench_worst_parse(repeats: int = 5) -> tuple[float, float]:
    """Median ms of a 2,000-digit utterance (regex worst case) and of a parse over 5,000 invitees."""
    long_text = "1" * 2000
    many = [{"user_id": str(i), "display_name": f"User{i}", "groups": [f"G{i % 10}"]} for i in range(5000)]
    figures = []
    for text, invitees in ((long_text, INVITEES), ("山田さんと田中さんは必須、あと2人", many)):
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            parse_attendance_intent({"text": text, "invitees": invitees})
            times.append((time.perf_counter() - started) * 1000)
        figures.append(statistics.median(times))
    return figures[0], figures[1]


def evaluation_request(rule_type: str, invitees: int = 1000, slots: int = 200, density: float = 0.2) -> dict:
    rng = random.Random(42)
    keys = [f"u:{i}" for i in range(invitees)]
    slot_list = [
        {"slot_id": f"s{j}", "start": f"2025-07-{1 + j // 10:02d}T{8 + j % 10:02d}:00:00+09:00"} for j in range(slots)
    ]
    selections = [
        {"invitee_key": k, "slot_id": s["slot_id"], "status": "selected" if rng.random() < 0.9 else "declined"}
        for k in keys
        for s in slot_list
        if rng.random() < density
    ]
    by_type: dict[str, dict[str, Any]] = {
        "ALL": {},
        "K_OF_N": {"k": invitees // 4, "n": invitees},
        "REQUIRED_PLUS_QUORUM": {"required_invitee_keys": keys[:5], "min_additional": 100},
        "GROUP_ANY": {
            "groups": [
                {"name": f"g{g}", "min": 20, "any_of_invitee_keys": keys[g * 100 : (g + 1) * 100]} for g in range(10)
            ]
        },
    }
    params = by_type[rule_type]
    rule = {
        "type": rule_type,
        "slot_policy": {"allow_multiple_slots_per_invitee": True},
        "invitee_scope": {"include_invitee_keys": keys},
        "rule": params,
        "finalize_policy": {
            "mode": "EARLIEST_VALID",
            "tie_breaker": "highest_score",
            "auto_finalize": True,
            "auto_finalize_delay_seconds": 3600,
        },
    }
    return {"rule": rule, "slots": slot_list, "selections": selections, "now": "2025-06-01T00:00:00Z"}


def bench_evaluate(rule_type: str, repeats: int = 7) -> tuple[int, float, float]:
    request = evaluation_request(rule_type)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        evaluate_attendance(request)
        times.append((time.perf_counter() - started) * 1000)
    return len(request["selections"]), statistics.median(times), min(times)


def main() -> None:
    rate, per = bench_parse()
    print(
        f"Machine: {platform.machine()}, nproc={os.cpu_count()}, Python {platform.python_version()} ({platform.python_implementation()})\n"
    )
    print("| benchmark | figure | target |")
    print("|---|---|---|")
    print(
        f"| parse_attendance_intent, {len(INVITEES)} invitees, {len(UTTERANCES)} utterance mix | {rate:,.0f} utterances/s ({per:.0f} µs each) | >= 2,000/s |"
    )
    digits, many = bench_worst_parse()
    print(f"| parse_attendance_intent, 2,000-digit utterance (maxLength) | median {digits:.1f} ms | no backtracking |")
    print(f"| parse_attendance_intent, 5,000 invitees | median {many:.0f} ms | (informative) |")
    for rule_type in ("K_OF_N", "REQUIRED_PLUS_QUORUM", "GROUP_ANY", "ALL"):
        n, median, best = bench_evaluate(rule_type)
        print(
            f"| evaluate_attendance {rule_type}, 1,000 invitees x 200 slots, {n:,} selections | median {median:.1f} ms (best {best:.1f} ms) | < 50 ms |"
        )


if __name__ == "__main__":
    main()
