"""A concession: 「全員来てほしいけど無理なら3人」 — the count after it is the condition, and more is better."""

from __future__ import annotations

from generated.attendance.models import FinalizeMode, TieBreaker
from handlers.attendance.core.grammar.counts import count, count_after
from handlers.attendance.core.grammar.state import Utterance
from handlers.attendance.core.grammar.vocabulary import vocabulary
from handlers.attendance.core.policy import PolicyFields
from handlers.attendance.core.reading import Reading, unsure

PREFER_MORE = PolicyFields(mode=FinalizeMode.BEST_SCORE, tie_breaker=TieBreaker.highest_score, auto_finalize=False)
"""A fallback count is the least the organiser accepts: finalise on the slot most can attend."""


def concession(u: Utterance) -> Reading | None:
    """Matcher: the fallback count of a concession, BEST_SCORE, and a question confirming it.

    A short concession with no count (全員揃わなければ中止) restates the condition and is no fallback;
    a soft one (無理なら) without a count asks for it."""
    state, v = u.state, vocabulary()
    m = v.concession_soft.search(state.s)
    soft = m is not None
    if m is None:
        m = v.concession_short.search(state.s)
    if m is None:
        return None
    k = count_after(state, m.end(), u.n)
    if k is None:
        if not soft:
            return None
        state.questions.append("難しい場合は、何人集まれば開催しますか？（最低○人／○○さんは必須 など）")
        return unsure("concession.no_count")
    if state.keys(u.required):
        state.questions.append(
            f"必須の方の指定と「難しければ{k}人」を1つのルールにはできません。成立条件を1つに絞って教えてください。"
        )
        return unsure("concession.required")
    reading = count(state, k, u.n, 0.65, "concession.fallback")
    if reading.pattern == "count.impossible":
        return reading
    wish = v.wish_end.sub("", state.original(0, m.start()))
    state.questions.append(
        f"成立条件を「{k}人以上」とし、全員の回答後に参加者の最も多い候補で確定する、でよいですか？"
        + (f"（「{wish}」は希望として扱います）" if wish else "")
    )
    reading.confidence = min(reading.confidence, 0.65)
    reading.pattern = "concession.fallback"
    reading.policy = PREFER_MORE.copy()
    return reading
