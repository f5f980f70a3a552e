"""Structural comparison of two (dereferenced) JSON Schemas of one direction.

The direction decides the verdict: what narrows an input breaks callers, what widens an output breaks
readers; the branches of an anyOf/oneOf/allOf are paired by content, so adding or removing one is
classified by direction; a renamed property reads as a rename (renames.field_renames).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from codegen.refs import JsonValue
from codegen.review import surfaces
from codegen.review.findings import Change, at, show
from codegen.review.renames import RENAMED_FROM, bare, field_renames

UPPER = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
LOWER = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
EXACT = ("pattern", "format", "multipleOf", "const", "contentMediaType", "contentEncoding")
TEXT_KEYS = ("description", "title", "examples")


def _types(schema: dict[str, Any]) -> frozenset[str] | None:
    kind = schema.get("type")
    if isinstance(kind, str):
        return frozenset([kind])
    if isinstance(kind, list):
        return frozenset(str(k) for k in kind)
    return None


def _covers(wide: frozenset[str] | None, narrow: frozenset[str] | None) -> bool:
    if wide is None:
        return True
    if narrow is None:
        return False
    return all(t in wide or (t == "integer" and "number" in wide) for t in narrow)


def _fmt_types(types: frozenset[str] | None) -> str:
    return "any" if types is None else " | ".join(sorted(types))


def _tight(direction: str) -> str:
    return "INPUT_CONSTRAINT_TIGHTENED" if direction == "input" else "OUTPUT_CONSTRAINT_TIGHTENED"


def _loose(direction: str) -> str:
    return "INPUT_CONSTRAINT_RELAXED" if direction == "input" else "OUTPUT_CONSTRAINT_RELAXED"


def _constraints(old: dict[str, Any], new: dict[str, Any], direction: str, where: str) -> Iterator[Change]:
    tight, loose = _tight(direction), _loose(direction)
    for key in UPPER + LOWER + EXACT:
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if a is None:
            yield tight, f"{where}: {key} {show(b)} added", None
        elif b is None:
            yield loose, f"{where}: {key} {show(a)} removed", None
        else:  # an EXACT change is neither provably stricter nor looser: breaking both ways
            stricter = direction == "input" if key in EXACT else (b < a if key in UPPER else b > a)
            yield (tight if stricter else loose), f"{where}: {key} {show(a)} → {show(b)}", None
    if bool(old.get("uniqueItems")) != bool(new.get("uniqueItems")):
        yield (
            (tight if new.get("uniqueItems") else loose),
            f"{where}: uniqueItems → {bool(new.get('uniqueItems'))}",
            None,
        )
    closed_a, closed_b = old.get("additionalProperties") is False, new.get("additionalProperties") is False
    if closed_a != closed_b and ("properties" in old or "properties" in new):
        yield (
            (tight, f"{where}: additionalProperties: false added", None)
            if closed_b
            else (loose, f"{where}: additionalProperties: false removed", None)
        )
    ea, eb = old.get("enum"), new.get("enum")
    if ea is None and eb is not None:
        yield tight, f"{where}: enum {show(eb)} added", None
    elif ea is not None and eb is None:
        yield loose, f"{where}: enum {show(ea)} removed", None
    elif isinstance(ea, list) and isinstance(eb, list):
        removed = [v for v in ea if v not in eb]
        added = [v for v in eb if v not in ea]
        for value in removed:
            rule = "INPUT_ENUM_VALUE_NO_DELETE" if direction == "input" else "OUTPUT_ENUM_VALUE_REMOVED"
            yield rule, f"{where}: enum value {show(value)} removed", None
        for value in added:
            rule = "INPUT_ENUM_VALUE_ADDED" if direction == "input" else "OUTPUT_ENUM_VALUE_ADDED"
            yield rule, f"{where}: enum value {show(value)} added", None


UNIONS = ("oneOf", "anyOf")


def _union_key(schema: dict[str, Any]) -> str | None:
    return next((k for k in UNIONS if isinstance(schema.get(k), list)), None)


def _core(schema: dict[str, Any]) -> dict[str, Any]:
    """A plain schema as one branch of a union: without the keys that describe the field as a whole."""
    return {k: v for k, v in schema.items() if k not in (*TEXT_KEYS, "default", "$comment")}


def _branch_kind(schema: JsonValue) -> str:
    """What a branch is, to pair it with its counterpart on the other side when its content changed."""
    if not isinstance(schema, dict):
        return show(schema)
    if "const" in schema:
        return f"const {show(schema['const'])}"
    types = _types(schema)
    kind = " | ".join(sorted(types)) if types else ("object" if "properties" in schema else "any")
    return f"{kind} enum" if "enum" in schema else kind


def _branch_label(schema: JsonValue) -> str:
    text = show(_core(schema) if isinstance(schema, dict) else schema)
    return text if len(text) <= 80 else text[:77] + "..."


def pair_branches(old: list[Any], new: list[Any]) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """Pair union branches by content: equal ones first, then ones of the same kind (type, const, enum).

    Returns (pairs (old index, new index), old indexes left unpaired, new indexes left unpaired).
    """
    left, right = list(range(len(old))), list(range(len(new)))
    pairs: list[tuple[int, int]] = []
    for same in (lambda a, b: a == b, lambda a, b: _branch_kind(a) == _branch_kind(b)):
        for j in list(right):
            i = next((i for i in left if same(old[i], new[j])), None)
            if i is not None:
                pairs.append((i, j))
                left.remove(i)
                right.remove(j)
    return sorted(pairs, key=lambda p: p[1]), left, right


def _default_and_text(old: dict[str, Any], new: dict[str, Any], direction: str, where: str) -> Iterator[Change]:
    """A changed input default, and changed field text (description, title, examples)."""
    if direction == "input" and old.get("default") != new.get("default"):
        yield (
            "INPUT_DEFAULT_CHANGED",
            f"{where}: default {show(old.get('default'))} → {show(new.get('default'))}",
            None,
        )
    changed_text = [k for k in TEXT_KEYS if old.get(k) != new.get(k)]
    if changed_text:
        yield "FIELD_DESCRIPTION_CHANGED", f"{where}: {', '.join(changed_text)} changed", None


def _union(old: list[Any], new: list[Any], key: str, direction: str, path: str) -> Iterator[Change]:
    """anyOf/oneOf: a new branch widens, a removed one narrows; allOf the other way round."""
    where = at(direction, path)
    pairs, removed, added = pair_branches(old, new)
    for i, j in pairs:
        yield from diff_schema(old[i], new[j], direction, f"{path}<{key}[{j}]>")
    if key == "allOf":
        more, fewer = _tight(direction), _loose(direction)
    elif direction == "input":
        more, fewer = "INPUT_TYPE_WIDENED", "INPUT_TYPE_NARROWED"
    else:
        more, fewer = "OUTPUT_TYPE_WIDENED", "OUTPUT_TYPE_NARROWED"
    for i in removed:
        yield fewer, f"{where}: {key} branch {_branch_label(old[i])} removed", None
    for j in added:
        yield more, f"{where}: {key} branch {_branch_label(new[j])} added", None


def diff_schema(old: JsonValue, new: JsonValue, direction: str, path: str = "") -> Iterator[Change]:
    """Every classified change between two (dereferenced) schemas of one direction."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        if old != new:
            yield "TYPE_CHANGED", f"{at(direction, path)}: schema {show(old)} → {show(new)}", None
        return
    if old == new:
        return
    where = at(direction, path)
    ua, ub = _union_key(old), _union_key(new)
    if (ua is None) != (ub is None):
        # a plain schema became a union (`string` -> `anyOf: [string, null]`) or the other way round:
        # the plain side is one branch
        key = ua or ub
        assert key is not None
        yield from _default_and_text(old, new, direction, where)
        branches_a = old[key] if ua else [_core(old)]
        branches_b = new[key] if ub else [_core(new)]
        yield from _union(branches_a, branches_b, key, direction, path)
        return
    ta, tb = _types(old), _types(new)
    if ta != tb:
        if _covers(tb, ta):
            rule = "INPUT_TYPE_WIDENED" if direction == "input" else "OUTPUT_TYPE_WIDENED"
        elif _covers(ta, tb):
            rule = "INPUT_TYPE_NARROWED" if direction == "input" else "OUTPUT_TYPE_NARROWED"
        else:
            yield "TYPE_CHANGED", f"{where}: type {_fmt_types(ta)} → {_fmt_types(tb)}", None
            return
        yield rule, f"{where}: type {_fmt_types(ta)} → {_fmt_types(tb)}", None
    yield from _constraints(old, new, direction, where)
    yield from _default_and_text(old, new, direction, where)
    yield from _properties(old, new, direction, path)
    yield from _items(old, new, direction, path)
    yield from _compositions(old, new, direction, path)
    ap_a, ap_b = old.get("additionalProperties"), new.get("additionalProperties")
    if isinstance(ap_a, dict) and isinstance(ap_b, dict):
        yield from diff_schema(ap_a, ap_b, direction, f"{path}{{*}}")


