"""The generated Python API as a surface: models, their fields and types, shared `$defs` classes.

Fields come from codegen's bundle (surfaces.py derives them); a Python finding on a field that also
changed on the wire is linked to the wire finding (with_causes), so one exception covers both.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from codegen.review import surfaces
from codegen.review.findings import Change, show
from codegen.review.renames import class_renames
from codegen.review.rules import RULES
from codegen.specs import SpecTree

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
            in_list = "[]" in path[len(target) :]
            yield from _field_changes(path, fld, now, is_input, in_list, classes or {})
        for path, now in new[target].items():
            if path not in after:
                yield _field_added(path, now, is_input)
    targets = {renamed.get(m, m) for m in old}
    for model in new:
        if model not in targets:
            yield "PY_MODEL_ADDED", f"model `{model}` added", caused_by


def _field_changes(
    path: str, fld: surfaces.PyField, now: surfaces.PyField, is_input: bool, in_list: bool, classes: dict[str, str]
) -> Iterator[Change]:
    """How a field kept at `path` changed: its type (read with the renamed shared classes' new names,
    widened for an input or narrowed for an output being compatible), its enum members, whether it is
    required (a new required field inside a list item is not a new argument: `in_list`)."""
    was = surfaces.rename_types(fld.type, classes)
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
                yield "PY_ENUM_MEMBER_NO_DELETE", f"`{path}`: enum member {show(value)} removed", None
    if is_input and now.required and not fld.required and not in_list:
        yield "PY_INPUT_FIELD_REQUIRED", f"`{path}` is now a required argument", "INPUT_FIELD_NOW_REQUIRED"
    if not is_input and fld.required and not now.required:
        yield "PY_OUTPUT_FIELD_OPTIONAL", f"`{path}` is now Optional", "OUTPUT_FIELD_NOW_OPTIONAL"


def _field_added(path: str, now: surfaces.PyField, is_input: bool) -> Change:
    """A field new at `path`: a required input field is a new required argument of the generated method."""
    if is_input and now.required:
        return (
            "PY_INPUT_FIELD_REQUIRED",
            f"`{path}` added as a required argument ({now.type})",
            "INPUT_FIELD_ADDED_REQUIRED",
        )
    return "PY_FIELD_ADDED", f"`{path}` added ({now.type})", None


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


@dataclass(slots=True)
class PyApi:
    """A side's generated Python API: the codegen bundle of each service and its shared classes."""

    defs: dict[str, surfaces.Defs | None]
    classes: dict[str, dict[str, surfaces.SharedClass]]

    @classmethod
    def of(cls, tree: SpecTree) -> PyApi:
        """The generated Python API of every service of `tree`."""
        defs = {svc.name: surfaces.service_defs(svc, tree.root) for svc in tree.services}
        return cls(defs, {svc.name: surfaces.shared_classes(svc, defs[svc.name]) for svc in tree.services})


_WIRE_AT = re.compile(r"^(input|output) `([^`]*)`")
_PY_AT = re.compile(r"`\w+?(Input|Output|Resource)((?:\.|\[\])[^`]*)`")


def with_causes(wire: list[Change], python: Iterator[Change]) -> Iterator[Change]:
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
