"""Compare two loaded spec trees and classify every change with a rule from rules.yaml.

Tools are paired by name (names are unique across services); a HEAD tool that declares
`renamed_from: old` is paired with BASE's `old` and reported as TOOL_RENAMED instead of a
removal plus an addition. Schemas are compared structurally with the direction in mind:
what narrows an input breaks callers, what widens an output breaks readers; the branches of an
anyOf/oneOf/allOf are paired by content, so adding or removing one is classified by direction.
The MCP surface is compared as `tools/list` serves it (codegen.docs.tool_list_entry: policy adds
`idempotency_key`, a deprecation prefixes the description), and the Python API as codegen
generates it (shared `$defs` classes by name, enum members).

Which breaking changes a major version allows (seed 001: "breaking changes go to /v2"):
- HTTP findings (surface `http`): a new /vN in the service's `http.base_path` (or the route's own
  path); a `version` bump alone does not move the /v1 routes.
- Python API findings (surface `python`): a major bump of the service `version` (the generated
  package's semver).
- MCP and HTTP+MCP findings: nothing. MCP tool names carry no version, so the same tool name keeps
  serving the new schema; they need an exception with a reason (or a new tool name instead).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from codegen import docs, lint, naming
from codegen.review import surfaces
from codegen.review.rules import RULES, Exception_
from codegen.specs import Problem, ResourceSpec, ServiceSpec, SpecTree, ToolSpec

SEVERITY_ORDER = {"breaking": 0, "non-breaking": 1, "info": 2}
KIND_ORDER = {"service": 0, "tool": 1, "resource": 2}


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str
    service: str
    kind: str
    """service | tool | resource"""
    subject: str
    """The tool, resource or service name (the name in HEAD when it exists)."""
    detail: str
    caused_by: str | None = None
    """The rule of the change this one follows from; an exception for that rule covers this too."""
    excused: str | None = None
    """The reason of the exception that accepts this finding."""
    field: str | None = None
    """The schema field path it is about (`total`, `hits[].region`), when it is about one."""
    allowed_by: str | None = None
    """The major version change that allows this breaking finding (see the module docstring)."""

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise KeyError(f"unknown review rule {self.rule}")

    @property
    def severity(self) -> str:
        return RULES[self.rule].severity

    @property
    def surface(self) -> str:
        return RULES[self.rule].surface

    @property
    def blocking(self) -> bool:
        return self.severity == "breaking" and self.excused is None and self.allowed_by is None

    def sort_key(self) -> tuple[Any, ...]:
        return (
            self.service,
            KIND_ORDER[self.kind],
            self.subject,
            SEVERITY_ORDER[self.severity],
            self.rule,
            self.detail,
        )


@dataclass(slots=True)
class ServiceVerdict:
    name: str
    base_version: str | None
    head_version: str | None
    path_bump: str | None
    """e.g. "base path /v1/demo → /v2/demo": allows HTTP findings."""
    version_bump: str | None
    """e.g. "version 1.2.0 → 2.0.0": allows Python API findings."""
    needs: str = ""
    """What would allow breaking changes, for the report."""
    breaking: int = 0
    excused: int = 0
    allowed: int = 0
    unexcused: int = 0

    @property
    def ok(self) -> bool:
        return self.unexcused == 0

    @property
    def bumped(self) -> bool:
        return self.path_bump is not None or self.version_bump is not None


@dataclass(slots=True)
class Review:
    base: str
    head: str
    findings: list[Finding]
    services: dict[str, ServiceVerdict]
    exception_problems: list[str] = field(default_factory=list)
    unused_exceptions: list[Exception_] = field(default_factory=list)
    """New exceptions (not in BASE's file) that matched nothing: a typo or a stale entry; the review fails."""
    carried_exceptions: list[Exception_] = field(default_factory=list)
    """Exceptions already in BASE's file: they were for earlier changes, so they excuse nothing here and the
    report does not list them (they do not apply to this diff; only the JSON carries them)."""
    base_problems: list[Problem] = field(default_factory=list)
    head_problems: list[Problem] = field(default_factory=list)
    """HEAD's load problems, codegen lint problems and renamed_from mistakes: each fails the review."""
    head_note: str | None = None
    """Said under the verdict: what HEAD is when it is not a ref given by the caller (the working tree)."""

    @property
    def ok(self) -> bool:
        return (
            all(v.ok for v in self.services.values())
            and not self.exception_problems
            and not self.unused_exceptions
            and not self.head_problems
        )

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    def to_json(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "head": self.head,
            "ok": self.ok,
            "findings": [
                {**asdict(f), "severity": f.severity, "surface": f.surface, "blocking": f.blocking}
                for f in self.findings
            ],
            "services": {k: {**asdict(v), "ok": v.ok, "bumped": v.bumped} for k, v in sorted(self.services.items())},
            "exception_problems": self.exception_problems,
            "unused_exceptions": [asdict(e) for e in self.unused_exceptions],
            "carried_exceptions": [asdict(e) for e in self.carried_exceptions],
            "base_problems": [str(p) for p in self.base_problems],
            "head_problems": [str(p) for p in self.head_problems],
            "head_note": self.head_note,
        }


# --- schemas -------------------------------------------------------------------------------

Change = tuple[str, str, str | None]
"""(rule, detail, caused_by)"""

UPPER = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
LOWER = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
EXACT = ("pattern", "format", "multipleOf", "const", "contentMediaType", "contentEncoding")
TEXT_KEYS = ("description", "title", "examples")


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _at(direction: str, path: str) -> str:
    return f"{direction} `{path}`" if path else f"{direction} (root)"


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
    for key in UPPER + LOWER:
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if a is None:
            yield tight, f"{where}: {key} {_show(b)} added", None
        elif b is None:
            yield loose, f"{where}: {key} {_show(a)} removed", None
        else:
            stricter = b < a if key in UPPER else b > a
            yield (tight if stricter else loose), f"{where}: {key} {_show(a)} → {_show(b)}", None
    for key in EXACT:
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if a is None:
            yield tight, f"{where}: {key} {_show(b)} added", None
        elif b is None:
            yield loose, f"{where}: {key} {_show(a)} removed", None
        else:  # neither provably stricter nor looser: breaking both ways
            yield (tight if direction == "input" else loose), f"{where}: {key} {_show(a)} → {_show(b)}", None
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
        yield tight, f"{where}: enum {_show(eb)} added", None
    elif ea is not None and eb is None:
        yield loose, f"{where}: enum {_show(ea)} removed", None
    elif isinstance(ea, list) and isinstance(eb, list):
        removed = [v for v in ea if v not in eb]
        added = [v for v in eb if v not in ea]
        for value in removed:
            rule = "INPUT_ENUM_VALUE_NO_DELETE" if direction == "input" else "OUTPUT_ENUM_VALUE_REMOVED"
            yield rule, f"{where}: enum value {_show(value)} removed", None
        for value in added:
            rule = "INPUT_ENUM_VALUE_ADDED" if direction == "input" else "OUTPUT_ENUM_VALUE_ADDED"
            yield rule, f"{where}: enum value {_show(value)} added", None


UNIONS = ("oneOf", "anyOf")


def _union_key(schema: dict[str, Any]) -> str | None:
    return next((k for k in UNIONS if isinstance(schema.get(k), list)), None)


def _core(schema: dict[str, Any]) -> dict[str, Any]:
    """A plain schema as one branch of a union: without the keys that describe the field as a whole."""
    return {k: v for k, v in schema.items() if k not in (*TEXT_KEYS, "default", "$comment")}


def _branch_kind(schema: Any) -> str:
    """What a branch is, to pair it with its counterpart on the other side when its content changed."""
    if not isinstance(schema, dict):
        return _show(schema)
    if "const" in schema:
        return f"const {_show(schema['const'])}"
    types = _types(schema)
    kind = " | ".join(sorted(types)) if types else ("object" if "properties" in schema else "any")
    return f"{kind} enum" if "enum" in schema else kind


def _branch_label(schema: Any) -> str:
    text = _show(_core(schema) if isinstance(schema, dict) else schema)
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
            f"{where}: default {_show(old.get('default'))} → {_show(new.get('default'))}",
            None,
        )
    changed_text = [k for k in TEXT_KEYS if old.get(k) != new.get(k)]
    if changed_text:
        yield "FIELD_DESCRIPTION_CHANGED", f"{where}: {', '.join(changed_text)} changed", None


