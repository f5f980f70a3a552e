"""RFC 3339 instants with an offset, or local date-times read in an IANA zone."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from generated.errors import InvalidInputError


def zone(name: str, where: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidInputError(f"{where}: {name!r} is not an IANA time zone") from None


def instant(value: str, tz: ZoneInfo | None, where: str) -> datetime:
    """An aware datetime; a local value takes `tz`, and without one it is an error."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInputError(f"{where}: {value!r} is not an RFC 3339 date-time") from None
    if "T" not in value and " " not in value:
        raise InvalidInputError(f"{where}: {value!r} has no time of day")
    if parsed.tzinfo is None:
        if tz is None:
            raise InvalidInputError(f"{where}: {value!r} needs a UTC offset")
        parsed = parsed.replace(tzinfo=tz)
    try:
        parsed.astimezone(UTC)
    except (OverflowError, ValueError):
        raise InvalidInputError(f"{where}: {value!r} is out of the supported range in UTC") from None
    return parsed


def utc_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
