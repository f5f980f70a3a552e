"""Per-record validation: every bad-input case, its exact reason, and the batch still processed."""

from __future__ import annotations

from typing import Any

import pytest

from handlers.stays.core import summarize
from handlers.stays.core.timestamps import parse_rfc3339
from handlers.stays.core.validate import ref_is_valid

T9 = "2024-05-01T09:00:00+09:00"
T10 = "2024-05-01T10:00:00+09:00"
BEFORE = {"ref": "before", "code": "13101", "name": "千代田区", "start_ts": T9, "end_ts": T10}
AFTER = {"ref": "after", "code": "13102", "name": "中央区", "start_ts": T9, "end_ts": "2024-05-01T09:30:00+09:00"}
RESULT_BEFORE = {"ref": "before", "code": "13101", "name": "千代田区", "duration_sec": 3600}
RESULT_AFTER = {"ref": "after", "code": "13102", "name": "中央区", "duration_sec": 1800}

OK = {"code": "13103", "name": "港区", "start_ts": T9, "end_ts": T10}

MSG_CODE = "code must be a non-empty string"
MSG_NAME = "name must be a non-empty string"
MSG_START = "start_ts must be an RFC 3339 date-time with offset"
MSG_END = "end_ts must be an RFC 3339 date-time with offset"
MSG_REF = "ref dropped: 1-128 letters, digits or -_.:/#@ expected"

# (id, record placed at index 1, reason, message); the record is left out of results.
REJECTED: list[tuple[str, Any, str, str]] = [
    ("missing_code", {"ref": "r", "name": "港区"}, "MISSING_CODE", MSG_CODE),
    ("empty_code", {"ref": "r", "code": "", "name": "港区"}, "MISSING_CODE", MSG_CODE),
    ("blank_code", {"ref": "r", "code": "  ", "name": "港区"}, "MISSING_CODE", MSG_CODE),
    ("null_code", {"ref": "r", "code": None, "name": "港区"}, "MISSING_CODE", MSG_CODE),
    ("int_code", {"ref": "r", "code": 13103, "name": "港区"}, "MISSING_CODE", MSG_CODE),
    ("list_code", {"ref": "r", "code": ["13103"], "name": "港区"}, "MISSING_CODE", MSG_CODE),
    ("control_char_code", {"ref": "r", "code": "131\n03", "name": "港区"}, "MISSING_CODE", MSG_CODE),
    ("missing_name", {"ref": "r", "code": "13103"}, "INVALID_INPUT", MSG_NAME),
    ("empty_name", {"ref": "r", "code": "13103", "name": ""}, "INVALID_INPUT", MSG_NAME),
    ("int_name", {"ref": "r", "code": "13103", "name": 7}, "INVALID_INPUT", MSG_NAME),
    ("object_name", {"ref": "r", "code": "13103", "name": {"ja": "港区"}}, "INVALID_INPUT", MSG_NAME),
    ("control_char_name", {"ref": "r", "code": "13103", "name": "港区\r\n"}, "INVALID_INPUT", MSG_NAME),
    ("unknown_field", {**OK, "ref": "r", "lat": 35.6}, "INVALID_INPUT", "unknown field(s): lat"),
    ("unknown_fields", {**OK, "ref": "r", "lon": 1, "lat": 2}, "INVALID_INPUT", "unknown field(s): lat, lon"),
    ("unknown_odd_field", {**OK, "ref": "r", "a b\n": 1}, "INVALID_INPUT", "1 unknown field(s)"),
    ("bad_start", {**OK, "ref": "r", "start_ts": "yesterday"}, "INVALID_INPUT", MSG_START),
    ("date_only_start", {**OK, "ref": "r", "start_ts": "2024-05-01"}, "INVALID_INPUT", MSG_START),
    ("date_only_end", {**OK, "ref": "r", "end_ts": "2024-05-01"}, "INVALID_INPUT", MSG_END),
    ("no_offset", {**OK, "ref": "r", "start_ts": "2024-05-01T09:00:00"}, "INVALID_INPUT", MSG_START),
    ("space_separator", {**OK, "ref": "r", "start_ts": "2024-05-01 09:00:00Z"}, "INVALID_INPUT", MSG_START),
    ("no_seconds", {**OK, "ref": "r", "start_ts": "2024-05-01T09:00+09:00"}, "INVALID_INPUT", MSG_START),
    ("basic_format", {**OK, "ref": "r", "start_ts": "20240501T090000Z"}, "INVALID_INPUT", MSG_START),
    ("feb_30", {**OK, "ref": "r", "start_ts": "2024-02-30T09:00:00Z"}, "INVALID_INPUT", MSG_START),
    ("hour_24", {**OK, "ref": "r", "end_ts": "2024-05-01T24:00:00Z"}, "INVALID_INPUT", MSG_END),
    ("leap_second", {**OK, "ref": "r", "end_ts": "2016-12-31T23:59:60Z"}, "INVALID_INPUT", MSG_END),
    ("offset_25h", {**OK, "ref": "r", "end_ts": "2024-05-01T10:00:00+25:00"}, "INVALID_INPUT", MSG_END),
    ("int_start", {**OK, "ref": "r", "start_ts": 1714521600}, "INVALID_INPUT", MSG_START),
    ("bool_end", {**OK, "ref": "r", "end_ts": True}, "INVALID_INPUT", MSG_END),
    ("list_end", {**OK, "ref": "r", "end_ts": [T10]}, "INVALID_INPUT", MSG_END),
    (
        "end_before_start",
        {**OK, "ref": "r", "start_ts": T10, "end_ts": T9},
        "INVALID_INPUT",
        "end_ts is before start_ts",
    ),
    (
        "end_before_start_across_offsets",
        {**OK, "ref": "r", "start_ts": "2024-05-01T09:00:00+09:00", "end_ts": "2024-04-30T23:59:59Z"},
        "INVALID_INPUT",
        "end_ts is before start_ts",
    ),
]