def _items(old: dict[str, Any], new: dict[str, Any], direction: str, path: str) -> Iterator[Change]:
    """An array's `items` schema: compared (at `path[]`) when both sides have one, else its addition
    (tighter) or removal (looser)."""
    ia, ib = old.get("items"), new.get("items")
    if isinstance(ia, dict) and isinstance(ib, dict):
        yield from diff_schema(ia, ib, direction, f"{path}[]")
    elif ia is None and isinstance(ib, dict):
        yield _tight(direction), f"{at(direction, path)}: items schema added", None
    elif isinstance(ia, dict) and ib is None:
        yield _loose(direction), f"{at(direction, path)}: items schema removed", None


def _compositions(old: dict[str, Any], new: dict[str, Any], direction: str, path: str) -> Iterator[Change]:
    """`oneOf`, `anyOf` and `allOf` compared branch by branch (an `allOf` may appear or go); a union that
    changes its kind (`anyOf` <-> `oneOf`) is a type change."""
    for key in ("oneOf", "anyOf", "allOf"):
        ca, cb = old.get(key), new.get(key)
        if ca == cb:
            continue
        if isinstance(ca, list) and isinstance(cb, list):
            yield from _union(ca, cb, key, direction, path)
        elif key == "allOf" and isinstance(ca or [], list) and isinstance(cb or [], list):
            yield from _union(ca or [], cb or [], key, direction, path)
        else:  # anyOf <-> oneOf
            message = f"{at(direction, path)}: {key} changed ({len(ca or [])} → {len(cb or [])} branches)"
            yield "TYPE_CHANGED", message, None


