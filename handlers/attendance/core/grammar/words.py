"""Wording without a count: everyone (全員参加必須), anyone (誰か), and the ambiguous rest."""

from __future__ import annotations

from generated.attendance.models import RuleType
from handlers.attendance.core.grammar.state import Utterance
from handlers.attendance.core.grammar.vocabulary import vocabulary
from handlers.attendance.core.reading import Reading, unsure


def all_words(u: Utterance) -> Reading | None:
    """Matcher: ALL wording (全員参加必須, 全員が揃わないと, 山田さん以外全員); a soft 全員 (できれば全員) asks."""
    v, s = vocabulary(), u.state.s
    if v.all_soft.search(s):
        u.state.questions.append("全員必須ですか？それとも一部でもOKですか？")
        u.state.questions.append("一部でもよい場合、最低何人集まれば開催しますか？")
        return unsure("ambiguous.soft_all", 0.6)
    if v.all_except.search(s):
        return Reading(RuleType.ALL, {}, 0.9, "all.except")
    if v.all_negated.search(s):
        return None
    if v.all_strong.search(s):
        return Reading(RuleType.ALL, {}, 0.95, "all.words")
    return None


def any_words(u: Utterance) -> Reading | None:
    """Matcher: ANY wording (誰か, 参加者がいれば, 人数は問わない)."""
    if vocabulary().any_words.search(u.state.s):
        return Reading(RuleType.ANY, {}, 0.95, "any.words")
    return None


def ambiguous(u: Utterance) -> Reading:
    """The last matcher, always a reading: ANY with the questions that fit what was said."""
    state, v = u.state, vocabulary()
    if state.negated:
        said = "、".join(state.negated)
        state.questions.append(f"「{said}」とのことですが、何人集まれば開催しますか？（最低○人／○○さんは必須 など）")
        return unsure("ambiguous.negated", 0.6)
    if v.minna.search(state.s) or v.all_negated.search(state.s):
        state.questions.append("「みんな」の具体的な対象者を教えてください")
        state.questions.append("全員必須ですか？それとも一部でもOKですか？")
        return unsure("ambiguous.minna", 0.6)
    state.questions.append("何人集まれば開催しますか？（全員必須／最低○人／○○さんは必須 など）")
    return unsure("ambiguous.unknown")