def _union(old: list[Any], new: list[Any], key: str, direction: str, path: str) -> Iterator[Change]:
    """anyOf/oneOf: a new branch widens, a removed one narrows; allOf the other way round."""
    where = _at(direction, path)
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


def diff_schema(old: Any, new: Any, direction: str, path: str = "") -> Iterator[Change]:
    """Every classified change between two (dereferenced) schemas of one direction."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        if old != new:
            yield "TYPE_CHANGED", f"{_at(direction, path)}: schema {_show(old)} → {_show(new)}", None
        return
    if old == new:
        return
    where = _at(direction, path)
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
    ia, ib = old.get("items"), new.get("items")
    if isinstance(ia, dict) and isinstance(ib, dict):
        yield from diff_schema(ia, ib, direction, f"{path}[]")
    elif ia is None and isinstance(ib, dict):
        yield _tight(direction), f"{where}: items schema added", None
    elif isinstance(ia, dict) and ib is None:
        yield _loose(direction), f"{where}: items schema removed", None
    for key in ("oneOf", "anyOf", "allOf"):
        ca, cb = old.get(key), new.get(key)
        if ca == cb:
            continue
        if isinstance(ca, list) and isinstance(cb, list):
            yield from _union(ca, cb, key, direction, path)
        elif key == "allOf" and isinstance(ca or [], list) and isinstance(cb or [], list):
            yield from _union(ca or [], cb or [], key, direction, path)
        else:  # anyOf <-> oneOf
            yield "TYPE_CHANGED", f"{where}: {key} changed ({len(ca or [])} → {len(cb or [])} branches)", None
    ap_a, ap_b = old.get("additionalProperties"), new.get("additionalProperties")
    if isinstance(ap_a, dict) and isinstance(ap_b, dict):
        yield from diff_schema(ap_a, ap_b, direction, f"{path}{{*}}")


RENAMED_FROM = "x-renamed-from"
"""Declared on a field's schema in HEAD: the name the field had in BASE."""


