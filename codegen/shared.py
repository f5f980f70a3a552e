"""Shared definitions in an advertised tool schema: a subschema repeated within one schema is
emitted once under `$defs` and referenced with a local `$ref`.

Spec schemas are dereferenced on load (codegen.refs), which inlines every use of a type: the
AttendanceRule of get_attendance_rule's output appeared once for the current rule and once per
history item. MCP clients (and jsonschema_rs in the pipeline) resolve local `#/$defs/...`
refs, so the schema a tool advertises keeps each repeated subschema once. Each inputSchema and
outputSchema stays self-contained: MCP has no place for definitions shared across tools.

Only schema positions are rewritten (properties, items, oneOf, ...), never data keywords such
as `default`, `const` or `enum`. A subschema is hoisted only when that makes the schema
shorter; the largest saving goes first, so a type nested in a hoisted one is counted again
inside its definition. A definition is named after the `types/` definition it came from
(`names`: canonical JSON -> name), else its title, else the property that first holds it.
"""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")
SCHEMA_KEYS = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
)
SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
REF_PREFIX = "#/$defs/"
_IDENT = re.compile(r"[^A-Za-z0-9_]+")


def canonical(schema: object) -> str:
    """The schema as canonical JSON text: two identical definitions give the same text, and are shared."""
    return json.dumps(schema, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def children(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(hint, subschema) for each subschema directly under `schema`; the hint names its place."""
    for key in SCHEMA_MAPS:
        value = schema.get(key)
        if isinstance(value, dict):
            for name, sub in value.items():
                if isinstance(sub, dict):
                    yield name, sub
    for key in SCHEMA_KEYS:
        value = schema.get(key)
        if isinstance(value, dict):
            yield key, value
    for key in SCHEMA_LISTS:
        value = schema.get(key)
        if isinstance(value, list):
            for sub in value:
                if isinstance(sub, dict):
                    yield key, sub


def _rewrite(schema: dict[str, Any], fn: Callable[[dict[str, Any]], dict[str, Any] | None]) -> dict[str, Any]:
    """A copy of `schema` where each subschema for which `fn` returns a replacement is replaced
    (and not descended into); the root itself is never replaced."""

    def sub(node: dict[str, Any]) -> dict[str, Any]:
        replaced = fn(node)
        return replaced if replaced is not None else _rewrite(node, fn)

    out = dict(schema)
    for key in SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {k: sub(v) if isinstance(v, dict) else v for k, v in out[key].items()}
    for key in SCHEMA_KEYS:
        if isinstance(out.get(key), dict):
            out[key] = sub(out[key])
    for key in SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [sub(v) if isinstance(v, dict) else v for v in out[key]]
    return out


def _occurrences(schema: dict[str, Any], counts: Counter[str], hints: dict[str, str]) -> None:
    for hint, sub in children(schema):
        text = canonical(sub)
        counts[text] += 1
        hints.setdefault(text, hint)
        _occurrences(sub, counts, hints)


def _name(text: str, schema: dict[str, Any], hint: str, names: dict[str, str], taken: set[str]) -> str:
    title = schema.get("title")
    base = names.get(text) or (title if isinstance(title, str) else "") or hint
    base = "".join(part[:1].upper() + part[1:] for part in _IDENT.split(base) if part) or "Shared"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}{n}", n + 1
    return name


def hoist(schema: dict[str, Any], names: dict[str, str] | None = None) -> dict[str, Any]:
    """`schema` with each repeated subschema moved to `$defs` (see the module docstring)."""
    names = names or {}
    root = copy.deepcopy(schema)
    defs: dict[str, Any] = dict(root.pop("$defs", None) or {})
    while True:
        counts: Counter[str] = Counter()
        hints: dict[str, str] = {}
        _occurrences(root, counts, hints)
        for body in defs.values():
            _occurrences(body, counts, hints)
        best, saving = None, 0
        for text, count in counts.items():
            ref_cost = len(canonical({"$ref": REF_PREFIX})) + 24  # the ref and the name, about
            gain = (count - 1) * len(text) - count * ref_cost
            if count > 1 and gain > saving:
                best, saving = text, gain
        if best is None:
            break
        name = _name(best, json.loads(best), hints[best], names, set(defs))
        ref = {"$ref": REF_PREFIX + name}

        def swap(node: dict[str, Any], target: str = best, ref: dict[str, str] = ref) -> dict[str, Any] | None:
            return dict(ref) if canonical(node) == target else None

        root = _rewrite(root, swap)
        defs = {k: _rewrite(v, swap) for k, v in defs.items()}
        defs[name] = json.loads(best)
    if defs:
        root["$defs"] = dict(sorted(defs.items()))
    return root
