"""The inlined fast path of check_records must agree with check_record on every record."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from handlers.stays.core.timestamps import _RFC3339, parse_rfc3339
from handlers.stays.core.validate import check_record, check_records

TIMESTAMPS = st.one_of(
    st.sampled_from(
        [
            "2024-05-01T09:00:00+09:00",
            "2024-05-01T10:30:15+09:00",
            "2024-05-01T01:00:00-03:30",
            "2024-05-01T00:00:00Z",
            "2024-05-01t09:00:00z",
            "2024-05-01T09:00:00.5+09:00",
            "2024-05-01T09:00:00",
            "2024-05-01",
            "2024-02-30T09:00:00+09:00",
            "2024-05-01T09:00:00+0900",
            "2024-05-01T09:Z\x00:00+09:00",  # fromisoformat stops at the NUL: 09:00 UTC
        ]
    ),
    # 25-character strings shaped like the fast path, with arbitrary characters in the digit slots.
    st.lists(st.sampled_from("0123456789 +-:TtZ٣２a"), min_size=8, max_size=8).map(
        lambda c: f"20{c[0]}{c[1]}-0{c[2]}-1{c[3]}T{c[4]}9:00:0{c[5]}+0{c[6]}:{c[7]}0"
    ),
    st.integers(),
    st.none(),
)
TEXT = st.one_of(
    st.sampled_from(["13101", "千代田区", "", "  ", "a\nb", "区\u3000", "x\x85"]), st.text(max_size=6), st.integers()
)
REFS = st.one_of(
    st.sampled_from(["day1-2", "a" * 128, "a" * 129, "", "a b", "朝食", "x\x00"]), st.text(max_size=6), st.none()
)
KEYS = st.sampled_from(["ref", "code", "name", "start_ts", "end_ts", "lat"])


@st.composite
def records(draw: st.DrawFn) -> Any:
    record: dict[str, Any] = {
        "ref": draw(REFS),
        "code": draw(TEXT),
        "name": draw(TEXT),
        "start_ts": draw(TIMESTAMPS),
        "end_ts": draw(TIMESTAMPS),
    }
    for key in draw(st.sets(KEYS, max_size=2)):
        if key == "lat":
            record["lat"] = 1  # an unknown field
        else:
            del record[key]
    return record if draw(st.integers(0, 20)) else draw(st.sampled_from(["x", None, 3]))


@settings(max_examples=400, deadline=None)
@given(st.lists(records(), max_size=8))
def test_fast_path_matches_reference(batch: list[Any]) -> None:
    expected_errors: list[dict[str, Any]] = []
    expected_stays = [s for i, r in enumerate(batch) if (s := check_record(i, r, expected_errors)) is not None]
    assert check_records(batch) == (expected_stays, expected_errors)


def _regex_only_parse(value: str) -> datetime | None:
    """The reference: regex shape check, then fromisoformat (what parse_rfc3339's fast path shortcuts)."""
    if _RFC3339.fullmatch(value) is None:
        return None
    try:
        return datetime.fromisoformat(value[:-1] + "Z" if value[-1] == "z" else value)
    except ValueError:
        return None


@st.composite
def mutated_timestamps(draw: st.DrawFn) -> str:
    chars = list(draw(st.sampled_from(["2024-05-01T09:00:00+09:00", "2024-05-01T09:00:00Z", "2024-12-31t23:59:59z"])))
    for _ in range(draw(st.integers(0, 2))):
        position = draw(st.integers(0, len(chars) - 1))
        chars[position] = draw(st.sampled_from("0123456789-:+TtZz., W٣２\x00"))
    return "".join(chars)


@settings(max_examples=1000, deadline=None)
@given(mutated_timestamps())
def test_timestamp_fast_path_matches_regex(value: str) -> None:
    assert parse_rfc3339(value) == _regex_only_parse(value)


def test_a_nul_after_a_zone_designator_is_not_a_timestamp() -> None:
    """CPython's fromisoformat stops reading at a NUL and takes `09:Z\x00:00` for 09:00 UTC; a JSON string may
    carry `\u0000`. Both fast paths (one timestamp, a batch of records) refuse it as the regex path does."""
    for value in ("2024-05-01T09:Z\x00:00+09:00", "2024-05-01T09:00:Z\x00+09:00", "2024-05-01T00:Z\x00:00Z"):
        assert parse_rfc3339(value) is None
    record = {"code": "13101", "name": "千代田区", "start_ts": "2024-05-01T09:Z\x00:00+09:00"}
    record["end_ts"] = "2024-05-01T10:00:00+09:00"
    stays, errors = check_records([record])
    assert stays == [] and [e["reason"] for e in errors] == ["INVALID_INPUT"]