def _bare(schema: Any) -> Any:
    return {k: v for k, v in schema.items() if k != RENAMED_FROM} if isinstance(schema, dict) else schema


def field_renames(old: dict[str, Any], new: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    """Renamed properties of one object: new name -> (old name, declared).

    Declared with `x-renamed-from: <old>` on the new field; otherwise inferred when exactly one removed
    and one added field have the same schema (a guess the report says is one)."""
    gone = [n for n in old if n not in new]
    fresh = [n for n in new if n not in old]
    out: dict[str, tuple[str, bool]] = {}
    for name in fresh:
        was = new[name].get(RENAMED_FROM) if isinstance(new[name], dict) else None
        if isinstance(was, str) and was in gone:
            out[name] = (was, True)
            gone.remove(was)
    fresh = [n for n in fresh if n not in out]
    for name in fresh:
        same = [o for o in gone if _bare(old[o]) == _bare(new[name])]
        twins = [n for n in fresh if _bare(new[n]) == _bare(new[name])]
        if len(same) == 1 and len(twins) == 1:
            out[name] = (same[0], False)
            gone.remove(same[0])
    return out


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
    yield rule, f"{_at(direction, sub)} {what}", None


def _rename(direction: str, old_sub: str, new_sub: str, declared: bool) -> Change:
    rule = "INPUT_FIELD_RENAMED" if direction == "input" else "OUTPUT_FIELD_RENAMED"
    old_name, new_name = old_sub.rsplit(".", 1)[-1], new_sub.rsplit(".", 1)[-1]
    how = (
        f"declared with {RENAMED_FROM}"
        if declared
        else f"inferred: same schema; declare `{RENAMED_FROM}: {old_name}` on `{new_name}` to confirm it"
    )
    return rule, f"{_at(direction, new_sub)} renamed from `{old_sub}` ({how})", None


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
            yield from diff_schema(pa[name], _bare(pb[target]), direction, new_sub)
            continue
        if name not in pb:
            rule = "INPUT_FIELD_NO_DELETE" if direction == "input" else "OUTPUT_FIELD_NO_DELETE"
            yield rule, f"{_at(direction, sub)} removed", None
            continue
        yield from _required_change(direction, sub, name in ra, name in rb)
        yield from diff_schema(pa[name], pb[name], direction, sub)
    for name in pb:
        if name in pa or name in renames:
            continue
        sub = f"{path}.{name}" if path else name
        kind = surfaces.py_type(pb[name])
        if direction == "output":
            yield "OUTPUT_FIELD_ADDED", f"{_at(direction, sub)} added ({kind})", None
        elif name in rb:
            yield "INPUT_FIELD_ADDED_REQUIRED", f"{_at(direction, sub)} added as required ({kind})", None
        else:
            yield "INPUT_FIELD_ADDED_OPTIONAL", f"{_at(direction, sub)} added ({kind})", None


# --- the generated Python API ----------------------------------------------------------------


_RENAME_AT = re.compile(r"^(input|output) `([^`]*)` renamed from `([^`]*)`")


def _py_path(wire: str) -> str:
    """A wire field path (`hits[].region`) as the generated models' attribute path (`.hits[].region`)."""
    plain = re.sub(r"<[^>]*>", "", wire)
    return "." + re.sub(r"[^.\[\]]+", lambda m: surfaces.py_field_name(m.group(0)), plain)


def wire_renames(wire: list[Change]) -> dict[str, dict[str, str]]:
    """direction -> {old attribute path: new attribute path} of the renamed fields among wire findings."""
    out: dict[str, dict[str, str]] = {"input": {}, "output": {}}
    for _, detail, _ in wire:
        match = _RENAME_AT.match(detail)
        if match:
            out[match.group(1)][_py_path(match.group(3))] = _py_path(match.group(2))
    return out


def _moved(rel: str, moves: dict[str, str]) -> str:
    """A model-relative attribute path after the renames of it or of a field above it."""
    for old in sorted(moves, key=len, reverse=True):
        if rel == old or rel.startswith((old + ".", old + "[]")):
            return moves[old] + rel[len(old) :]
    return rel


def diff_models(
    old: dict[str, dict[str, surfaces.PyField]],
    new: dict[str, dict[str, surfaces.PyField]],
    renamed: dict[str, str],
    caused_by: str | None = None,
    classes: dict[str, str] | None = None,
    fields_renamed: dict[str, dict[str, str]] | None = None,
) -> Iterator[Change]:
    """Compare generated models; `renamed` maps old model names to new ones, `classes` old shared class
    names to new ones (a renamed class is reported once, by diff_classes, not in every field typed with it),
    `fields_renamed` the renamed fields per direction (wire_renames)."""
    for model, fields in old.items():
        is_input = model.endswith("Input")
        field_gone = "INPUT_FIELD_NO_DELETE" if is_input else "OUTPUT_FIELD_NO_DELETE"
        moves = (fields_renamed or {}).get("input" if is_input else "output", {})
        target = renamed.get(model, model)
        if target not in new:
            yield "PY_MODEL_NO_DELETE", f"model `{model}` removed", caused_by
            continue
        if target != model:
            yield "PY_MODEL_RENAMED", f"model `{model}` → `{target}`", "TOOL_RENAMED"
        after = {f"{target}{_moved(path[len(model) :], moves)}": fld for path, fld in fields.items()}
        for rel in (r for r in {p[len(model) :] for p in fields} if r in moves):
            yield (
                "PY_FIELD_RENAMED",
                f"`{target}{moves[rel]}` renamed from `{rel.removeprefix('.')}`",
                "INPUT_FIELD_RENAMED" if is_input else "OUTPUT_FIELD_RENAMED",
            )
        for path, fld in after.items():
            now = new[target].get(path)
            if now is None:
                yield "PY_FIELD_NO_DELETE", f"`{path}` removed", field_gone
                continue
            was = surfaces.rename_types(fld.type, classes or {})
            if surfaces.py_union(now.type) != surfaces.py_union(was):
                if is_input and surfaces.py_accepts(now.type, was):
                    yield "PY_INPUT_FIELD_TYPE_WIDENED", f"`{path}`: {was} → {now.type}", None
                elif not is_input and surfaces.py_accepts(was, now.type):
                    yield "PY_OUTPUT_FIELD_TYPE_NARROWED", f"`{path}`: {was} → {now.type}", None
                else:
                    yield "PY_FIELD_TYPE_CHANGED", f"`{path}`: {was} → {now.type}", None
            if fld.members and now.members:
                for value in fld.members:
                    if value not in now.members:
                        yield "PY_ENUM_MEMBER_NO_DELETE", f"`{path}`: enum member {_show(value)} removed", None
            if is_input and now.required and not fld.required and "[]" not in path[len(target) :]:
                yield "PY_INPUT_FIELD_REQUIRED", f"`{path}` is now a required argument", "INPUT_FIELD_NOW_REQUIRED"
            if not is_input and fld.required and not now.required:
                yield "PY_OUTPUT_FIELD_OPTIONAL", f"`{path}` is now Optional", "OUTPUT_FIELD_NOW_OPTIONAL"
        for path, now in new[target].items():
            if path in after:
                continue
            if is_input and now.required:
                yield (
                    "PY_INPUT_FIELD_REQUIRED",
                    f"`{path}` added as a required argument ({now.type})",
                    ("INPUT_FIELD_ADDED_REQUIRED"),
                )
            else:
                yield "PY_FIELD_ADDED", f"`{path}` added ({now.type})", None
    targets = {renamed.get(m, m) for m in old}
    for model in new:
        if model not in targets:
            yield "PY_MODEL_ADDED", f"model `{model}` added", caused_by


def class_renames(old: dict[str, surfaces.SharedClass], new: dict[str, surfaces.SharedClass]) -> dict[str, str]:
    """Shared classes that only changed name: same schema, or else the same kind and field names / members."""
    gone = [n for n in old if n not in new]
    fresh = [n for n in new if n not in old]
    out: dict[str, str] = {}
    for same in (lambda a, b: a.body == b.body, lambda a, b: a == b):
        for name in gone:
            if name in out:
                continue
            match = next((m for m in fresh if m not in out.values() and same(old[name], new[m])), None)
            if match is not None:
                out[name] = match
    return out


def diff_classes(old: dict[str, surfaces.SharedClass], new: dict[str, surfaces.SharedClass]) -> Iterator[Change]:
    """The classes of a service's shared types (`$defs` names): removed, renamed, added.

    Their fields and enum members are compared through the tools that use them (diff_models)."""
    renamed = class_renames(old, new)
    for name in sorted(old):
        if name in renamed:
            yield "PY_MODEL_RENAMED", f"class `{name}` → `{renamed[name]}` (a renamed `$defs` type)", None
        elif name not in new:
            yield "PY_MODEL_NO_DELETE", f"class `{name}` removed (`$defs/{name}`)", None
    for name in sorted(set(new) - set(old) - set(renamed.values())):
        yield "PY_MODEL_ADDED", f"class `{name}` added (`$defs/{name}`)", None


# --- tools, resources, services ------------------------------------------------------------


def _text_changes(old: Any, new: Any, label: str, rule: str) -> Iterator[Change]:
    a, b = (old or "").strip(), (new or "").strip()
    if a != b:
        yield rule, f"{label} changed ({len(a)} → {len(b)} characters)", None


def _error_changes(base: SpecTree, head: SpecTree, old: list[str], new: list[str]) -> Iterator[Change]:
    for code in sorted(set(new) - set(old)):
        yield "ERROR_CODE_ADDED", f"error `{code}` is new", None
    for code in sorted(set(old) - set(new)):
        yield "ERROR_CODE_REMOVED", f"error `{code}` no longer declared", None
    for code in sorted(set(old) & set(new)):
        sa = base.errors[code].status if code in base.errors else None
        sb = head.errors[code].status if code in head.errors else None
        if sa != sb:
            yield "ERROR_STATUS_CHANGED", f"error `{code}`: HTTP {sa} → {sb}", None
    st_a, st_b = surfaces.statuses(base, old), surfaces.statuses(head, new)
    for status in sorted(set(st_b) - set(st_a)):
        cause = "ERROR_CODE_ADDED" if set(st_b[status]) - set(old) else "ERROR_STATUS_CHANGED"
        yield "HTTP_STATUS_ADDED", f"HTTP {status} ({', '.join(st_b[status])}) can now be returned", cause
    for status in sorted(set(st_a) - set(st_b)):
        yield "HTTP_STATUS_REMOVED", f"HTTP {status} is no longer returned", None


@dataclass(slots=True)
class PyApi:
    """A side's generated Python API: the codegen bundle of each service and its shared classes."""

    defs: dict[str, surfaces.Defs | None]
    classes: dict[str, dict[str, surfaces.SharedClass]]

    @classmethod
    def of(cls, tree: SpecTree) -> PyApi:
        defs = {svc.name: surfaces.service_defs(svc, tree.root) for svc in tree.services}
        return cls(defs, {svc.name: surfaces.shared_classes(svc, defs[svc.name]) for svc in tree.services})


def _served_arguments(tool: ToolSpec) -> dict[str, Any]:
    """The arguments tools/list serves beyond the spec's input (policy.idempotency's `idempotency_key`)."""
    served = docs.tool_list_entry(tool)["inputSchema"].get("properties") or {}
    declared = tool.input_schema.get("properties") or {}
    return {k: v for k, v in served.items() if k not in declared}


def _mcp_changes(old: ToolSpec, new: ToolSpec) -> Iterator[Change]:
    extra_a, extra_b = _served_arguments(old), _served_arguments(new)
    for name in sorted(set(extra_b) - set(extra_a)):
        yield "MCP_ARGUMENT_ADDED", f"MCP inputSchema: optional argument `{name}` added (policy)", None
    for name in sorted(set(extra_a) - set(extra_b)):
        effect = (
            "callers that send it are rejected (additionalProperties: false)"
            if new.input_schema.get("additionalProperties") is False
            else "callers that send it have it ignored, so their retries run twice"
        )
        yield "MCP_ARGUMENT_NO_DELETE", f"MCP inputSchema: argument `{name}` removed (policy): {effect}", None


def diff_tool(
    base: SpecTree,
    head: SpecTree,
    old: ToolSpec,
    new: ToolSpec,
    renamed: bool,
    api: tuple[PyApi, PyApi] | None = None,
    declared: bool = True,
) -> Iterator[Change]:
    rename_cause = "TOOL_RENAMED" if renamed else None
    if renamed:
        how = (
            "renamed_from"
            if declared
            else f"inferred: same input and output schemas; declare `renamed_from: {old.name}` to confirm it"
        )
        yield "TOOL_RENAMED", f"`{old.name}` → `{new.name}` ({how})", None
    if old.http_method != new.http_method:
        yield "HTTP_METHOD_CHANGED", f"{old.http_method} → {new.http_method}", None
    if old.http_path != new.http_path:
        yield "HTTP_PATH_CHANGED", f"`{old.http_path}` → `{new.http_path}`", rename_cause
    for ctype in sorted(set(old.content_types) - set(new.content_types)):
        yield "HTTP_CONTENT_TYPE_REMOVED", f"`{ctype}` no longer accepted", None
    for ctype in sorted(set(new.content_types) - set(old.content_types)):
        yield "HTTP_CONTENT_TYPE_ADDED", f"`{ctype}` now accepted", None
    yield from _error_changes(base, head, old.errors, new.errors)
    scopes_a, scopes_b = set(old.policy.get("scopes", [])), set(new.policy.get("scopes", []))
    if not new.policy.get("public"):
        for scope in sorted(scopes_b - scopes_a):
            yield "AUTH_SCOPE_ADDED", f"scope `{scope}` is now required", None
    for scope in sorted(scopes_a - scopes_b):
        yield "AUTH_SCOPE_REMOVED", f"scope `{scope}` is no longer required", None
    yield from _annotation_changes(old.annotations, new.annotations)
    if new.deprecated and not old.deprecated:
        yield "TOOL_DEPRECATED", f"deprecated since {new.deprecated.get('since')}", None
    wire = [*diff_schema(old.input_schema, new.input_schema, "input")]
    wire += diff_schema(old.output_schema, new.output_schema, "output")
    yield from wire
    yield from _mcp_changes(old, new)
    renames = {}
    if renamed:
        renames = {
            naming.input_model(old.name): naming.input_model(new.name),
            naming.output_model(old.name): naming.output_model(new.name),
        }
    api_a, api_b = api or (PyApi({}, {}), PyApi({}, {}))
    defs_a, defs_b = api_a.defs.get(old.service), api_b.defs.get(new.service)
    classes = class_renames(api_a.classes.get(old.service, {}), api_b.classes.get(new.service, {}))
    models = diff_models(
        surfaces.tool_models(old, defs_a),
        surfaces.tool_models(new, defs_b),
        renames,
        None,
        classes,
        wire_renames(wire),
    )
    yield from _with_causes(wire, models)
    yield from _text_changes(old.summary, new.summary, "summary", "SUMMARY_CHANGED")
    # the description as tools/list serves it: a deprecation note comes first
    yield from _text_changes(docs.mcp_description(old), docs.mcp_description(new), "description", "DESCRIPTION_CHANGED")
    if old.annotations.get("title") != new.annotations.get("title"):
        yield (
            "TITLE_CHANGED",
            f"title {_show(old.annotations.get('title'))} → {_show(new.annotations.get('title'))}",
            None,
        )
    if [asdict(e) for e in old.examples] != [asdict(e) for e in new.examples]:
        names_a, names_b = [e.name for e in old.examples], [e.name for e in new.examples]
        yield (
            "EXAMPLES_CHANGED",
            f"examples {names_a} → {names_b}" if names_a != names_b else "example content changed",
            None,
        )


_WIRE_AT = re.compile(r"^(input|output) `([^`]*)`")
_PY_AT = re.compile(r"`\w+?(Input|Output|Resource)((?:\.|\[\])[^`]*)`")


def _with_causes(wire: list[Change], python: Iterator[Change]) -> Iterator[Change]:
    """Link a Python finding to the breaking wire finding on the same field, so one exception covers both."""
    by_field: dict[tuple[str, str], str] = {}
    for rule, detail, _ in wire:
        match = _WIRE_AT.match(detail)
        if match and RULES[rule].severity == "breaking":
            by_field.setdefault((match.group(1), re.sub(r"<[^>]*>", "", match.group(2))), rule)
    for rule, detail, cause in python:
        match = _PY_AT.search(detail)
        if cause is None and match:
            direction = "input" if match.group(1) == "Input" else "output"
            cause = by_field.get((direction, match.group(2).removeprefix(".")))
        yield rule, detail, cause


ANNOTATION_BREAKS = {
    # key: (value that is safe, rule when it moves away from it)
    "readOnlyHint": (True, "ANNOTATION_NO_LONGER_READ_ONLY"),
    "destructiveHint": (False, "ANNOTATION_NOW_DESTRUCTIVE"),
    "idempotentHint": (True, "ANNOTATION_NO_LONGER_IDEMPOTENT"),
    "openWorldHint": (False, "ANNOTATION_NOW_OPEN_WORLD"),
}
ANNOTATION_DEFAULTS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}
"""MCP's defaults when a hint is absent."""


