"""Alternatives of named groups: 「山田&田中 か 佐藤&鈴木 のどれかが揃えばOK」,
「山田さんと田中さん、または佐藤さんと鈴木さんが揃えばOK」.

Names joined by と / & / ・ form a group that must be complete (min = its size);
groups joined by か / または / もしくは / あるいは are alternatives: GROUP_ANY.
A group is named as the organiser wrote it (「A&B」, 「山田さんと田中さん」): that is what a
person reads back in a confirmation. Folding is only for matching; two alternatives
are the same group when they name the same people, however they are written.
The same words can also bind the other way (「山田さんと田中さんか佐藤さん」 may mean
山田 with 田中 or 佐藤). That is only asked when it matters: alternatives of
different sizes joined by a bare か/または with no comma to mark the split. Then
the rule is the reading where と binds first and the question names the groups
of both readings. Equal-sized alternatives (pairs or pairs, as in the examples
above) and comma-marked splits (「…、または佐藤さん」) have one reading.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from typing import Literal, NamedTuple

from generated.attendance.models import RuleType
from handlers.attendance.core.names import Mention
from handlers.attendance.core.reading import Reading, RuleGroup, unsure
from handlers.attendance.core.text import rx

_AND = r"[、,]?(?:と|&|and|・|および|及び|かつ)[、,]?"
_OR = r"[、,]?(?:か|または|もしくは|あるいは|or)[、,]?"
_PRESENCE = (
    r"(?:が|さえ|は|で)?(?:揃えば|そろえば|揃ったら|そろったら|揃う|そろう|いれば|いたら|来られれば|来れれば|来れば"
    r"|参加できれば|出席できれば|参加|出席|ok)"
)
_TAIL = (
    r"(?:の)?(?:どれか|どちらか|どっちか|いずれか)(?:の)?(?:1つ|1組|組|ペア|組み合わせ)?(?:" + _PRESENCE + ")?"
    r"|" + _PRESENCE
)
MAX_GROUPS = 100  # the schema's maxItems for rule.groups
MAX_NAME = 100  # the schema's maxLength for a group's name


Join = Literal["and", "or"]


class Gap(NamedTuple):
    """What stands between two names of a chain (と, 、または) and which join it is."""

    text: str
    kind: Join


class Chain(NamedTuple):
    """Names joined by and/or words; `gaps[i]` stands between names i and i+1; the construction ends at `end`."""

    names: list[Mention]
    gaps: list[Gap]
    end: int


def clipped(name: str) -> str:
    """A group name within the schema's length: long wording is cut and marked with …."""
    return name if len(name) <= MAX_NAME else name[: MAX_NAME - 1] + "…"


