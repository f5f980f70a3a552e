"""The error catalogue as the runtime sees it (generated/errors.py fills it)."""

from __future__ import annotations

from dataclasses import dataclass

from kumitate.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class CatalogueEntry:
    code: ErrorCode
    status: int
    retryable: bool
    title: str
    description: str