def _annotation_changes(old: dict[str, Any], new: dict[str, Any]) -> Iterator[Change]:
    for key, (safe, rule) in ANNOTATION_BREAKS.items():
        a, b = old.get(key, ANNOTATION_DEFAULTS[key]), new.get(key, ANNOTATION_DEFAULTS[key])
        if a == b:
            continue
        if a == safe:
            yield rule, f"{key}: {_show(a)} → {_show(b)}", None
        else:
            yield "ANNOTATION_RELAXED", f"{key}: {_show(a)} → {_show(b)}", None


def diff_resource(
    base: SpecTree,
    head: SpecTree,
    old: ResourceSpec,
    new: ResourceSpec,
    api: tuple[PyApi, PyApi] | None = None,
) -> Iterator[Change]:
    if old.uri != new.uri:
        yield "RESOURCE_URI_CHANGED", f"`{old.uri}` → `{new.uri}`", None
    if old.mime_type != new.mime_type:
        yield "RESOURCE_MIME_CHANGED", f"`{old.mime_type}` → `{new.mime_type}`", None
    if old.http_path != new.http_path:
        yield "HTTP_PATH_CHANGED", f"`GET {old.http_path}` → `GET {new.http_path}`", None
    yield from _error_changes(base, head, old.errors, new.errors)
    wire: list[Change] = []
    if old.output_schema is not None and new.output_schema is not None:
        wire = list(diff_schema(old.output_schema, new.output_schema, "output"))
    yield from wire
    api_a, api_b = api or (PyApi({}, {}), PyApi({}, {}))
    classes = class_renames(api_a.classes.get(old.service, {}), api_b.classes.get(new.service, {}))
    models = diff_models(
        surfaces.resource_models(old, api_a.defs.get(old.service)),
        surfaces.resource_models(new, api_b.defs.get(new.service)),
        {},
        "RESOURCE_MIME_CHANGED",
        classes,
        wire_renames(wire),
    )
    yield from _with_causes(wire, models)
    yield from _text_changes(old.summary, new.summary, "summary", "SUMMARY_CHANGED")
    yield from _text_changes(old.description, new.description, "description", "DESCRIPTION_CHANGED")


