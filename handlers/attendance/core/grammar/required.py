"""Required people: 「山田さんと田中さんは必須、あと2人」 → REQUIRED_PLUS_QUORUM, 「全員必須」 → ALL."""

from __future__ import annotations

import re
from typing import NamedTuple

from generated.attendance.models import RuleType
from handlers.attendance.core.grammar.counts import relative_count
from handlers.attendance.core.grammar.state import State, Utterance
from handlers.attendance.core.grammar.vocabulary import vocabulary
from handlers.attendance.core.reading import Reading, unsure


class Quorum(NamedTuple):
    """How many others must come besides the required, how sure that is and which wording said it."""

    extra: int
    confidence: float
    pattern: str


def required(u: Utterance) -> Reading | None:
    """Matcher: name lists before/after a required word → REQUIRED_PLUS_QUORUM (or ALL for 全員必須)."""
    state, items = u.state, u.required
    if not items:
        return None
    if any(i.kind == "all" for i in items) and not any(i.kind in ("person", "group") for i in items):
        return Reading(RuleType.ALL, {}, 0.95, "all.required_everyone")
    keys = state.keys(items)
    if not keys:
        return unsure("required.unresolved")
    pool = u.n - len(keys)
    quorum = _quorum(state, len(keys), pool)
    if quorum.extra < 0 or quorum.extra > pool:
        state.questions.append(
            f"必須の{len(keys)}人のほかに{quorum.extra}人とありますが、ほかの招待者は{pool}人です。人数を確認してください。"
        )
        return unsure("required.impossible")
    return Reading(
        RuleType.REQUIRED_PLUS_QUORUM,
        {"required_invitee_keys": keys, "min_additional": quorum.extra},
        quorum.confidence,
        quorum.pattern,
        required=keys,
    )


def _quorum(state: State, required: int, pool: int) -> Quorum:
    """The others to come: あと2人, 全員で4人 (a total), 1人欠けても (of the others), else a bare count."""
    v = vocabulary()
    if (m := v.additional.search(state.s)) is not None:
        return Quorum(int(m.group(1)), 0.9, "required.plus_additional")
    if (t := v.total.search(state.s)) is not None:
        return Quorum(int(t.group(1) or t.group(2)) - required, 0.85, "required.total")
    relative = relative_count(state, pool)
    if relative is not None and relative.params.get("k") is not None:
        return Quorum(relative.params["k"], 0.9, "required.relative")
    return _bare_count(state, required, pool)


def _bare_count(state: State, required: int, pool: int) -> Quorum:
    """「山田さんは必須、3人」: 3 others, or 3 in all? When both fit, the stricter (others) is kept and asked."""
    counts = [int(c.group(1)) for c in vocabulary().any_count.finditer(state.s) if not _names_the_list(state, c)]
    if not counts:
        return Quorum(0, 0.85, "required.only")
    extra = counts[-1]
    total = extra - required
    if not 0 <= total <= pool:
        return Quorum(extra, 0.9, "required.count")
    if extra > pool:  # only the total reading fits (山田さんは必須、6人 with 6 invitees)
        return Quorum(total, 0.9, "required.count")
    state.questions.append(
        f"{extra}人は必須の{required}人を含めた合計ですか？それとも必須の{required}人のほかに{extra}人ですか？"
        f"（いまは「ほかに{extra}人」としています）"
    )
    return Quorum(extra, 0.9, "required.count_ambiguous")


def _names_the_list(state: State, count: re.Match[str]) -> bool:
    """「山田さん、田中さんの2人は必須」: a count that only sizes the required list."""
    before = state.s[count.start() - 1 : count.start()]
    return before == "の" and vocabulary().required_after.match(state.s, count.end()) is not None
