"""Per-record validation of stay records.

The input schema deliberately leaves record fields untyped so that one bad record
never fails a whole batch; this module is where each record is judged. A record
either becomes a result row (possibly with its `ref` dropped) or is rejected, and every
problem becomes an entry of the output `errors` array. Messages never echo the
caller's values (timestamps, refs), only field names.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime, timedelta
from operator import itemgetter
from typing import Any, TypeGuard

from handlers.stays.core.timestamps import OFFSET_SHAPES, parse_rfc3339

INVALID_INPUT = "INVALID_INPUT"
INVALID_REF = "INVALID_REF"
MISSING_CODE = "MISSING_CODE"

KNOWN_FIELDS = frozenset({"ref", "code", "name", "start_ts", "end_ts"})
REF_MAX_LENGTH = 128
REF_PUNCTUATION = frozenset("-_.:/#@")

# ASCII characters allowed in a ref; `not ref.strip(_ASCII_REF_CHARS)` is a C-speed "all allowed" test.
_ASCII_REF_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.:/#@"
# C0 and C1 control characters (and DEL): never allowed in code or name.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Unknown field names are echoed in messages only when they look like identifiers.
_SAFE_FIELD_NAME = re.compile(r"[A-Za-z0-9_]{1,40}")


# A valid record as the output's result row: {"ref"?, "code", "name", "duration_sec"};
# "ref" only when valid, duration_sec None when unknown. Built once, in the checker,
# so sequence mode returns the list as is.
ResultRow = dict[str, Any]

_ALL_FIELDS = itemgetter("ref", "code", "name", "start_ts", "end_ts")
_NO_REF_FIELDS = itemgetter("code", "name", "start_ts", "end_ts")
_fromisoformat = datetime.fromisoformat
_ONE_SECOND = timedelta(seconds=1)


def ref_is_valid(ref: object) -> bool:
    """Whether `ref` is 1–128 characters of the documented set.

    Allowed: ASCII letters and digits, `-_.:/#@`, and non-ASCII characters of the
    Unicode general categories L (letters), M (marks) and N (numbers), so labels such
    as "朝食-1" or "café#2" pass. Everything else (spaces, quotes, brackets, control and
    format characters, symbols, emoji) is rejected.
    """
    if type(ref) is not str or not 1 <= len(ref) <= REF_MAX_LENGTH:
        return False
    if not ref.strip(_ASCII_REF_CHARS):
        return True
    for ch in ref:
        if ch.isascii():
            if not (ch.isalnum() or ch in REF_PUNCTUATION):
                return False
        elif unicodedata.category(ch)[0] not in "LMN":
            return False
    return True


def _is_text(value: object) -> TypeGuard[str]:
    """A non-blank string without control characters (what code and name must be).

    `isprintable()` (C, no allocation) settles the usual case; only strings it
    rejects (e.g. holding U+3000) need the control-character regex.
    """
    if type(value) is not str or value == "" or value.isspace():
        return False
    return value.isprintable() or _CONTROL.search(value) is None


def _unknown_fields_message(keys: list[str]) -> str:
    shown = sorted(k for k in keys if _SAFE_FIELD_NAME.fullmatch(k))
    if len(shown) == len(keys):
        return "unknown field(s): " + ", ".join(shown)
    return f"{len(keys)} unknown field(s)"


def _error(index: int, reason: str, message: str, ref: str | None) -> dict[str, Any]:
    if ref is None:
        return {"index": index, "reason": reason, "message": message}
    return {"ref": ref, "index": index, "reason": reason, "message": message}


def check_record(index: int, record: object, errors: list[dict[str, Any]]) -> ResultRow | None:
    """Judge one record: return its result row, or None if rejected; append problems to `errors`.

    A bad `ref` adds an INVALID_REF entry (without the ref) and the record goes on
    without it. Then the first fatal problem, checked in this order, rejects it:
    code (MISSING_CODE), name, unknown fields, start_ts, end_ts, end before start
    (all INVALID_INPUT). A JSON null counts as an absent field.
    """
    if type(record) is not dict:
        errors.append(_error(index, INVALID_INPUT, "record must be an object", None))
        return None
    ref = record.get("ref")
    if ref is not None and not ref_is_valid(ref):
        errors.append(_error(index, INVALID_REF, "ref dropped: 1-128 letters, digits or -_.:/#@ expected", None))
        ref = None

    code = record.get("code")
    if not _is_text(code):
        errors.append(_error(index, MISSING_CODE, "code must be a non-empty string", ref))
        return None
    name = record.get("name")
    if not _is_text(name):
        errors.append(_error(index, INVALID_INPUT, "name must be a non-empty string", ref))
        return None
    if len(record) > 2 and not KNOWN_FIELDS.issuperset(record):
        unknown = [k for k in record if k not in KNOWN_FIELDS]
        errors.append(_error(index, INVALID_INPUT, _unknown_fields_message(unknown), ref))
        return None

    raw_start = record.get("start_ts")
    raw_end = record.get("end_ts")
    start = end = None
    if raw_start is not None and (start := parse_rfc3339(raw_start)) is None:
        errors.append(_error(index, INVALID_INPUT, "start_ts must be an RFC 3339 date-time with offset", ref))
        return None
    if raw_end is not None and (end := parse_rfc3339(raw_end)) is None:
        errors.append(_error(index, INVALID_INPUT, "end_ts must be an RFC 3339 date-time with offset", ref))
        return None
    duration: int | None = None
    if start is not None and end is not None:
        delta = end - start
        if delta.days < 0:
            errors.append(_error(index, INVALID_INPUT, "end_ts is before start_ts", ref))
            return None
        duration = delta.days * 86400 + delta.seconds  # whole seconds, fraction truncated
    if ref is None:
        return {"code": code, "name": name, "duration_sec": duration}
    return {"ref": ref, "code": code, "name": name, "duration_sec": duration}


def check_records(records: list[Any]) -> tuple[list[ResultRow], list[dict[str, Any]]]:
    """Judge every record: the result rows of the valid ones in input order, and the error entries.

    The loop has an inlined fast path for the everyday record (all fields present,
    plain strings, ASCII ref, timestamps shaped `2024-05-01T09:00:00+09:00`) that
    accepts only what `check_record` would accept, with the same result; anything
    else, and every failure, is decided by `check_record`. This keeps 100,000
    records well under the handler's time budget without a second set of rules.
    """
    stays: list[ResultRow] = []
    errors: list[dict[str, Any]] = []
    keep = stays.append
    ref_chars = _ASCII_REF_CHARS
    parse = _fromisoformat
    one_second = _ONE_SECOND
    for index, record in enumerate(records):
        if type(record) is dict:
            size = len(record)
            try:
                if size == 5:
                    ref, code, name, start, end = _ALL_FIELDS(record)
                elif size == 4:
                    code, name, start, end = _NO_REF_FIELDS(record)
                    ref = None
                else:
                    raise KeyError
                if (
                    (ref is None or (type(ref) is str and 0 < len(ref) <= REF_MAX_LENGTH and not ref.strip(ref_chars)))
                    and type(code) is str
                    and code
                    and code.isprintable()
                    and not code.isspace()
                    and type(name) is str
                    and name
                    and name.isprintable()
                    and not name.isspace()
                    and type(start) is str
                    and type(end) is str
                    and len(start) == 25
                    and len(end) == 25
                    and start[4::3] in OFFSET_SHAPES
                    and end[4::3] in OFFSET_SHAPES
                    and "\x00" not in start
                    and "\x00" not in end
                ):
                    # Digits elsewhere are enforced by fromisoformat (ASCII only; ValueError otherwise), but
                    # its C parser stops reading at a NUL (timestamps.parse_rfc3339 says more).
                    seconds = (parse(end) - parse(start)) // one_second  # floor: truncates when >= 0
                    if seconds >= 0:
                        if ref is None:
                            keep({"code": code, "name": name, "duration_sec": seconds})
                        else:
                            keep({"ref": ref, "code": code, "name": name, "duration_sec": seconds})
                        continue
            except (KeyError, ValueError):
                pass
        stay = check_record(index, record, errors)
        if stay is not None:
            keep(stay)
    return stays, errors