def diff_service(old: ServiceSpec, new: ServiceSpec) -> Iterator[Change]:
    if old.version != new.version:
        yield "SERVICE_VERSION_CHANGED", f"version {old.version} → {new.version}", None
    for attr in ("title", "description", "instructions"):
        yield from _text_changes(getattr(old, attr), getattr(new, attr), attr, "SERVICE_TEXT_CHANGED")
    for name in sorted(set(old.success_envelope) - set(new.success_envelope)):
        yield "SUCCESS_ENVELOPE_FIELD_NO_DELETE", f"`{name}` no longer added to success responses", None
    for name in sorted(set(new.success_envelope) - set(old.success_envelope)):
        yield "SUCCESS_ENVELOPE_FIELD_ADDED", f"`{name}` now added to success responses", None


# --- the review --------------------------------------------------------------------------------


def _major(version: str | None) -> int:
    match = re.match(r"(\d+)", version or "")
    return int(match.group(1)) if match else 0


def _path_major(path: str | None) -> int:
    match = re.search(r"/v(\d+)(/|$)", path or "")
    return int(match.group(1)) if match else 1


def _path_bump(old: str | None, new: str | None, what: str) -> str | None:
    if old is None or new is None or _path_major(new) <= _path_major(old):
        return None
    return f"{what} {old} → {new}"


