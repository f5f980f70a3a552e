"""An answer less the properties its schema marks `writeOnly`.

OpenAPI's `writeOnly` is a property a client sends and an API never answers (a password, a secret, an
upload). A facade (kumitate.forward) passes an API's answer on: where the API (or a stub of it) echoes
such a property, the facade leaves it out rather than hand a secret to every caller, and its answer keeps
to what the document promises its clients (a fuzzer reads `writeOnly` in a response as "must not be
there"). Where a property's schema has alternatives (`oneOf`, `anyOf`, `allOf`), a name any of them marks
`writeOnly` is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kumitate.textvalues import local

Schema = Mapping[str, Any]
COMBINATORS = ("allOf", "oneOf", "anyOf")


def without_write_only(value: object, schema: Schema, root: Schema) -> object:
    """`value` with every object property that `schema` (refs into `root`'s `$defs`) marks `writeOnly`
    left out, at any depth; anything else as it was."""
    if isinstance(value, dict):
        return object_without_write_only(value, schema, root)
    if isinstance(value, list):
        items = [b["items"] for b in _branches(schema, root) if isinstance(b.get("items"), Mapping)]
        stripped = []
        for element in value:
            for item_schema in items:
                element = without_write_only(element, item_schema, root)
            stripped.append(element)
        return stripped
    return value


def object_without_write_only(value: Mapping[str, object], schema: Schema, root: Schema) -> dict[str, object]:
    """An object answer less its `writeOnly` properties (`without_write_only` for an object)."""
    hidden: set[str] = set()
    children: dict[str, list[Schema]] = {}
    for branch in _branches(schema, root):
        for name, prop in (branch.get("properties") or {}).items():
            if isinstance(prop, Mapping):
                if local(prop, root).get("writeOnly") is True:
                    hidden.add(name)
                children.setdefault(name, []).append(prop)
    out: dict[str, object] = {}
    for name, item in value.items():
        if name not in hidden:
            for child in children.get(name, ()):
                item = without_write_only(item, child, root)
            out[name] = item
    return out


def _branches(schema: Schema, root: Schema, depth: int = 0) -> list[Schema]:
    """`schema` resolved, with every schema its combinators name, flattened (bounded, for a ref cycle)."""
    node = local(schema, root)
    found = [node]
    if depth < 16:
        for key in COMBINATORS:
            for part in node.get(key) or ():
                if isinstance(part, Mapping):
                    found += _branches(part, root, depth + 1)
    return found
