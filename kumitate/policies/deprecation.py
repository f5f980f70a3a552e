"""Deprecation signals: RFC 9745 `Deprecation` and RFC 8594 `Sunset` headers, and an MCP warning."""

from __future__ import annotations

from datetime import UTC, date, datetime
from email.utils import format_datetime
from typing import Any


def headers(deprecated: dict[str, Any] | None) -> dict[str, str]:
    """The Deprecation (and, with a sunset date, Sunset) response headers of a deprecated tool (RFC 9745, RFC 8594)."""
    if not deprecated:
        return {}
    since = datetime.combine(date.fromisoformat(str(deprecated["since"])), datetime.min.time(), UTC)
    out = {"Deprecation": f"@{int(since.timestamp())}"}
    if deprecated.get("sunset"):
        sunset = datetime.combine(date.fromisoformat(str(deprecated["sunset"])), datetime.min.time(), UTC)
        out["Sunset"] = format_datetime(sunset, usegmt=True)
    return out


def warning(name: str, deprecated: dict[str, Any] | None) -> str | None:
    """The warning a deprecated tool's result carries: since when, until when, and what replaces it."""
    if not deprecated:
        return None
    text = f"deprecated: {name} is deprecated since {deprecated['since']}"
    if deprecated.get("sunset"):
        text += f" and will be removed after {deprecated['sunset']}"
    if deprecated.get("replacement"):
        text += f"; use {deprecated['replacement']}"
    return text