def _version_bump(old: ServiceSpec | None, new: ServiceSpec | None) -> str | None:
    if old is None or new is None or _major(new.version) <= _major(old.version):
        return None
    return f"version {old.version} → {new.version}"


def _needs(old: ServiceSpec | None, blocking: list[Finding]) -> str:
    """What would allow a service's blocking findings."""
    surfaces_ = {f.surface for f in blocking}
    out = []
    if "http" in surfaces_ and old is not None:
        out.append(f"HTTP changes need base path /v{_path_major(old.base_path) + 1}/…")
    if "python" in surfaces_ and old is not None:
        out.append(f"Python API changes need version {_major(old.version) + 1}.0.0")
    if surfaces_ & {"mcp", "http+mcp"}:
        out.append("MCP and HTTP+MCP changes need an exception or a new tool name (MCP names carry no version)")
    return "; ".join(out)


_FIELD_AT = (
    re.compile(r"^(?:input|output) `([^`]*)`"),
    re.compile(r"^`\w+?(?:Input|Output|Resource)(?:\.|(?=\[\]))([^`]*)`"),
)


def field_of(detail: str) -> str | None:
    """The schema field path a finding's detail is about (`total`, `hits[].region`), if any."""
    for pattern in _FIELD_AT:
        match = pattern.match(detail)
        if match:
            return match.group(1)
    return None


