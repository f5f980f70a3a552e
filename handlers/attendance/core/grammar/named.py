"""Named people as alternatives: 「山田&田中 か 佐藤&鈴木」 (alternatives.py) and 「山田さんか田中さんのどちらか」."""

from __future__ import annotations

from generated.attendance.models import RuleType
from handlers.attendance.core.alternatives import clipped, named_groups
from handlers.attendance.core.grammar.state import Item, State, Utterance
from handlers.attendance.core.grammar.vocabulary import vocabulary
from handlers.attendance.core.names import Mention
from handlers.attendance.core.reading import Reading, RuleGroup, unsure


def other_condition(state: State, items: list[Item], keys: list[str], start: int, end: int) -> bool:
    """Whether anything outside s[start:end] states a further condition (another required name, a count)."""
    v = vocabulary()
    others = [key for key in state.keys(items) if key not in keys]
    counts = [c for c in v.threshold.finditer(state.s) if c.end() <= start or c.start() >= end]
    return bool(others or counts or v.additional.search(state.s) or v.total.search(state.s))


def alternatives(u: Utterance) -> Reading | None:
    """Matcher: alternatives of named groups (山田&田中 か 佐藤&鈴木) → GROUP_ANY of complete groups."""
    state = u.state
    return named_groups(
        state.s,
        state.mentions,
        state.questions,
        lambda keys, start, end: other_condition(state, u.required, keys, start, end),
        state.original,
    )


def _or_chain(state: State) -> list[Mention]:
    """The first run of two or more names joined by か/または (山田さんか田中さん), else []."""
    chain: list[Mention] = []
    for mention in state.mentions:
        if chain and vocabulary().name_or.fullmatch(state.s, chain[-1].end, mention.start):
            chain.append(mention)
            continue
        if len(chain) >= 2:
            break
        chain = [mention]
    return chain if len(chain) >= 2 else []


def named_any(u: Utterance) -> Reading | None:
    """Matcher: 「山田さんか田中さんのどちらか」, any one (or k) of the named invitees → GROUP_ANY over them."""
    state = u.state
    chain = _or_chain(state)
    if not chain:
        return None
    tail = vocabulary().name_or_tail.match(state.s, chain[-1].end)
    if tail is None:
        return None
    names = clipped(state.original(chain[0].start, chain[-1].end))  # as written: 山田さんか田中さん
    if any(len(m.keys) != 1 for m in chain):
        return unsure("named_any.unresolved")  # already reported as missing
    keys = list(dict.fromkeys(m.keys[0] for m in chain))
    k = int(tail.group(1) or tail.group(2) or 1)
    if other_condition(state, u.required, keys, chain[0].start, tail.end()):
        state.questions.append(
            f"「{names}のどちらか」と別の条件を1つのルールにはできません。成立条件を1つに絞って教えてください。"
        )
        return unsure("named_any.combined")
    if k < 1 or k > len(keys):
        state.questions.append(f"{names}のうち{k}人とありますが、名前は{len(keys)}人です。人数を確認してください。")
        return unsure("named_any.impossible")
    group = RuleGroup(name=names, min=k, any_of_invitee_keys=keys)
    return Reading(RuleType.GROUP_ANY, {"groups": [group]}, 0.85, "group.named_any")
