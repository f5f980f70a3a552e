"""The grammar's table: which matchers run, in which order, and what happens around them.

`read` finds the excluded, optional and required lists first (they hold for every reading), runs
the matchers of MATCHERS in order (the first reading wins; `ambiguous` answers when none does),
then fits the reading to the scope left after the exclusions.
"""

from __future__ import annotations

from collections.abc import Callable

from handlers.attendance.core.grammar.concession import concession
from handlers.attendance.core.grammar.counts import explicit, relative, threshold
from handlers.attendance.core.grammar.groups import group_any, unknown_groups
from handlers.attendance.core.grammar.named import alternatives, named_any
from handlers.attendance.core.grammar.required import required
from handlers.attendance.core.grammar.state import Item, State, Utterance
from handlers.attendance.core.grammar.vocabulary import vocabulary
from handlers.attendance.core.grammar.words import all_words, ambiguous, any_words
from handlers.attendance.core.reading import Reading, unsure

Matcher = Callable[[Utterance], Reading | None]

MATCHERS: tuple[Matcher, ...] = (
    unknown_groups,
    concession,
    alternatives,
    named_any,
    required,
    group_any,
    relative,
    explicit,
    all_words,
    threshold,
    any_words,
)
"""The order is the grammar: the most specific construction first, since its words also occur in
the general ones. An unknown group stops everything (a count over nobody must be asked, not read
as a plain count). A concession (全員来てほしいけど無理なら3人) contains ALL wording and a count, so
it precedes both. Named alternatives (山田&田中 か 佐藤&鈴木) and a disjunction of names precede
the required list, whose names they share. Required names precede group counts and counts
(山田さんは必須、あと2人 has a count that belongs to the quorum). Group counts precede plain
counts (営業部から2人 has one). Relative counts (全員-1, 1人欠けても) precede explicit k of n and
the ALL wording they contain (全員). ALL wording precedes a threshold (全員必須、3人以上なら… is
asked as a contradiction afterwards, contradiction.py), and a threshold precedes ANY wording
(誰か2人). docs/attendance.md lists the same order."""


def read(state: State, scope_size: int) -> Reading:
    """The reading of one utterance: a rule type and parameters, with excluded and optional keys."""
    v = vocabulary()
    excluded = state.keys(state.marked_lists(v.exclude_after))
    if excluded and len(excluded) >= scope_size:  # a rule needs someone in scope: ask instead
        state.questions.append("除外するとほかに招待者がいなくなります。誰を対象にするか教えてください。")
        excluded = []
    optional = state.keys(state.marked_lists(v.optional_after))
    utterance = Utterance(state, scope_size - len(excluded), _required_items(state))
    reading = next((r for match in MATCHERS if (r := match(utterance)) is not None), None) or ambiguous(utterance)
    reading = _fit_scope(state, reading, set(excluded))
    reading.excluded = excluded
    reading.optional = [k for k in optional if k not in excluded]
    return reading


def _required_items(state: State) -> list[Item]:
    """Every required list: before a required word (山田さんは必須), after one (必須は山田さん), before a
    condition word (山田さんがいれば; groups there are a count's, not required), a group before 全員参加."""
    v = vocabulary()
    items = state.marked_lists(v.required_after, v.required_before)
    items += [i for i in state.marked_lists(v.required_if) if i.kind != "group"]
    for m in v.all_strong.finditer(state.s):  # 営業部は全員参加: the group's members are required
        qualified = state.group_before(m.start())
        if qualified is not None:
            items.append(qualified.item)
    for mention in state.mentions:  # names never placed in a list are still reported when unknown
        if len(mention.keys) != 1:
            state.report(state.person(mention))
    return items


def _fit_scope(state: State, reading: Reading, excluded: set[str]) -> Reading:
    """Excluded invitees leave groups; an excluded required invitee, or a group too small, is asked."""
    if not excluded:
        return reading
    clash = [k for k in reading.params.get("required_invitee_keys", []) if k in excluded]
    if clash:
        names = "、".join(state.d.names[k] for k in clash)
        state.questions.append(f"{names}は必須であり、同時に除外されています。どちらですか？")
        return unsure("scope.required_excluded")
    for group in reading.params.get("groups", []):
        group["any_of_invitee_keys"] = [k for k in group["any_of_invitee_keys"] if k not in excluded]
        size = len(group["any_of_invitee_keys"])
        if group["min"] > size:
            state.questions.append(
                f"「{group['name']}」から{group['min']}人とありますが、除外後の{group['name']}の招待者は{size}人です。人数を確認してください。"
            )
            return unsure("group.impossible")
    return reading