def _renamed_from_problems(base: SpecTree, head: SpecTree) -> list[Problem]:
    """`renamed_from` must name a tool HEAD no longer has (else it is no rename)."""
    names_a = {t.name for t in base.all_tools()}
    names_b = {t.name: t for t in head.all_tools()}
    out = []
    for tool in names_b.values():
        old_name = tool.raw.get("renamed_from")
        if not isinstance(old_name, str):
            continue
        rel = tool.source.resolve().relative_to(head.root.parent).as_posix()
        if old_name == tool.name:
            out.append(Problem(rel, "/renamed_from", "renamed_from", "names the tool itself"))
        elif old_name in names_b:
            out.append(
                Problem(
                    rel,
                    "/renamed_from",
                    "renamed_from",
                    f"`{old_name}` still exists ({names_b[old_name].service}): a rename removes the old tool;"
                    " drop renamed_from, or remove (or rename) the old tool",
                )
            )
        elif tool.name in names_a and old_name in names_a:
            out.append(
                Problem(rel, "/renamed_from", "renamed_from", f"`{tool.name}` already existed in BASE: it is no rename")
            )
    return out


def tool_renames(old: dict[str, ToolSpec], new: dict[str, ToolSpec]) -> dict[str, str]:
    """Renamed tools, old name -> new name: declared with `renamed_from`, or inferred when a removed and an
    added tool of the same service have the same input and output schemas (and no other tool does)."""
    out: dict[str, str] = {}
    for tool in new.values():
        was = tool.raw.get("renamed_from")
        if isinstance(was, str) and was in old and was not in new and tool.name not in old:
            out[was] = tool.name
    gone = [t for n, t in old.items() if n not in new and n not in out]
    fresh = [t for n, t in new.items() if n not in old and n not in out.values()]

    def same(a: ToolSpec, b: ToolSpec) -> bool:
        return (a.service, a.input_schema, a.output_schema) == (b.service, b.input_schema, b.output_schema)

    for tool in fresh:
        matches = [t for t in gone if same(t, tool)]
        if len(matches) == 1 and sum(same(matches[0], t) for t in fresh) == 1:
            out[matches[0].name] = tool.name
            gone.remove(matches[0])
    return out


