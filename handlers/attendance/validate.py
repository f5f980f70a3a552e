"""Checking an AttendanceRule: JSON Schema first, then the consistency the schema cannot express.

Every problem is named exactly (which field, which key, which numbers) and all
problems are reported at once in one VALIDATION_ERROR, so the secretary can fix
the rule in one round.
"""

from __future__ import annotations

import copy
from typing import Any
from zoneinfo import ZoneInfo

from generated.attendance.models import RuleType
from generated.errors import ValidationError
from handlers.attendance.schema import schema_errors

_TYPE_FIELDS = {
    RuleType.ALL: set(),
    RuleType.ANY: set(),
    RuleType.K_OF_N: {"k", "n"},
    RuleType.REQUIRED_PLUS_QUORUM: {"required_invitee_keys", "min_additional"},
    RuleType.GROUP_ANY: {"groups"},
}


def normalize_rule(rule: dict[str, Any]) -> dict[str, Any]:
    """The stored form: version "1.0" and every default written out."""
    out = copy.deepcopy(rule)
    out["version"] = "1.0"
    slot = out.setdefault("slot_policy", {})
    slot.setdefault("conflict_policy", "first_selected")
    slot.setdefault("timezone", "Asia/Tokyo")
    slot.setdefault("allow_multiple_slots_per_invitee", False)
    out["invitee_scope"].setdefault("exclude_invitee_keys", [])
    policy = out["finalize_policy"]
    policy.setdefault("tie_breaker", "earliest_slot")
    policy.setdefault("auto_finalize", False)
    return {k: out[k] for k in ("version", "type", "slot_policy", "invitee_scope", "rule", "finalize_policy")}


def rule_problems(rule: Any) -> list[str]:
    """All problems of a rule; [] when it can be stored and evaluated."""
    return [text for text, _ in findings(rule)]


def findings(rule: Any) -> list[tuple[str, bool]]:
    """Every problem with whether evaluation can still go on (True) or the rule's meaning is unclear (False).

    Evaluable problems leave the meaning clear but make part or all of the rule impossible or redundant
    (k > n, a group too small, a member outside the scope, a repeated key): evaluate_attendance reports
    them and the slots as unsatisfied instead of refusing. Saving refuses every problem.
    """
    problems = schema_errors("AttendanceRule", rule)
    if problems:
        return [(p, False) for p in problems]
    out: list[tuple[str, bool]] = []
    scope = rule["invitee_scope"]
    include = scope["include_invitee_keys"]
    exclude = scope.get("exclude_invitee_keys", [])
    notes = _duplicates("invitee_scope.include_invitee_keys", include)
    notes += _duplicates("invitee_scope.exclude_invitee_keys", exclude)
    notes += [
        f"invitee_scope.exclude_invitee_keys has {key}, which is not in include_invitee_keys"
        for key in exclude
        if key not in include
    ]
    effective = [k for k in dict.fromkeys(include) if k not in set(exclude)]
    if not include:
        notes.append("invitee_scope.include_invitee_keys is empty: a rule needs at least one invitee in scope")
    elif not effective:
        notes.append("the effective scope (include_invitee_keys minus exclude_invitee_keys) is empty")
    out += [(n, True) for n in notes]
    tz = rule.get("slot_policy", {}).get("timezone")
    if tz is not None and not _is_zone(tz):
        out.append((f"slot_policy.timezone {tz!r} is not an IANA time zone", False))
    kind = rule["type"]
    params = rule["rule"]
    out += [
        (f"rule.{name} is not used by type {kind}; remove it", False)
        for name in sorted(set(params) - _TYPE_FIELDS[kind])
    ]
    scope_set = set(effective)
    if kind == RuleType.K_OF_N:
        out += _k_of_n_problems(params, len(effective))
    elif kind == RuleType.REQUIRED_PLUS_QUORUM:
        out += _required_problems(params, scope_set)
    elif kind == RuleType.GROUP_ANY:
        out += _group_problems(params, scope_set)
    return out


def check_rule(rule: Any) -> dict[str, Any]:
    """Validate and normalise, or raise VALIDATION_ERROR naming every problem (for storing a rule)."""
    problems = rule_problems(rule)
    if problems:
        raise ValidationError("invalid attendance rule: " + "; ".join(problems))
    return normalize_rule(rule)


def check_for_evaluation(rule: Any) -> tuple[dict[str, Any], list[str]]:
    """The normalised rule and its evaluable problems; VALIDATION_ERROR only when its meaning is unclear."""
    found = findings(rule)
    fatal = [text for text, evaluable in found if not evaluable]
    if fatal:
        raise ValidationError("invalid attendance rule: " + "; ".join(fatal))
    return normalize_rule(rule), [text for text, _ in found]


def _is_zone(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ValueError, KeyError, OSError):
        return False
    return True


def _duplicates(field: str, keys: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for key in keys:
        if key in seen:
            out.append(f"{field} lists {key} twice")
        seen.add(key)
    return out


def _k_of_n_problems(params: dict[str, Any], size: int) -> list[tuple[str, bool]]:
    missing = [(f"rule.{f} is required for type K_OF_N", False) for f in ("k", "n") if f not in params]
    if missing:
        return missing
    k, n = params["k"], params["n"]
    out = []
    if k > n:
        out.append((f"rule.k ({k}) is larger than rule.n ({n})", True))
    if n != size:
        out.append((f"rule.n ({n}) does not match the {size} invitees in the effective scope", True))
    return out


def _required_problems(params: dict[str, Any], scope: set[str]) -> list[tuple[str, bool]]:
    out = [
        (f"rule.{f} is required for type REQUIRED_PLUS_QUORUM", False)
        for f in ("required_invitee_keys", "min_additional")
        if f not in params
    ]
    required = params.get("required_invitee_keys", [])
    if "required_invitee_keys" in params and not required:
        out.append(("rule.required_invitee_keys must name at least one invitee for REQUIRED_PLUS_QUORUM", False))
    notes = _duplicates("rule.required_invitee_keys", required)
    notes += [
        f"rule.required_invitee_keys has {k}, which is not in the effective scope" for k in required if k not in scope
    ]
    if "min_additional" in params:
        pool = len(scope - set(required))
        if params["min_additional"] > pool:
            notes.append(
                f"rule.min_additional ({params['min_additional']}) is larger than the {pool} non-required invitees in scope"
            )
    return out + [(n, True) for n in notes]


def _group_problems(params: dict[str, Any], scope: set[str]) -> list[tuple[str, bool]]:
    if "groups" not in params:
        return [("rule.groups is required for type GROUP_ANY", False)]
    groups = params["groups"]
    if not groups:
        return [("rule.groups must hold at least one group for GROUP_ANY", True)]
    out = []
    names: set[str] = set()
    for i, group in enumerate(groups):
        label = f"rule.groups[{i}] ({group['name']})"
        if group["name"] in names:
            out.append(f"{label} repeats the group name {group['name']!r}")
        names.add(group["name"])
        keys = group["any_of_invitee_keys"]
        if not keys:
            out.append(f"{label} has no invitees")
            continue
        out.extend(_duplicates(f"{label}.any_of_invitee_keys", keys))
        out.extend(f"{label} has {k}, which is not in the effective scope" for k in keys if k not in scope)
        inside = len({k for k in keys if k in scope})
        if group["min"] > inside:
            out.append(f"{label} needs min {group['min']} but has only {inside} invitees in scope")
    return [(p, True) for p in out]
