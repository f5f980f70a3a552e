"""RFC 3339 instants with an offset, or local date-times read in an IANA zone."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from kumitate.errors import ToolError


def zone(name: str, where: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ToolError(f"{where}: {name!r} is not an IANA time zone", code="INVALID_INPUT") from None


def instant(value: str, tz: ZoneInfo | None, where: str) -> datetime:
    """An aware datetime; a local value takes `tz`, and without one it is an error."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ToolError(f"{where}: {value!r} is not an RFC 3339 date-time", code="INVALID_INPUT") from None
    if "T" not in value and " " not in value:
        raise ToolError(f"{where}: {value!r} has no time of day", code="INVALID_INPUT")
    if parsed.tzinfo is None:
        if tz is None:
            raise ToolError(f"{where}: {value!r} needs a UTC offset", code="INVALID_INPUT")
        parsed = parsed.replace(tzinfo=tz)
    try:
        parsed.astimezone(UTC)
    except (OverflowError, ValueError):
        raise ToolError(f"{where}: {value!r} is out of the supported range in UTC", code="INVALID_INPUT") from None
    return parsed


def utc_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