def compare(base: SpecTree, head: SpecTree) -> list[Finding]:
    """Every finding between two trees, before exceptions, sorted; `allowed_by` is set where a major
    version allows a breaking finding."""
    found: list[Finding] = []
    api = (PyApi.of(base), PyApi.of(head))
    services_a = {s.name: s for s in base.services}
    services_b = {s.name: s for s in head.services}
    routes: dict[tuple[str, str], str | None] = {}
    """(kind, subject) -> the route's /vN change, if any."""

    def add(changes: Iterator[Change], service: str, kind: str, subject: str) -> None:
        for rule, detail, cause in changes:
            found.append(Finding(rule, service, kind, subject, detail, cause, field=field_of(detail)))

    for name in sorted(services_a.keys() | services_b.keys()):
        sa, sb = services_a.get(name), services_b.get(name)
        if sa is None:
            found.append(Finding("SERVICE_ADDED", name, "service", name, f"service `{name}` added"))
        elif sb is None:
            found.append(Finding("SERVICE_NO_DELETE", name, "service", name, f"service `{name}` removed"))
        else:
            routes["service", name] = _path_bump(sa.base_path, sb.base_path, "base path")
            add(diff_service(sa, sb), name, "service", name)
            add(diff_classes(api[0].classes.get(name, {}), api[1].classes.get(name, {})), name, "service", name)

    tools_a = {t.name: t for t in base.all_tools()}
    tools_b = {t.name: t for t in head.all_tools()}
    renamed = tool_renames(tools_a, tools_b)
    for name, new in sorted(tools_b.items()):
        old_name = next((o for o, n in renamed.items() if n == name), name)
        old = tools_a.get(old_name)
        if old is None:
            cause = "SERVICE_ADDED" if new.service not in services_a else None
            models = ", ".join(f"`{m}`" for m in surfaces.tool_models(new))
            detail = f"tool `{name}` added (`{new.http_method} {new.http_path}`; models {models})"
            found.append(Finding("TOOL_ADDED", new.service, "tool", name, detail, cause))
            continue
        routes["tool", name] = _path_bump(old.http_path, new.http_path, "route")
        declared = old_name == new.raw.get("renamed_from")
        add(diff_tool(base, head, old, new, old_name != name, api, declared), new.service, "tool", name)
    for name, old in sorted(tools_a.items()):
        if name in tools_b or name in renamed:
            continue
        cause = "SERVICE_NO_DELETE" if old.service not in services_b else None
        models = ", ".join(f"`{m}`" for m in surfaces.tool_models(old))
        detail = f"tool `{name}` removed (`{old.http_method} {old.http_path}`; models {models})"
        found.append(Finding("TOOL_NO_DELETE", old.service, "tool", name, detail, cause))

    res_a = {(s.name, r.name): r for s in base.services for r in s.resources}
    res_b = {(s.name, r.name): r for s in head.services for r in s.resources}
    for key in sorted(res_a.keys() | res_b.keys()):
        ra, rb = res_a.get(key), res_b.get(key)
        svc, name = key
        if ra is None and rb is not None:
            cause = "SERVICE_ADDED" if svc not in services_a else None
            found.append(Finding("RESOURCE_ADDED", svc, "resource", name, f"resource `{rb.uri}` added", cause))
        elif rb is None and ra is not None:
            cause = "SERVICE_NO_DELETE" if svc not in services_b else None
            found.append(Finding("RESOURCE_NO_DELETE", svc, "resource", name, f"resource `{ra.uri}` removed", cause))
        elif ra is not None and rb is not None:
            routes["resource", name] = _path_bump(ra.http_path, rb.http_path, "route")
            add(diff_resource(base, head, ra, rb, api), svc, "resource", name)

    def allowed(f: Finding) -> str | None:
        if f.severity != "breaking":
            return None
        if f.surface == "http":
            return routes.get((f.kind, f.subject))
        if f.surface == "python":
            return _version_bump(services_a.get(f.service), services_b.get(f.service))
        return None  # mcp, http+mcp: MCP tool names carry no version

    unique = {(f.rule, f.service, f.kind, f.subject, f.detail): f for f in found}
    return sorted((replace(f, allowed_by=allowed(f)) for f in unique.values()), key=Finding.sort_key)


def apply_exceptions(findings: list[Finding], exceptions: list[Exception_]) -> tuple[list[Finding], list[Exception_]]:
    """Mark findings an exception accepts; return them and the exceptions that matched nothing."""
    used: set[int] = set()
    out = []
    for f in findings:
        for exc in exceptions:
            if exc.matches(f.rule, f.caused_by, f.service, f.subject, f.field):
                f = replace(f, excused=exc.reason)
                used.add(exc.index)
                break
        out.append(f)
    return out, [e for e in exceptions if e.index not in used]


def review(
    base: SpecTree,
    head: SpecTree,
    exceptions: list[Exception_] | None = None,
    base_label: str = "BASE",
    head_label: str = "HEAD",
    exception_problems: list[str] | None = None,
    base_exceptions: list[Exception_] | None = None,
) -> Review:
    """The review of BASE -> HEAD. `exceptions` come from HEAD's specs/review-exceptions.yaml; those
    also in `base_exceptions` (BASE's file) were written for earlier changes and excuse nothing here."""
    earlier = {e.key for e in base_exceptions or []}
    carried = [e for e in exceptions or [] if e.key in earlier]
    fresh = [e for e in exceptions or [] if e.key not in earlier]
    findings, unused = apply_exceptions(compare(base, head), fresh)
    services_a = {s.name: s for s in base.services}
    services_b = {s.name: s for s in head.services}
    verdicts: dict[str, ServiceVerdict] = {}
    for name in sorted(services_a.keys() | services_b.keys()):
        sa, sb = services_a.get(name), services_b.get(name)
        verdict = ServiceVerdict(
            name,
            sa.version if sa else None,
            sb.version if sb else None,
            _path_bump(sa.base_path, sb.base_path, "base path") if sa and sb else None,
            _version_bump(sa, sb),
        )
        for f in findings:
            if f.service == name and f.severity == "breaking":
                verdict.breaking += 1
                verdict.excused += f.excused is not None
                verdict.allowed += f.excused is None and f.allowed_by is not None
                verdict.unexcused += f.blocking
        verdict.needs = _needs(sa, [f for f in findings if f.service == name and f.blocking])
        verdicts[name] = verdict
    return Review(
        base=base_label,
        head=head_label,
        findings=findings,
        services=verdicts,
        exception_problems=list(exception_problems or []),
        unused_exceptions=unused,
        carried_exceptions=carried,
        base_problems=list(base.problems),
        head_problems=[*lint.lint(head), *_renamed_from_problems(base, head)],
    )