def _required_change(direction: str, sub: str, was: bool, now: bool) -> Iterator[Change]:
    if was == now:
        return
    if direction == "input":
        rule, what = (
            ("INPUT_FIELD_NOW_REQUIRED", "is now required") if now else ("INPUT_FIELD_NOW_OPTIONAL", "is now optional")
        )
    else:
        rule, what = (
            ("OUTPUT_FIELD_NOW_REQUIRED", "is now always present")
            if now
            else ("OUTPUT_FIELD_NOW_OPTIONAL", "may now be missing")
        )
    yield rule, f"{at(direction, sub)} {what}", None


def _rename(direction: str, old_sub: str, new_sub: str, declared: bool) -> Change:
    rule = "INPUT_FIELD_RENAMED" if direction == "input" else "OUTPUT_FIELD_RENAMED"
    old_name, new_name = old_sub.rsplit(".", 1)[-1], new_sub.rsplit(".", 1)[-1]
    how = (
        f"declared with {RENAMED_FROM}"
        if declared
        else f"inferred: same schema; declare `{RENAMED_FROM}: {old_name}` on `{new_name}` to confirm it"
    )
    return rule, f"{at(direction, new_sub)} renamed from `{old_sub}` ({how})", None


def _properties(old: dict[str, Any], new: dict[str, Any], direction: str, path: str) -> Iterator[Change]:
    pa = old.get("properties") if isinstance(old.get("properties"), dict) else {}
    pb = new.get("properties") if isinstance(new.get("properties"), dict) else {}
    ra, rb = set(old.get("required", [])), set(new.get("required", []))
    assert isinstance(pa, dict) and isinstance(pb, dict)
    renames = field_renames(pa, pb)
    moved = {was: (name, declared) for name, (was, declared) in renames.items()}
    for name in pa:
        sub = f"{path}.{name}" if path else name
        if name in moved:
            target, declared = moved[name]
            new_sub = f"{path}.{target}" if path else target
            yield _rename(direction, sub, new_sub, declared)
            yield from _required_change(direction, new_sub, name in ra, target in rb)
            yield from diff_schema(pa[name], bare(pb[target]), direction, new_sub)
            continue
        if name not in pb:
            rule = "INPUT_FIELD_NO_DELETE" if direction == "input" else "OUTPUT_FIELD_NO_DELETE"
            yield rule, f"{at(direction, sub)} removed", None
            continue
        yield from _required_change(direction, sub, name in ra, name in rb)
        yield from diff_schema(pa[name], pb[name], direction, sub)
    for name in pb:
        if name in pa or name in renames:
            continue
        sub = f"{path}.{name}" if path else name
        kind = surfaces.py_type(pb[name])
        if direction == "output":
            yield "OUTPUT_FIELD_ADDED", f"{at(direction, sub)} added ({kind})", None
        elif name in rb:
            yield "INPUT_FIELD_ADDED_REQUIRED", f"{at(direction, sub)} added as required ({kind})", None
        else:
            yield "INPUT_FIELD_ADDED_OPTIONAL", f"{at(direction, sub)} added ({kind})", None


# --- the generated Python API ----------------------------------------------------------------
