"""Template-based Japanese summary text (no LLM involved).

The seed's example 「千代田区に2時間滞在→中央区に30分滞在」 fixes the sequence style;
aggregate mode uses the same self-contained clause per district, joined by 「、」.
Durations are written as a person would: 1時間30分, 45分, 2時間, 1日3時間; under a
minute is 「1分未満」. Seconds are truncated, never rounded up. The text is bounded:
at most SUMMARY_LIMIT clauses, then a count of the rest.
"""

from __future__ import annotations

SUMMARY_LIMIT = 20
EMPTY_SUMMARY = "有効な滞在記録はありません"


def format_duration(seconds: int) -> str:
    """Japanese duration: 1日2時間, 1時間30分, 45分, 2時間; 0–59 s gives 「1分未満」."""
    minutes = seconds // 60
    if minutes == 0:
        return "1分未満"
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    parts = []
    if days:
        parts.append(f"{days}日")
    if hours:
        parts.append(f"{hours}時間")
    if mins:
        parts.append(f"{mins}分")
    return "".join(parts)


def sequence_clause(name: str, seconds: int | None) -> str:
    """「千代田区に2時間滞在」, or 「新宿区に滞在（時間不明）」 when the duration is unknown."""
    if seconds is None:
        return f"{name}に滞在（時間不明）"
    return f"{name}に{format_duration(seconds)}滞在"


def aggregate_clause(name: str, seconds: int | None, partly_unknown: bool) -> str:
    """「千代田区に合計2時間30分滞在」; 「（一部時間不明）」 when some stays had no duration."""
    if seconds is None:
        return f"{name}に滞在（時間不明）"
    clause = f"{name}に合計{format_duration(seconds)}滞在"
    return clause + "（一部時間不明）" if partly_unknown else clause


def join_clauses(clauses: list[str], total: int, separator: str, rest_unit: str) -> str:
    """Join the first SUMMARY_LIMIT of `total` clauses; say how many more there were (「…ほか5件」).

    Callers pass only the clauses that will be shown, so a 100,000-record input
    never builds 100,000 strings.
    """
    if total == 0:
        return EMPTY_SUMMARY
    text = separator.join(clauses[:SUMMARY_LIMIT])
    hidden = total - SUMMARY_LIMIT
    if hidden > 0:
        text += f"{separator}…ほか{hidden}{rest_unit}"
    return text
