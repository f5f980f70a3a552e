"""Rename detection: tools (`renamed_from`), schema fields (`x-renamed-from`) and shared classes, each
declared or inferred from an identical schema when exactly one removed and one added thing match."""

from __future__ import annotations

from typing import Any

from codegen.refs import JsonT
from codegen.review import surfaces
from codegen.specs import Problem, SpecTree, ToolSpec

RENAMED_FROM = "x-renamed-from"
"""Declared on a field's schema in HEAD: the name the field had in BASE."""


def bare(schema: JsonT) -> JsonT:
    """`schema` without its `x-renamed-from` annotation (a rename note is not a change of the schema)."""
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
        same = [o for o in gone if bare(old[o]) == bare(new[name])]
        twins = [n for n in fresh if bare(new[n]) == bare(new[name])]
        if len(same) == 1 and len(twins) == 1:
            out[name] = (same[0], False)
            gone.remove(same[0])
    return out


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


def renamed_from_problems(base: SpecTree, head: SpecTree) -> list[Problem]:
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
