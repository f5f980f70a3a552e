"""slot_generation_hint, share_intent and finalize-policy wording from the utterance.

These are side channels of the utterance (how many candidates, which days and
hours, how long, who to share with, how to finalise); the attendance condition
itself is parsed in grammar/. Patterns are sources here, compiled (once, text.rx)
where they are first used.
"""

from __future__ import annotations

import re
from typing import Any

from generated.attendance.models import FinalizeMode, TieBreaker
from handlers.attendance.core.keys import email_key
from handlers.attendance.core.policy import PolicyFields
from handlers.attendance.core.text import rx

DEFAULT_HOURS = [10, 11, 14, 15, 16]
_COUNT = [
    r"候補(?:日|日時|枠)?(?:を|は|が)?(\d+)(?:つ|個|件|案|枠|日)",
    r"(\d+)(?:つ|個|件|案|枠)(?:の|くらい|ほど)?候補",
]
_DAYS = {"月": "mon", "火": "tue", "水": "wed", "木": "thu", "金": "fri", "土": "sat", "日": "sun"}
_DAY_RE = r"([月火水木金土日])曜"
_PERIODS = [
    ("午前", [9, 10, 11]),
    ("午後", [13, 14, 15, 16, 17]),
    ("夕方", [17, 18]),
    ("(?:夜|夜間|ディナー)", [18, 19, 20]),
    ("(?:朝|モーニング)", [8, 9]),
    ("(?:昼|ランチ)", [12, 13]),
]
_HOUR_RANGE = r"(\d{1,2})時(?:から|〜|~|-)(\d{1,2})時"
_HOUR_AFTER = r"(\d{1,2})時(?:以降|から|過ぎ)"
_DURATION = [
    (r"(\d+)時間半", lambda m: int(m.group(1)) * 60 + 30),
    (r"(\d+)時間(\d+)分", lambda m: int(m.group(1)) * 60 + int(m.group(2))),
    (r"(\d+)時間", lambda m: int(m.group(1)) * 60),
    (r"半日", lambda m: 240),
    (r"(\d+)分(?!の)", lambda m: int(m.group(1))),
]
_AUTO_DELAY = r"(\d+)(時間|分)後に?(?:は)?自動"
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_MANUAL = r"手動|自分で決め|私が決め|こちらで決め|確認してから|勝手に確定しな|自動確定しな|自動で確定しな|自動で決めな|自動確定は(?:しな|不要|なし|オフ)"
_AUTO = r"自動(?:で|的に)?確定"
_MOST = r"(?:一番|最も|もっとも|いちばん|なるべく)多く|参加者が多い|人数が多い|多く集まる"
_EARLIEST = r"一番早い|いちばん早い|最短|最速|最も早い|早い日"


def slot_hint(folded: str, defaults: dict[str, Any]) -> dict[str, Any]:
    """Candidate count, days, hours and duration, each from the text or the defaults."""
    count = defaults.get("slot_count", 3)
    for pattern in _COUNT:
        m = rx(pattern).search(folded)
        if m:
            count = max(1, min(20, int(m.group(1))))
            break
    days: list[str] = []
    if rx("平日").pattern in folded:
        days.append("weekday")
    if any(w in folded for w in ("土日", "週末", "休日", "土日祝")):
        days.append("weekend")
    for m in rx(_DAY_RE).finditer(folded):
        day = _DAYS[m.group(1)]
        if day not in days:
            days.append(day)
    hours: list[int] = []
    m = rx(_HOUR_RANGE).search(folded)
    if m:
        lo, hi = int(m.group(1)), int(m.group(2))
        hours = list(range(lo, hi)) if 0 <= lo < hi <= 24 else []
    elif (m := rx(_HOUR_AFTER).search(folded)) and int(m.group(1)) <= 23:
        lo = int(m.group(1))
        hours = list(range(lo, min(lo + 4, 24)))
    if not hours:
        for pattern, period in _PERIODS:
            if rx(pattern).search(folded):
                hours.extend(h for h in period if h not in hours)
    duration = defaults.get("duration_minutes", 60)
    for pattern, minutes in _DURATION:
        m = rx(pattern).search(folded)
        if m and 0 < minutes(m) <= 1440:
            duration = minutes(m)
            break
    return {
        "count": count,
        "preferred_days": days or ["weekday"],
        "preferred_hours": sorted(hours) or list(DEFAULT_HOURS),
        "duration_minutes": duration,
    }


def share_intent(norm: str, defaults: dict[str, Any]) -> dict[str, Any]:
    """Emails written in the utterance (with their e: keys), plus the thread's room and lists."""
    emails: list[str] = []
    for m in _EMAIL.finditer(norm):
        if m.group() not in emails:
            emails.append(m.group())
    return {
        "room_id": defaults.get("room_id"),
        "list_ids": list(defaults.get("list_ids", [])),
        "individual_emails": emails,
        "individual_invitee_keys": [email_key(e) for e in emails],
    }


def apply_policy_words(folded: str, policy: PolicyFields) -> PolicyFields:
    """Finalize wording overrides the type's default: 手動で確定, 2時間後に自動確定, 一番多く集まる日."""
    out = policy.copy()
    if rx(_MANUAL).search(folded):
        out["auto_finalize"] = False
        out.pop("auto_finalize_delay_seconds", None)
        if rx("手動").search(folded) or rx(r"(?:自分|私|こちら)で決め").search(folded):
            out["mode"] = FinalizeMode.MANUAL
    elif m := rx(_AUTO_DELAY).search(folded):
        out["auto_finalize"] = True
        out["auto_finalize_delay_seconds"] = int(m.group(1)) * (3600 if m.group(2) == "時間" else 60)
    elif rx(_AUTO).search(folded) and not out["auto_finalize"]:
        out["auto_finalize"] = True
        out["auto_finalize_delay_seconds"] = 3600
    if rx(_MOST).search(folded):
        out["tie_breaker"] = TieBreaker.highest_score
    elif rx(_EARLIEST).search(folded):
        out["tie_breaker"] = TieBreaker.earliest_slot
        if out["mode"] == FinalizeMode.BEST_SCORE:
            out["mode"] = FinalizeMode.EARLIEST_VALID
    return out
