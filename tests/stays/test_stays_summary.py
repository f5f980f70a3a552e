"""Modes, the Japanese summary wording, and a 100,000-record batch."""

from __future__ import annotations

from typing import Any

import pytest

from handlers.stays.core import summarize
from handlers.stays.core.wording import format_duration


def stay(code: str, name: str, start: str | None = None, end: str | None = None, **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"code": code, "name": name, **extra}
    if start is not None:
        record["start_ts"] = f"2024-05-01T{start}:00+09:00"
    if end is not None:
        record["end_ts"] = f"2024-05-01T{end}:00+09:00"
    return record


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "1分未満"),
        (30, "1分未満"),
        (59, "1分未満"),
        (60, "1分"),
        (119, "1分"),
        (2700, "45分"),
        (3600, "1時間"),
        (5400, "1時間30分"),
        (5459, "1時間30分"),
        (7200, "2時間"),
        (86399, "23時間59分"),
        (86400, "1日"),
        (90000, "1日1時間"),
        (86400 + 180, "1日3分"),
        (93780, "1日2時間3分"),
    ],
)
def test_format_duration(seconds: int, text: str) -> None:
    assert format_duration(seconds) == text


def test_seed_example() -> None:
    out = summarize(
        {
            "granularity": "admin",
            "stays": [stay("13101", "千代田区", "09:00", "11:00"), stay("13102", "中央区", "11:15", "11:45")],
        }
    )
    assert out["summary"] == "千代田区に2時間滞在→中央区に30分滞在"
    assert out["granularity"] == "admin"
    assert out["mode"] == "sequence"
    assert out["results"] == [
        {"code": "13101", "name": "千代田区", "duration_sec": 7200},
        {"code": "13102", "name": "中央区", "duration_sec": 1800},
    ]
    assert out["errors"] == []


def test_sequence_wording_and_order() -> None:
    out = summarize(
        {
            "granularity": "estat",
            "mode": "sequence",
            "stays": [
                stay("A", "渋谷区", "09:00", "10:30", ref="s1"),
                stay("B", "目黒区", "10:30", "11:15"),
                stay("A", "渋谷区", "11:15", "13:15"),
                stay("C", "新宿区", "13:20"),
                stay("D", "中野区", "14:00", "14:00"),
            ],
        }
    )
    assert out["summary"] == (
        "渋谷区に1時間30分滞在→目黒区に45分滞在→渋谷区に2時間滞在→新宿区に滞在（時間不明）→中野区に1分未満滞在"
    )
    assert [r.get("ref") for r in out["results"]] == ["s1", None, None, None, None]
    assert [r["duration_sec"] for r in out["results"]] == [5400, 2700, 7200, None, 0]
    assert out["granularity"] == "estat"


def test_aggregate_sums_in_first_seen_order_with_first_name_and_no_ref() -> None:
    out = summarize(
        {
            "mode": "aggregate",
            "stays": [
                stay("13101", "千代田区", "09:00", "10:30", ref="a"),
                stay("13102", "中央区", "10:30", "11:00", ref="b"),
                stay("13101", "千代田（別名）", "11:00", "12:00", ref="c"),
            ],
        }
    )
    assert out["results"] == [
        {"code": "13101", "name": "千代田区", "duration_sec": 9000},
        {"code": "13102", "name": "中央区", "duration_sec": 1800},
    ]
    assert out["summary"] == "千代田区に合計2時間30分滞在、中央区に合計30分滞在"
    assert out["mode"] == "aggregate"


def test_aggregate_unknown_and_mixed_durations() -> None:
    out = summarize(
        {
            "mode": "aggregate",
            "stays": [
                stay("X", "新宿区"),
                stay("Y", "港区", "09:00", "10:00"),
                stay("X", "新宿区", "10:00"),
                stay("Y", "港区"),
                stay("Z", "品川区"),
                stay("Z", "品川区", "11:00", "11:45"),
            ],
        }
    )
    assert out["results"] == [
        {"code": "X", "name": "新宿区", "duration_sec": None},
        {"code": "Y", "name": "港区", "duration_sec": 3600},
        {"code": "Z", "name": "品川区", "duration_sec": 2700},
    ]
    assert out["summary"] == (
        "新宿区に滞在（時間不明）、港区に合計1時間滞在（一部時間不明）、品川区に合計45分滞在（一部時間不明）"
    )
    assert out["stats"]["unknown_duration_records"] == 4
    assert out["stats"]["total_duration_sec"] == 6300


