"""The error catalogue as the runtime sees it (generated/errors.py fills it)."""

from __future__ import annotations

from dataclasses import dataclass

from kumitate.errors import ErrorCode

__all__ = ["CatalogueEntry"]


@dataclass(frozen=True, slots=True)
class CatalogueEntry:
    """One code of specs/errors.yaml: its HTTP status, whether a retry can succeed, and its text."""

    code: ErrorCode
    status: int
    retryable: bool
    title: str
    description: str
