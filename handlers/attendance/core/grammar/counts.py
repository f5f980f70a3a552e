"""Counts: a threshold k over the scope normalised, relative counts, explicit k of n, a plain threshold.

`count` is where every count becomes a rule: k = 1 is ANY, k = n is ALL, an impossible k is ANY
with a question. The matchers here (relative, explicit, threshold) only find the count.
"""

from __future__ import annotations

import re

from generated.attendance.models import RuleType
from handlers.attendance.core.grammar.state import State, Utterance
from handlers.attendance.core.grammar.vocabulary import FractionKind, vocabulary
from handlers.attendance.core.numbers import fraction_of, half_of, majority_of
from handlers.attendance.core.reading import Reading, unsure


def count(state: State, k: int, n: int, confidence: float, pattern: str) -> Reading:
    """A threshold k over n invitees, normalised: 1 → ANY, n → ALL, impossible → ANY + question."""
    if k < 1:
        state.questions.append(f"成立に必要な人数が{k}人になります。何人以上集まれば開催しますか？")
        return unsure("count.impossible")
    if n <= 0 or k > n:
        state.questions.append(f"{k}人以上とありますが、対象の招待者は{max(n, 0)}人です。人数を確認してください。")
        return unsure("count.impossible")
    if k == 1:
        return Reading(RuleType.ANY, {}, 0.95, "any.one")
    if k == n:
        return Reading(RuleType.ALL, {}, 0.9, "all.k_equals_n")
    return Reading(RuleType.K_OF_N, {"k": k, "n": n}, confidence, pattern)


def relative_k(m: re.Match[str], kind: FractionKind, n: int) -> int | None:
    """k for one relative count; None when it is not a count (3分の4). 0% or 0割 gives 0 (asked later)."""
    if kind == "minus":
        return n - int(m.group(1))
    if kind == "majority":
        return majority_of(n)
    if kind == "half":
        return half_of(n)
    if kind == "fraction":
        den, num = int(m.group(1)), int(m.group(2))
        if den == 0 or num > den:
            return None
        return fraction_of(n, num, den) if num else 0
    num = int(m.group(1))
    return fraction_of(n, num, 10 if kind == "tenths" else 100) if num else 0


def count_after(state: State, pos: int, n: int) -> int | None:
    """The first count (N人, 半数, 全員-1, …) at or after `pos`, resolved against n."""
    v = vocabulary()
    found: tuple[int, int] | None = None
    m = v.threshold.search(state.s, pos)
    if m is not None:
        found = (m.start(), int(m.group(1)))
    for fraction in v.fractions:
        f = fraction.pattern.search(state.s, pos)
        if f is not None and (found is None or f.start() < found[0]):
            k = relative_k(f, fraction.kind, n)
            if k is not None:
                found = (f.start(), k)
    return None if found is None else found[1]


def relative_count(state: State, n: int) -> Reading | None:
    """The first relative count that is a count (全員-1, 1人欠けても, 過半数, 半数, 3分の2, 8割), over n."""
    for fraction in vocabulary().fractions:
        m = fraction.pattern.search(state.s)
        if m is None:
            continue
        k = relative_k(m, fraction.kind, n)
        if k is None:
            continue
        return count(state, k, n, 0.9, f"k_of_n.{fraction.kind}")
    return None


def relative(u: Utterance) -> Reading | None:
    """Matcher: a relative count over the scope (全員-1, 1人欠けても, 過半数, 3分の2, 8割)."""
    return relative_count(u.state, u.n)


def explicit(u: Utterance) -> Reading | None:
    """Matcher: an explicit k of n (5人中3人, 3/5, 10人招待して5人以上); a stated n unlike the scope is asked."""
    state, n = u.state, u.n
    for form in vocabulary().explicit_k_of_n:
        m = form.pattern.search(state.s)
        if m is None or m.group(2) is None:
            continue
        a, b = int(m.group(1)), int(m.group(2))
        stated_n, k = (b, a) if form.k_first else (a, b)
        if form.k_first and stated_n != n:
            return _slash(state, k, stated_n, n)
        reading = count(state, k, n, 0.95, "k_of_n.explicit_n")
        if stated_n != n and reading.confidence >= 0.7:
            state.questions.append(
                f"{stated_n}人とありますが、対象の招待者は{n}人です。{n}人中{k}人として扱ってよいですか？"
            )
            reading.confidence = 0.65
        return reading
    return None


def _slash(state: State, k: int, den: int, n: int) -> Reading:
    """「2/3」 beside 6 invitees: the fraction of the scope (⌈6·2/3⌉ = 4) or 2 of them. The stricter reading
    that fits is the rule and both are named in the question; when only one fits it stands alone."""
    share = fraction_of(n, k, den) if 0 < k <= den else None
    fits = [x for x in dict.fromkeys((share, k)) if x is not None and 1 <= x <= n]
    if not fits:
        return count(state, k, n, 0.95, "k_of_n.explicit_n")  # asks: the count cannot be met
    reading = count(state, max(fits), n, 0.9, "k_of_n.slash")
    if len(fits) == 2 and reading.confidence >= 0.7:
        state.questions.append(
            f"「{k}/{den}」は招待者{n}人の{den}分の{k}（{share}人以上）ですか？ それとも{k}人以上ですか？"
            f"（いまは{max(fits)}人以上としています）"
        )
    elif fits == [share]:
        reading.pattern = "k_of_n.fraction"
    return reading


def threshold(u: Utterance) -> Reading | None:
    """Matcher: a plain threshold (最低3人, 3人以上集まれば); the last one written counts."""
    counts = [int(m.group(1)) for m in vocabulary().threshold.finditer(u.state.s)]
    if not counts:
        return None
    return count(u.state, counts[-1], u.n, 0.9, "k_of_n.threshold")