@pytest.mark.parametrize(("record", "reason", "message"), [c[1:] for c in REJECTED], ids=[c[0] for c in REJECTED])
def test_rejected_record_is_reported_and_others_processed(record: Any, reason: str, message: str) -> None:
    out = summarize({"stays": [BEFORE, record, AFTER]})
    assert out["errors"] == [{"ref": "r", "index": 1, "reason": reason, "message": message}]
    assert out["results"] == [RESULT_BEFORE, RESULT_AFTER]
    assert out["summary"] == "千代田区に1時間滞在→中央区に30分滞在"
    assert out["stats"]["rejected_records"] == 1


@pytest.mark.parametrize("record", ["13101", 5, None, ["13101", "千代田区"]], ids=["str", "int", "null", "list"])
def test_non_object_record_is_invalid_input(record: Any) -> None:
    out = summarize({"stays": [BEFORE, record, AFTER]})
    assert out["errors"] == [{"index": 1, "reason": "INVALID_INPUT", "message": "record must be an object"}]
    assert out["results"] == [RESULT_BEFORE, RESULT_AFTER]


BAD_REFS: list[tuple[str, Any]] = [
    ("129_chars", "a" * 129),
    ("newline", "day1\nstop"),
    ("nul", "day1\x00"),
    ("tab", "day1\tstop"),
    ("del", "day1\x7f"),
    ("c1_control", "day1\x85"),
    ("empty", ""),
    ("space", "day 1"),
    ("ideographic_space", "朝食\u30001"),
    ("zero_width_space", "day\u200b1"),
    ("bidi_override", "day\u202e1"),
    ("quote", 'day"1'),
    ("angle_brackets", "<b>"),
    ("emoji", "stop🍣"),
    ("int", 12),
    ("list", ["a"]),
    ("bool", False),
]


@pytest.mark.parametrize("ref", [c[1] for c in BAD_REFS], ids=[c[0] for c in BAD_REFS])
def test_bad_ref_is_dropped_and_record_kept(ref: Any) -> None:
    out = summarize({"stays": [BEFORE, {**OK, "ref": ref}, AFTER]})
    assert out["errors"] == [{"index": 1, "reason": "INVALID_REF", "message": MSG_REF}]
    assert out["results"] == [
        RESULT_BEFORE,
        {"code": "13103", "name": "港区", "duration_sec": 3600},
        RESULT_AFTER,
    ]
    assert out["stats"]["dropped_refs"] == 1
    assert out["stats"]["rejected_records"] == 0


