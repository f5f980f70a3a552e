"""Duplicate candidate search (seed §10.5) without comparing all pairs.

Two transactions are candidates when their dates are at most
`date_tolerance_days` apart and their amounts match: exactly when no amount
tolerance is given, otherwise within every tolerance given (±yen absolute, and
±% of the mean of the two absolute amounts). This keeps the seed's rule that
both tolerances must hold when both are set, and fixes its quirk that an
absolute tolerance alone still demanded equal amounts.

Search: sort by (day, amount); for each transaction look only at the days
within the tolerance and, inside each day, bisect to the amount band that can
possibly match. Cost is O(n log n + n·(days+1)·log m + candidates) instead of
O(n²).

Similarity (seed `_calculate_similarity`): 0.4 × date similarity
(1 − Δdays / max(tolerance, 1)) + 0.6 × amount similarity
(1 − |Δyen| / max(|a1|, |a2|)), rounded half-up to 4 decimals.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from decimal import Decimal

from .formatting import round_half_up


@dataclass(frozen=True, slots=True)
class Options:
    date_tolerance_days: int = 0
    amount_tolerance_abs: float = 0.0
    amount_tolerance_pct: float = 0.0
    min_similarity_score: float = 0.8


@dataclass(frozen=True, slots=True)
class Item:
    id: int
    day: int  # date.toordinal()
    amount: int


@dataclass(frozen=True, slots=True)
class Candidate:
    id_1: int  # the smaller id: kept when the pair is confirmed
    id_2: int  # the larger id: marked as the duplicate
    score: float


def amounts_match(a1: int, a2: int, opts: Options) -> bool:
    diff = abs(a1 - a2)
    if opts.amount_tolerance_abs <= 0 and opts.amount_tolerance_pct <= 0:
        return diff == 0
    if opts.amount_tolerance_abs > 0 and diff > opts.amount_tolerance_abs:
        return False
    return not (opts.amount_tolerance_pct > 0 and diff * 200 > opts.amount_tolerance_pct * (abs(a1) + abs(a2)))


def is_potential_duplicate(t1: Item, t2: Item, opts: Options) -> bool:
    return abs(t1.day - t2.day) <= opts.date_tolerance_days and amounts_match(t1.amount, t2.amount, opts)


def similarity(t1: Item, t2: Item, opts: Options) -> float:
    date_sim = 1 - Decimal(abs(t1.day - t2.day)) / Decimal(max(opts.date_tolerance_days, 1))
    high = max(abs(t1.amount), abs(t2.amount))
    amount_sim = 1 - Decimal(abs(abs(t1.amount) - abs(t2.amount))) / Decimal(high) if high else Decimal(1)
    score = date_sim * Decimal("0.4") + amount_sim * Decimal("0.6")
    return float(round_half_up(score, "0.0001"))


def _band(amount: int, opts: Options) -> float:
    """Largest |Δyen| that could still match `amount` (a superset; the exact test follows)."""
    if opts.amount_tolerance_abs <= 0 and opts.amount_tolerance_pct <= 0:
        return 0.0
    band = float("inf")
    if opts.amount_tolerance_abs > 0:
        band = opts.amount_tolerance_abs
    if opts.amount_tolerance_pct > 0:
        p = opts.amount_tolerance_pct / 100.0
        # Δ ≤ p·(|a1|+|a2|)/2 and |a2| ≤ |a1|+Δ  ⇒  Δ ≤ p·|a1| / (1 − p/2)
        band = min(band, p * abs(amount) / (1 - p / 2) + 1)
    return band


def find_candidates(items: list[Item], opts: Options) -> list[Candidate]:
    """All pairs that match and score at least `min_similarity_score`, best first."""
    ordered = sorted(items, key=lambda t: (t.day, t.amount, t.id))
    days = [t.day for t in ordered]
    amounts = [t.amount for t in ordered]
    day_start: dict[int, int] = {}
    day_end: dict[int, int] = {}
    for pos, day in enumerate(days):
        day_start.setdefault(day, pos)
        day_end[day] = pos + 1
    found: list[Candidate] = []
    tol = opts.date_tolerance_days
    for i, t1 in enumerate(ordered):
        band = _band(t1.amount, opts)
        low_amount, high_amount = t1.amount - band, t1.amount + band
        for day in range(t1.day, t1.day + tol + 1):
            if day not in day_start:
                continue
            lo = i + 1 if day == t1.day else day_start[day]
            hi = day_end[day]
            j = bisect_left(amounts, low_amount, lo, hi)
            while j < hi and amounts[j] <= high_amount:
                t2 = ordered[j]
                if amounts_match(t1.amount, t2.amount, opts):
                    score = similarity(t1, t2, opts)
                    if score >= opts.min_similarity_score:
                        a, b = sorted((t1.id, t2.id))
                        found.append(Candidate(a, b, score))
                j += 1
    found.sort(key=lambda c: (-c.score, c.id_1, c.id_2))
    return found


def find_candidates_pairwise(items: list[Item], opts: Options) -> list[Candidate]:
    """The O(n²) reference the benchmark and tests compare against."""
    found = []
    for i, t1 in enumerate(items):
        for t2 in items[i + 1 :]:
            if is_potential_duplicate(t1, t2, opts):
                score = similarity(t1, t2, opts)
                if score >= opts.min_similarity_score:
                    a, b = sorted((t1.id, t2.id))
                    found.append(Candidate(a, b, score))
    found.sort(key=lambda c: (-c.score, c.id_1, c.id_2))
    return found