@pytest.mark.parametrize("mode", ["sequence", "aggregate"])
@pytest.mark.parametrize("stays", [[], [{"name": "x"}]], ids=["no_records", "all_invalid"])
def test_empty_result(mode: str, stays: list[Any]) -> None:
    out = summarize({"mode": mode, "stays": stays})
    assert out["summary"] == "有効な滞在記録はありません"
    assert out["results"] == []


def test_sequence_summary_is_bounded() -> None:
    out = summarize({"stays": [stay(str(i), f"地区{i}", "09:00", "09:45") for i in range(25)]})
    expected = "→".join(f"地区{i}に45分滞在" for i in range(20)) + "→…ほか5件"
    assert out["summary"] == expected
    assert len(out["results"]) == 25


def test_aggregate_summary_is_bounded() -> None:
    records = [stay(str(i % 23), f"地区{i % 23}", "09:00", "10:00") for i in range(46)]
    out = summarize({"mode": "aggregate", "stays": records})
    expected = "、".join(f"地区{i}に合計2時間滞在" for i in range(20)) + "、…ほか3地区"
    assert out["summary"] == expected
    assert len(out["results"]) == 23


def test_summary_with_exactly_twenty_clauses_has_no_rest_count() -> None:
    out = summarize({"stays": [stay(str(i), "区", "09:00", "10:00") for i in range(20)]})
    assert out["summary"] == "→".join(["区に1時間滞在"] * 20)


def test_defaults() -> None:
    out = summarize({"stays": [stay("1", "区", "09:00", "10:00")]})
    assert (out["granularity"], out["mode"]) == ("admin", "sequence")


def big_batch(n: int = 100_000) -> list[dict[str, Any]]:
    """n records over 50 districts; every 1000th has no code, every 1000th (offset 500) no end_ts."""
    records: list[dict[str, Any]] = []
    for i in range(n):
        minute = i % 60
        record: dict[str, Any] = {
            "ref": f"r{i}",
            "code": f"13{i % 50:03d}",
            "name": f"地区{i % 50}",
            "start_ts": "2024-05-01T09:00:00+09:00",
            "end_ts": f"2024-05-01T10:{minute:02d}:00+09:00",
        }
        if i % 1000 == 0:
            del record["code"]
        if i % 1000 == 500:
            del record["end_ts"]
        records.append(record)
    return records


def test_100k_records_sequence_and_aggregate() -> None:
    records = big_batch()
    seq = summarize({"stays": records})
    assert seq["stats"] == {
        "input_records": 100_000,
        "valid_records": 99_900,
        "rejected_records": 100,
        "dropped_refs": 0,
        "unknown_duration_records": 100,
        "total_duration_sec": _expected_total(),
    }
    assert len(seq["results"]) == 99_900
    assert seq["results"][0] == {"ref": "r1", "code": "13001", "name": "地区1", "duration_sec": 3660}
    assert seq["results"][-1] == {"ref": "r99999", "code": "13049", "name": "地区49", "duration_sec": 3600 + 39 * 60}
    assert [e["index"] for e in seq["errors"]] == list(range(0, 100_000, 1000))
    assert seq["summary"].endswith("→…ほか99880件")

    agg = summarize({"mode": "aggregate", "stays": records})
    assert len(agg["results"]) == 50
    assert sum(r["duration_sec"] for r in agg["results"]) == _expected_total()
    assert agg["summary"].endswith("、…ほか30地区")


def _expected_total() -> int:
    return sum(3600 + (i % 60) * 60 for i in range(100_000) if i % 1000 not in (0, 500))