def named_groups(
    s: str,
    mentions: list[Mention],
    questions: list[str],
    other_condition: Callable[[list[str], int, int], bool],
    wording: Callable[[int, int], str],
) -> Reading | None:
    """GROUP_ANY over alternatives of named groups, or None when the text has no such construction.

    `wording(start, end)` is the text as written behind folded s[start:end]: it names the groups."""
    found = _chain(s, mentions)
    if found is None:
        return None
    chain, gaps, end = found.names, found.gaps, found.end
    if any(len(m.keys) != 1 for m in chain):
        return unsure("named_groups.unresolved")  # the names are already in missing
    tight = _groups(_split(chain, gaps, "or"), lambda members: wording(members[0].start, members[-1].end))
    if len(tight) > MAX_GROUPS:
        questions.append(
            f"{len(tight)}組の組み合わせは1つのルールにできません（最大{MAX_GROUPS}組）。条件を絞ってください。"
        )
        return unsure("named_groups.too_many")
    phrase = _phrase(tight)
    keys = list(dict.fromkeys(k for g in tight for k in g["any_of_invitee_keys"]))
    if other_condition(keys, chain[0].start, end):
        questions.append(f"「{phrase}」と別の条件を1つのルールにはできません。成立条件を1つに絞って教えてください。")
        return unsure("named_groups.combined")
    sizes = {len(g) for g in _split(chain, gaps, "or")}
    marked = all("、" in gap.text or "," in gap.text for gap in gaps if gap.kind == "or")
    if len(sizes) == 1 or marked:
        return Reading(RuleType.GROUP_ANY, {"groups": tight}, 0.85, "group.named_alternatives")
    slots = _split(chain, gaps, "and")  # or-first: one pick from every and-joined slot
    if math.prod(len(slot) for slot in slots) > MAX_GROUPS:  # never build an exponential product
        questions.append(f"「{phrase}」のどれかがそろえば成立ですか？（組み合わせを確認してください）")
        return Reading(RuleType.GROUP_ANY, {"groups": tight}, 0.6, "group.named_alternatives_ambiguous")
    joiner = next(
        wording(a.end, b.start) for a, b, gap in zip(chain, chain[1:], gaps, strict=True) if gap.kind == "and"
    )
    loose = _groups(
        [list(pick) for pick in itertools.product(*slots)],
        lambda members: joiner.strip("、,").join(wording(m.start, m.end) for m in members),
    )
    if _same(tight, loose):
        return Reading(RuleType.GROUP_ANY, {"groups": tight}, 0.85, "group.named_alternatives")
    questions.append(
        f"「{phrase}」のどれかがそろえば成立ですか？ それとも「{_phrase(loose)}」のどれかですか？（いまは前者としています）"
    )
    return Reading(RuleType.GROUP_ANY, {"groups": tight}, 0.6, "group.named_alternatives_ambiguous")


def _join(gap: str) -> Join | None:
    if rx(_AND).fullmatch(gap):
        return "and"
    return "or" if rx(_OR).fullmatch(gap) else None


def _chain(s: str, mentions: list[Mention]) -> Chain | None:
    """The first run of names joined by and/or words, with both kinds, followed by a presence word."""
    chain: list[Mention] = []
    gaps: list[Gap] = []
    for mention in [*mentions, None]:
        if mention is not None and chain:
            gap = s[chain[-1].end : mention.start]
            kind = _join(gap)
            if kind is not None:
                chain.append(mention)
                gaps.append(Gap(gap, kind))
                continue
        if {gap.kind for gap in gaps} == {"and", "or"}:
            tail = rx(_TAIL).match(s, chain[-1].end)
            if tail is not None and not re.search(r"\d", tail.group()):
                return Chain(chain, gaps, tail.end())
        chain, gaps = ([mention], []) if mention is not None else ([], [])
    return None


def _split(chain: list[Mention], gaps: list[Gap], at: Join) -> list[list[Mention]]:
    """The chain cut at every gap of kind `at`."""
    parts = [[chain[0]]]
    for mention, gap in zip(chain[1:], gaps, strict=True):
        if gap.kind == at:
            parts.append([mention])
        else:
            parts[-1].append(mention)
    return parts


def _groups(alternatives: list[list[Mention]], name: Callable[[list[Mention]], str]) -> list[RuleGroup]:
    """One complete group per alternative (min = its people), repeated alternatives (the same people) once.

    `name` gives the wording: an alternative of the text is its span as written; one picked across
    the and-joined slots (the other reading, only ever shown in a question) joins its names as
    written with the text's own and-word."""
    out: list[RuleGroup] = []
    seen: set[frozenset[str]] = set()
    for members in alternatives:
        keys = list(dict.fromkeys(m.keys[0] for m in members))
        if frozenset(keys) in seen:
            continue
        seen.add(frozenset(keys))
        out.append(RuleGroup(name=clipped(name(members)), min=len(keys), any_of_invitee_keys=keys))
    return out


def _same(a: list[RuleGroup], b: list[RuleGroup]) -> bool:
    return {frozenset(g["any_of_invitee_keys"]) for g in a} == {frozenset(g["any_of_invitee_keys"]) for g in b}


def _phrase(groups: list[RuleGroup]) -> str:
    return "」か「".join(g["name"] for g in groups)
