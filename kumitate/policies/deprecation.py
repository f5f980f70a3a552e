"""Deprecation signals: RFC 9745 `Deprecation` and RFC 8594 `Sunset` headers, and an MCP warning."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from email.utils import format_datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Deprecation:
    """A tool's spec `deprecated`: since when (ISO date), until when it is served, and what replaces it."""

    since: str
    sunset: str | None = None
    replacement: str | None = None

    @classmethod
    def parse(cls, declared: Mapping[str, Any] | None) -> Deprecation | None:
        """The record of a spec's `deprecated` mapping (None: not deprecated)."""
        if not declared:
            return None
        sunset = declared.get("sunset")
        return cls(str(declared["since"]), None if sunset is None else str(sunset), declared.get("replacement"))


def _midnight(day: str) -> datetime:
    return datetime.combine(date.fromisoformat(day), datetime.min.time(), UTC)


def headers(deprecated: Deprecation | None) -> dict[str, str]:
    """The Deprecation (and, with a sunset date, Sunset) response headers of a deprecated tool (RFC 9745, RFC 8594)."""
    if deprecated is None:
        return {}
    out = {"Deprecation": f"@{int(_midnight(deprecated.since).timestamp())}"}
    if deprecated.sunset:
        out["Sunset"] = format_datetime(_midnight(deprecated.sunset), usegmt=True)
    return out


def warning(name: str, deprecated: Deprecation | None) -> str | None:
    """The warning a deprecated tool's result carries: since when, until when, and what replaces it."""
    if deprecated is None:
        return None
    text = f"deprecated: {name} is deprecated since {deprecated.since}"
    if deprecated.sunset:
        text += f" and will be removed after {deprecated.sunset}"
    if deprecated.replacement:
        text += f"; use {deprecated.replacement}"
    return text
