"""Duplicate candidate search (seed §10.5) without comparing all pairs.

Two transactions are candidates when their dates are at most
`date_tolerance_days` apart and their amounts match: exactly when no amount
tolerance is given, otherwise within every tolerance given (±yen absolute, and
±% of the mean of the two absolute amounts). This keeps the seed's rule that
both tolerances must hold when both are set, and fixes its quirk that an
absolute tolerance alone still demanded equal amounts. Both amounts must also
have the same sign (money out vs money in: a same-day refund of a purchase is
never its duplicate), and both rows must be of the same kind (振替 or not: a
card settlement is never the duplicate of a purchase). The similarity below
compares absolute amounts, so without the sign rule −5,000 and +5,000 on one
day would score 1.0.

Search: sort by (day, amount); for each transaction look only at the days
within the tolerance and, inside each day, bisect to the amount band that can
possibly match. Cost is O(n log n + n·(days+1)·log m + candidates) instead of
O(n²).

Similarity: 0.4 × date similarity (1 − Δdays / (2 × max(tolerance, 1)))
+ 0.6 × amount similarity (1 − |Δyen| / max(|a1|, |a2|)), rounded half-up to
4 decimals. The seed's date part, 1 − Δdays / max(tolerance, 1), is 0 at the
edge of the tolerance, so two equal amounts one day apart scored 0.6 under a
±1-day search and the default threshold (0.8) never showed them; 1 − Δ/(tol+1)
would fix ±1 only (a ±3 edge scores 0.7). Halving the slope keeps the date
part in [½, 1] inside any tolerance: equal amounts anywhere inside it score
at least 0.4 × ½ + 0.6 = 0.8, the default threshold, while nearer days still
rank higher; the threshold then filters on the amount difference.

The search runs vectorised (numpy) with the score in exact integer arithmetic:
with T = 2·max(tolerance, 1), H = max(|a1|, |a2|), D = ||a1| − |a2||, the score
is (2·(T − Δdays)·H + 3·(H − D)·T) / (5·T·H), so half-up rounding to 4
decimals is one integer floor division. Away from an exact tie this equals
the Decimal computation of `similarity` (whose 28-digit error is far below the
distance to the nearest tie); exact ties are re-scored with `similarity`
itself. Inputs outside the ranges where int64/float64 are exact take the
pure-Python search (`_find_candidates_python`), which is the original code.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from itertools import pairwise
from typing import TYPE_CHECKING

from ..records import Options
from .formatting import round_half_up

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Item:
    id: int
    day: int  # date.toordinal()
    amount: int
    kind: int = 0  # only items of the same kind pair up (the store passes is_transfer)


@dataclass(frozen=True, slots=True)
class Candidate:
    id_1: int  # the smaller id: kept when the pair is confirmed
    id_2: int  # the larger id: marked as the duplicate
    score: float


def same_sign(a1: int, a2: int) -> bool:
    """Both money out, both money in, or both 0 yen."""
    return (a1 > 0) == (a2 > 0) and (a1 < 0) == (a2 < 0)


def amounts_match(a1: int, a2: int, opts: Options) -> bool:
    if not same_sign(a1, a2):
        return False
    diff = abs(a1 - a2)
    if opts.amount_tolerance_abs <= 0 and opts.amount_tolerance_pct <= 0:
        return diff == 0
    if opts.amount_tolerance_abs > 0 and diff > opts.amount_tolerance_abs:
        return False
    return not (opts.amount_tolerance_pct > 0 and diff * 200 > opts.amount_tolerance_pct * (abs(a1) + abs(a2)))


def is_potential_duplicate(t1: Item, t2: Item, opts: Options) -> bool:
    return (
        t1.kind == t2.kind
        and abs(t1.day - t2.day) <= opts.date_tolerance_days
        and amounts_match(t1.amount, t2.amount, opts)
    )


def date_span(tolerance: int) -> int:
    """The Δdays at which the date similarity would reach 0: twice the tolerance, so its edge scores ½."""
    return 2 * max(tolerance, 1)


def similarity(t1: Item, t2: Item, opts: Options) -> float:
    date_sim = 1 - Decimal(abs(t1.day - t2.day)) / Decimal(date_span(opts.date_tolerance_days))
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
    found = search(
        [t.id for t in items], [t.day for t in items], [t.amount for t in items], opts, [t.kind for t in items]
    )
    if found is None:
        return _find_candidates_python(items, opts)
    return [Candidate(a, b, s) for a, b, s in zip(*found, strict=True)]


#: amounts (yen) and tolerances up to which every int64/float64 step below is exact
_MAX_AMOUNT = 2**40
_MAX_DAYS = 10_000
#: pairs expanded at once (bounds the memory of a very loose search)
_CHUNK_PAIRS = 2_000_000


def search(
    ids: Sequence[int],
    days: Sequence[int],
    amounts: Sequence[int],
    opts: Options,
    kinds: Sequence[int] | None = None,
) -> tuple[list[int], list[int], list[float]] | None:
    """`find_candidates` on columns: (id_1s, id_2s, scores), best first; None when out of the exact range.

    `kinds` (default: all 0) is each item's kind; only items of the same kind pair up.
    """
    import numpy as np

    tol, tol_abs, tol_pct = opts.date_tolerance_days, opts.amount_tolerance_abs, opts.amount_tolerance_pct
    if not (
        type(tol) is int
        and 0 <= tol <= _MAX_DAYS
        and all(isinstance(v, int | float) and -_MAX_AMOUNT < v < _MAX_AMOUNT for v in (tol_abs, tol_pct))
        and tol_pct < 200
    ):
        return None
    n = len(ids)
    if n < 2:
        return [], [], []
    day_in = np.asarray(days, dtype=np.int64)
    amount_in = np.asarray(amounts, dtype=np.int64)
    id_in = np.asarray(ids, dtype=np.int64)
    largest = int(np.abs(amount_in).max())
    span = int(day_in.max()) - int(day_in.min())
    width = int(amount_in.max()) - int(amount_in.min()) + 1
    if largest >= _MAX_AMOUNT or 100_005 * date_span(tol) * (largest + 1) >= 2**62 or (span + tol + 2) * width >= 2**62:
        return None  # some int64 step below could overflow
    order = np.lexsort((id_in, amount_in, day_in))  # by (day, amount, id)
    day, amount, tid = day_in[order], amount_in[order], id_in[order]
    kind = None if kinds is None else np.asarray(kinds, dtype=np.int64)[order]
    sign = np.sign(amount)

    # the same per-transaction amount band as `_band` (float64 = Python float), as whole yen
    exact = tol_abs <= 0 and tol_pct <= 0
    if exact:
        band = np.zeros(n)
    else:
        band = np.full(n, float(tol_abs) if tol_abs > 0 else float("inf"))
        if tol_pct > 0:
            p = tol_pct / 100.0
            band = np.minimum(band, p * np.abs(amount) / (1 - p / 2) + 1)
    low = np.ceil(amount - band)
    high = np.floor(amount + band)
    amin, amax = int(amount.min()), int(amount.max())
    empty = (low > high) | (low > amax) | (high < amin)
    low_yen = np.clip(low, amin, amax).astype(np.int64) - amin
    high_yen = np.clip(high, amin, amax).astype(np.int64) - amin
    base = day - int(day.min())
    key = base * width + (amount - amin)  # sorted: (day, amount) in one int64
    position = np.arange(n, dtype=np.int64)

    out_i: list[IntArray] = []
    out_j: list[IntArray] = []
    for offset in range(tol + 1):
        row = (base + offset) * width
        lo = np.searchsorted(key, row + low_yen, side="left")
        hi = np.searchsorted(key, row + high_yen, side="right")
        if offset == 0:
            lo = np.maximum(lo, position + 1)  # same day: only the later ones in sort order
        counts = np.where(empty, 0, np.maximum(hi - lo, 0))
        for start, stop in _chunks(counts):
            c = counts[start:stop]
            total = int(c.sum())
            if total == 0:
                continue
            first = np.cumsum(c) - c
            i = np.repeat(position[start:stop], c)
            j = np.arange(total, dtype=np.int64) - np.repeat(first - lo[start:stop], c)
            a1, a2 = amount[i], amount[j]
            diff = np.abs(a1 - a2)
            if exact:
                ok = diff == 0
            else:
                ok = sign[i] == sign[j]  # a refund never duplicates the purchase
                if tol_abs > 0:
                    ok &= ~(diff > tol_abs)
                if tol_pct > 0:
                    ok &= ~(diff * 200 > tol_pct * (np.abs(a1) + np.abs(a2)))
            if kind is not None:
                ok &= kind[i] == kind[j]
            out_i.append(i[ok])
            out_j.append(j[ok])
    if not out_i:
        return [], [], []
    i = np.concatenate(out_i)
    j = np.concatenate(out_j)

    t = date_span(tol)
    abs1, abs2 = np.abs(amount[i]), np.abs(amount[j])
    high_abs = np.maximum(abs1, abs2)
    gap = np.abs(abs1 - abs2)
    zero = high_abs == 0
    high_abs[zero] = 1  # both 0 yen: amount similarity 1
    gap[zero] = 0
    num = 2 * (t - (day[j] - day[i])) * high_abs + 3 * (high_abs - gap) * t
    den = 5 * t * high_abs  # score = num / den, exactly
    # half-up to 4 decimals: floor(10⁴·num/den + ½) = (2·10⁴·num + den) // (2·den); remainder 0 = a tie
    quotient, remainder = np.divmod(20000 * num + den, 2 * den)
    score = quotient / 10000.0
    ties = np.flatnonzero(remainder == 0)
    for k in ties.tolist():  # exactly half-way: let Decimal decide, as `similarity` always did
        score[k] = similarity(
            Item(0, int(day[i[k]]), int(amount[i[k]])), Item(0, int(day[j[k]]), int(amount[j[k]])), opts
        )
    keep = score >= opts.min_similarity_score
    id1 = np.minimum(tid[i], tid[j])[keep]
    id2 = np.maximum(tid[i], tid[j])[keep]
    score = score[keep]
    ranked = np.lexsort((id2, id1, -score))
    return id1[ranked].tolist(), id2[ranked].tolist(), score[ranked].tolist()


def _chunks(counts: IntArray) -> list[tuple[int, int]]:
    """Split positions so that each slice expands to at most about _CHUNK_PAIRS pairs."""
    import numpy as np

    total = int(counts.sum())
    if total <= _CHUNK_PAIRS:
        return [(0, len(counts))]
    ends = np.searchsorted(np.cumsum(counts), np.arange(_CHUNK_PAIRS, total, _CHUNK_PAIRS), side="left") + 1
    bounds = [0, *sorted(set(ends.tolist())), len(counts)]
    return [(a, b) for a, b in pairwise(bounds) if b > a]


def _find_candidates_python(items: list[Item], opts: Options) -> list[Candidate]:
    """The original pure-Python window search: for inputs outside the vectorised search's exact range."""
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
                if t1.kind == t2.kind and amounts_match(t1.amount, t2.amount, opts):
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
