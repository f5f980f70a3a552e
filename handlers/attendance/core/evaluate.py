"""evaluate_attendance: a rule, the slots and the selections → per-slot state and the decision.

Selections are applied in list order (or by selected_at when every record has
one); for the same invitee and slot the later record wins. Only invitees in the
effective scope count. With allow_multiple_slots_per_invitee false, each
invitee counts for one slot, chosen by conflict_policy. "Earliest" always means
the earliest absolute start instant, whatever offsets or zones the slots use.

A slot whose start is not after `now` has begun or passed: it is still evaluated
and reported (`in_past`), but it is never finalised or recommended.
EARLIEST_VALID ranks valid slots by start first (the seed: 最初に条件を満たしたSlot);
BEST_SCORE and MANUAL by score first. The tie_breaker only orders slots that tie
on that first key.

A rule that save would refuse but whose meaning is clear (k > n, a group too
small, a key outside the scope) is evaluated: its problems are reported in
`rule_problems`, and if no way to meet it is left the decision is `unsatisfiable`
(docs/attendance.md has the table). An `expired` answer is a final "no".
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from generated.attendance.models import RuleType
from generated.errors import InvalidInputError
from handlers.attendance.core.timeutil import instant, utc_text, zone
from handlers.attendance.validate import check_for_evaluation

SELECTED, DECLINED, PENDING = -1, -2, -3


class Attendance(NamedTuple):
    """Who counts for each slot (by slot index), who answered at all, and how many records were ignored."""

    per_slot: list[set[str]]
    answered: set[str]
    ignored: int


def evaluate_attendance(request: dict[str, Any]) -> dict[str, Any]:
    rule, problems = check_for_evaluation(request["rule"])
    slot_policy = rule["slot_policy"]
    policy = rule["finalize_policy"]
    default_tz = zone(slot_policy["timezone"], "rule.slot_policy.timezone")
    now = instant(request["now"], None, "now") if request.get("now") else datetime.now(UTC)
    slots = request["slots"]
    starts = _slot_starts(slots, default_tz)
    slot_index = {s["slot_id"]: i for i, s in enumerate(slots)}

    scope_rule = rule["invitee_scope"]
    excluded = set(scope_rule["exclude_invitee_keys"])
    scope = [k for k in dict.fromkeys(scope_rule["include_invitee_keys"]) if k not in excluded]
    attendees, answered, ignored = _attendees(request["selections"], set(scope), slot_index, slot_policy)

    group_sets = [frozenset(g["any_of_invitee_keys"]) & set(scope) for g in rule["rule"].get("groups", [])]
    reachable = _reachable(rule, scope, group_sets)
    evaluations = [
        _slot(rule, slots[i]["slot_id"], starts[i], now, attendees[i], scope, group_sets, reachable)
        for i in range(len(slots))
    ]
    satisfiable = any(reachable)
    decision = _decide(policy, evaluations, starts, [k for k in scope if k not in answered], satisfiable)
    auto_at = None
    if decision["finalize"] and policy.get("auto_finalize"):
        delay = policy.get("auto_finalize_delay_seconds", 0)
        try:
            auto_at = utc_text(now + timedelta(seconds=delay))
        except OverflowError:
            raise InvalidInputError(f"now plus auto_finalize_delay_seconds ({delay}) is after the year 9999") from None
    return {
        "rule_type": rule["type"],
        "satisfiable": satisfiable,
        "rule_problems": problems,
        "evaluated_at": utc_text(now),
        "slots": evaluations,
        "decision": decision,
        "auto_finalize_at": auto_at,
        "ignored_selections": ignored,
    }


def _slot_starts(slots: list[dict[str, Any]], default_tz: Any) -> list[datetime]:
    starts = []
    seen: set[str] = set()
    for i, slot in enumerate(slots):
        if slot["slot_id"] in seen:
            raise InvalidInputError(f"slots[{i}].slot_id {slot['slot_id']!r} is used twice")
        seen.add(slot["slot_id"])
        tz = zone(slot["timezone"], f"slots[{i}].timezone") if slot.get("timezone") else default_tz
        start = instant(slot["start"], tz, f"slots[{i}].start")
        if slot.get("end") and instant(slot["end"], tz, f"slots[{i}].end") < start:
            raise InvalidInputError(f"slots[{i}].end is before its start")
        starts.append(start)
    return starts


def _ordered(selections: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if selections and all("selected_at" in s for s in selections):
        stamped = [
            (instant(s["selected_at"], None, f"selections[{i}].selected_at"), i) for i, s in enumerate(selections)
        ]
        return [selections[i] for _, i in sorted(stamped)]
    return selections


def _attendees(
    selections: list[dict[str, Any]], scope: set[str], slot_index: dict[str, int], slot_policy: dict[str, Any]
) -> Attendance:
    """Per slot, the set of invitees whose selection counts; who answered; how many records were ignored."""
    state: dict[tuple[str, int], int] = {}
    ignored = 0
    for pos, sel in enumerate(_ordered(selections)):
        key = sel["invitee_key"]
        slot = slot_index.get(sel["slot_id"])
        if slot is None or key not in scope:
            ignored += 1
            continue
        pair = (key, slot)
        status = sel["status"]
        if status == "selected":
            if state.get(pair, PENDING) < 0:
                state[pair] = pos  # a selected run starts here; repeats keep its start
        else:  # an expired invitation is a final "no", like declined: nobody waits for it
            state[pair] = PENDING if status == "pending" else DECLINED
    attendees: list[set[str]] = [set() for _ in slot_index]
    answered: set[str] = set()
    chosen: dict[str, tuple[int, int]] = {}
    multiple = slot_policy["allow_multiple_slots_per_invitee"]
    first = slot_policy["conflict_policy"] == "first_selected"
    for (key, slot), since in state.items():
        if since == PENDING:
            continue
        answered.add(key)
        if since < 0:
            continue
        if multiple:
            attendees[slot].add(key)
            continue
        best = chosen.get(key)
        if best is None or (since < best[0] if first else since > best[0]):
            if best is not None:
                ignored += 1
            chosen[key] = (since, slot)
        else:
            ignored += 1
    for key, (_, slot) in chosen.items():
        attendees[slot].add(key)
    return Attendance(attendees, answered, ignored)


def _reachable(rule: dict[str, Any], scope: list[str], group_sets: list[frozenset[str]]) -> list[bool]:
    """Whether the rule can be met by the invitees in scope (one entry per GROUP_ANY group, else one).

    Only selections of invitees in scope count, so a required invitee or group member outside it
    never attends, and k or a group's min above the people who can attend is never reached.
    """
    params = rule["rule"]
    kind = rule["type"]
    if kind == RuleType.GROUP_ANY:
        return [g["min"] <= len(members) for g, members in zip(params["groups"], group_sets, strict=True)]
    if not scope:
        return [False]
    if kind == RuleType.K_OF_N:
        return [params["k"] <= len(scope)]
    if kind == RuleType.REQUIRED_PLUS_QUORUM:
        required = set(params["required_invitee_keys"])
        return [required <= set(scope) and params["min_additional"] <= len(set(scope) - required)]
    return [True]


def _slot(
    rule: dict[str, Any],
    slot_id: str,
    start: datetime,
    now: datetime,
    who: set[str],
    scope: list[str],
    group_sets: list[frozenset[str]],
    reachable: list[bool],
) -> dict[str, Any]:
    kind = rule["type"]
    params = rule["rule"]
    score = len(who)
    missing: list[str] = []
    groups: list[dict[str, Any]] = []
    if kind == RuleType.ALL:
        missing = [k for k in scope if k not in who]
        shortfall = len(missing)
    elif kind == RuleType.ANY:
        shortfall = 0 if score else 1
    elif kind == RuleType.K_OF_N:
        shortfall = max(0, params["k"] - score)
    elif kind == RuleType.REQUIRED_PLUS_QUORUM:
        required = params["required_invitee_keys"]
        missing = [k for k in required if k not in who]
        additional = score - (len(required) - len(missing))
        shortfall = len(missing) + max(0, params["min_additional"] - additional)
    else:
        shortfall = len(scope) + 1
        for group, members, possible in zip(params["groups"], group_sets, reachable, strict=True):
            count = len(members & who)
            groups.append(
                {
                    "name": group["name"],
                    "min": group["min"],
                    "count": count,
                    "satisfied": count >= group["min"],
                    "satisfiable": possible,
                }
            )
            if possible or not any(reachable):  # the nearest way to a group that can succeed
                shortfall = min(shortfall, max(0, group["min"] - count))
    return {
        "slot_id": slot_id,
        "start_utc": utc_text(start),
        "in_past": start <= now,
        "satisfied": shortfall == 0 and any(reachable),
        "score": score,
        "shortfall": shortfall,
        "missing_required": missing,
        "groups": groups,
    }


_MESSAGES = {
    "no_slots": "候補日時がありません。",
    "no_valid_slot": "条件を満たす候補日時はまだありません。",
    "slot_in_past": "条件を満たす候補日時はすべて開始時刻を過ぎています。新しい候補日時を追加してください。",
    "manual_mode": "手動確定モードです。おすすめの候補を参考に主催者が確定してください。",
    "unsatisfiable": "このルールは対象の招待者では満たせません（rule_problems を参照）。ルールを見直してください。",
}


def _decide(
    policy: dict[str, Any],
    evaluations: list[dict[str, Any]],
    starts: list[datetime],
    pending: list[str],
    satisfiable: bool,
) -> dict[str, Any]:
    mode = policy["mode"]
    tie = policy["tie_breaker"]
    satisfied = [i for i, e in enumerate(evaluations) if e["satisfied"]]
    valid = [i for i in satisfied if not evaluations[i]["in_past"]]
    if mode == "EARLIEST_VALID":
        # the mode's key first; among slots starting at the same instant, highest_score and
        # earliest_slot both fall back to the higher score, then input order
        valid.sort(key=lambda i: (starts[i], -evaluations[i]["score"], i))
    else:
        # BEST_SCORE / MANUAL: score first; among equal scores both tie-breakers mean the earlier start
        valid.sort(key=lambda i: (-evaluations[i]["score"], starts[i], i))
    candidates = [evaluations[i]["slot_id"] for i in valid]
    best = candidates[0] if candidates else None
    decision: dict[str, Any] = {
        "finalize": False,
        "slot_id": None,
        "recommended_slot_id": best,
        "mode": mode,
        "tie_breaker": tie,
        "candidates": candidates,
        "pending_invitee_keys": pending,
    }
    if not satisfiable:
        reason = "unsatisfiable"
    elif not evaluations:
        reason = "no_slots"
    elif best is None:
        reason = "slot_in_past" if satisfied else "no_valid_slot"
    elif mode == "MANUAL":
        reason = "manual_mode"
    elif mode == "BEST_SCORE" and pending:
        reason = "awaiting_responses"
    else:
        reason = "earliest_valid" if mode == "EARLIEST_VALID" else "best_score"
        decision.update(finalize=True, slot_id=best)
    score = evaluations[valid[0]]["score"] if valid else 0
    if reason == "awaiting_responses":
        message = f"未回答の招待者が{len(pending)}人います。全員の回答後に最も参加者の多い候補で確定します。"
    elif reason in ("earliest_valid", "best_score"):
        message = f"{best} で確定できます（参加{score}人）。"
    else:
        message = _MESSAGES[reason]
    decision["reason"] = reason
    decision["message"] = message
    return decision
