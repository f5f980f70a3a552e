"""Typed records shared by core/ and store/ (both import this module; it imports neither)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Options"]


@dataclass(frozen=True, slots=True)
class Options:
    """A duplicate search's tolerances (core.duplicates searches with them, store.checks records them)."""

    date_tolerance_days: int = 0
    amount_tolerance_abs: float = 0.0
    amount_tolerance_pct: float = 0.0
    min_similarity_score: float = 0.8