@pytest.mark.parametrize(
    "ref",
    ["a" * 128, "day1-stop_2", "a:b/c@d.e#f", "朝食-1", "café#2", "ＡＢ１", "か\u3099", "Ωμέγα", "١٢٣", "x"],
)
def test_valid_refs(ref: str) -> None:
    assert ref_is_valid(ref)
    out = summarize({"stays": [{**OK, "ref": ref}]})
    assert out["errors"] == []
    assert out["results"][0]["ref"] == ref


def test_bad_ref_and_missing_code_give_two_entries_without_ref() -> None:
    out = summarize({"stays": [{"ref": "a b", "name": "港区"}, OK]})
    assert out["errors"] == [
        {"index": 0, "reason": "INVALID_REF", "message": MSG_REF},
        {"index": 0, "reason": "MISSING_CODE", "message": MSG_CODE},
    ]
    assert out["results"] == [{"code": "13103", "name": "港区", "duration_sec": 3600}]
    assert out["stats"] == {
        "input_records": 2,
        "valid_records": 1,
        "rejected_records": 1,
        "dropped_refs": 1,
        "unknown_duration_records": 0,
        "total_duration_sec": 3600,
    }


def test_error_entry_carries_valid_ref_and_never_the_timestamp() -> None:
    out = summarize({"stays": [{**OK, "ref": "x1", "start_ts": "2024-05-01T09:00:00"}]})
    (entry,) = out["errors"]
    assert entry["ref"] == "x1"
    assert "2024" not in entry["message"]


@pytest.mark.parametrize(
    "record",
    [
        {"code": "13104", "name": "新宿区"},
        {"code": "13104", "name": "新宿区", "start_ts": T9},
        {"code": "13104", "name": "新宿区", "end_ts": T10},
        {"code": "13104", "name": "新宿区", "start_ts": T9, "end_ts": None},
        {"code": "13104", "name": "新宿区", "start_ts": None, "end_ts": None, "ref": None},
    ],
    ids=["none", "start_only", "end_only", "null_end", "all_null"],
)
def test_missing_timestamp_gives_null_duration(record: dict[str, Any]) -> None:
    out = summarize({"stays": [BEFORE, record]})
    assert out["errors"] == []
    assert out["results"][1] == {"code": "13104", "name": "新宿区", "duration_sec": None}
    assert out["summary"] == "千代田区に1時間滞在→新宿区に滞在（時間不明）"
    assert out["stats"]["unknown_duration_records"] == 1
    assert out["stats"]["total_duration_sec"] == 3600


@pytest.mark.parametrize(
    ("start", "end", "seconds"),
    [
        ("2024-05-01T09:00:00Z", "2024-05-01T09:00:00Z", 0),
        ("2024-05-01T09:00:00+09:00", "2024-05-01T01:00:00Z", 3600),
        ("2024-05-01t09:00:00z", "2024-05-01T09:00:30-00:00", 30),
        ("2024-05-01T09:00:00.900Z", "2024-05-01T09:00:02.100Z", 1),
        ("2024-05-01T09:00:00.123456789Z", "2024-05-01T09:01:00.123456789Z", 60),
        ("2024-05-01T23:00:00+09:00", "2024-05-03T01:30:00+09:00", 95400),
        ("2024-12-31T23:59:59Z", "2025-01-01T00:00:01Z", 2),
    ],
)
def test_durations(start: str, end: str, seconds: int) -> None:
    out = summarize({"stays": [{"code": "1", "name": "x", "start_ts": start, "end_ts": end}]})
    assert out["errors"] == []
    assert out["results"][0]["duration_sec"] == seconds


def test_parse_rfc3339_is_strict() -> None:
    assert parse_rfc3339("2024-05-01T09:00:00+09:00") is not None
    for bad in [
        "2024-05-01",
        "2024-05-01T09:00:00",
        "2024-W18-3T09:00:00Z",
        "2024-05-01T09:00:00+0900",
        " 2024-05-01T09:00:00Z",
    ]:
        assert parse_rfc3339(bad) is None, bad
