"""How tool arguments travel as form fields (urlencoded or multipart).

A form field is text, so each one is read back as the JSON type its property
declares. A form cannot nest either: an object property the spec names in
`http.form_flatten` (yana's `filters`) also takes its own properties as fields of
their own (`category=sake&region=小樽`), gathered back into the object
(`Flattened`). An object property the spec names in `http.form_deep_objects` (Lob's
`to`) may come in OpenAPI's deepObject style, a field per property of the object
(`to[name]=Harry&to[address_city]=SF`), gathered back into it (`DeepObjects`).
JSON bodies stay as the schema says. `form_schema` is the same rules seen from the
other side: the schema the OpenAPI document shows for form bodies, so that what is
documented is exactly what is accepted.
"""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kumitate.errors import ToolError
from kumitate.textvalues import BOOLEAN_WORDS, coerce, kinds, local

__all__ = ["BOOLEAN_WORDS", "DeepObjects", "Flattened", "coerce", "form_schema", "kinds", "local"]

DEEP_KEY = re.compile(r"([^\[\]]+)((?:\[[^\[\]]*\])+)")
"""A deepObject field's name: the property, then one `[key]` per level (`to[name]`, `metadata[a][b]`)."""


@dataclass(frozen=True, slots=True)
class Flattened:
    """The form fields that stand for properties of an object property (`category` for `filters.category`)."""

    fields: Mapping[str, tuple[str, Mapping[str, Any]]]
    """flat field name -> (the object property it belongs in, its schema)"""

    @classmethod
    def of(cls, schema: Mapping[str, Any], groups: Sequence[str]) -> "Flattened":
        """The fields of `groups` (object properties of `schema`) as top-level form fields."""
        fields = {}
        for group in groups:
            target = local(schema.get("properties", {}).get(group, {}), schema)
            for name, prop in target.get("properties", {}).items():
                fields[name] = (group, local(prop, schema))
        return cls(fields)

    def schema(self, key: str, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        """The schema a form field is read by: its own property's, or the one it stands for."""
        if key in self.fields:
            return self.fields[key][1]
        return local(schema.get("properties", {}).get(key, {}), schema)

    def nest(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """`arguments` with each flat field moved into its object; the object given whole as well is BAD_REQUEST."""
        out = {key: value for key, value in arguments.items() if key not in self.fields}
        for key, (group, _) in self.fields.items():
            if key not in arguments:
                continue
            if group in arguments:
                flat = ", ".join(name for name, (g, _) in self.fields.items() if g == group)
                raise ToolError(
                    f"send {group} either as fields of their own ({flat}) or as one JSON field {group!r}, not both",
                    code="BAD_REQUEST",
                )
            out.setdefault(group, {})[key] = arguments[key]
        return out


@dataclass(slots=True)
class DeepObjects:
    """The fields of a form that stand for properties of objects sent in OpenAPI's deepObject style
    (`to[name]=Harry`), gathered back into their objects; an object sent both whole and by its fields
    is BAD_REQUEST."""

    names: frozenset[str]
    gathered: dict[str, dict[str, object]] = field(default_factory=dict)

    def path(self, key: str) -> tuple[str, list[str]] | None:
        """(the object property, the keys inside it) a field name stands for; None for another field."""
        match = DEEP_KEY.fullmatch(key) if self.names else None
        if match is None or match.group(1) not in self.names:
            return None
        return match.group(1), re.findall(r"\[([^\[\]]*)\]", match.group(2))

    def put(self, name: str, keys: Sequence[str], value: object) -> None:
        """`value` at `keys` inside the object `name`; a key that is a value already and an object too is
        BAD_REQUEST (`to[a]=1&to[a][b]=2`)."""
        node = self.gathered.setdefault(name, {})
        for key in keys[:-1]:
            inner = node.setdefault(key, {})
            if not isinstance(inner, dict):
                raise ToolError(f"form field {name}[{key}] is both a value and an object", code="BAD_REQUEST")
            node = inner
        if isinstance(node.get(keys[-1]), dict):
            raise ToolError(f"form field {name}[{keys[-1]}] is both a value and an object", code="BAD_REQUEST")
        node[keys[-1]] = value

    def nest(self, arguments: dict[str, object]) -> dict[str, object]:
        """`arguments` with each gathered object in its property."""
        for name, value in self.gathered.items():
            if name in arguments:
                raise ToolError(
                    f"send {name} either as fields {name}[...] or as one JSON field {name!r}, not both",
                    code="BAD_REQUEST",
                )
            arguments[name] = value
        return arguments


def may_be_object(schema: object, root: Mapping[str, Any], depth: int = 8) -> bool:
    """Whether a value of `schema` may be an object: by its type, its properties, or an alternative or part
    that may be (Lob's `to`, an address id or an address), `$ref`s into `root`'s `$defs` followed."""
    if not isinstance(schema, Mapping) or depth <= 0:
        return False
    target = local(schema, root)
    kind = target.get("type")
    if kind is not None:
        return kind == "object" or (isinstance(kind, list) and "object" in kind)
    if "properties" in target or "additionalProperties" in target:
        return True
    parts = [p for key in ("anyOf", "oneOf", "allOf") for p in target.get(key) or ()]
    return any(may_be_object(part, root, depth - 1) for part in parts)


def member_schema(schema: Mapping[str, Any], keys: Sequence[str], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """The schema of the value at `keys` inside an object of `schema` (its properties, those of its
    alternatives and parts, else its `additionalProperties`); `{}` where none says (read as text)."""
    for key in keys:
        target = local(schema, root)
        declared = value_fields(target, root).get(key)
        extra = target.get("additionalProperties")
        schema = declared if declared is not None else local(extra, root) if isinstance(extra, Mapping) else {}
    return schema


def value_fields(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int = 8) -> dict[str, Mapping[str, Any]]:
    """The form fields of a body that is one property's value (`body: {property: X}`): field name -> the
    schema it is read by, from the value's own `properties` and those of each alternative or part of its
    `oneOf` / `anyOf` / `allOf` (the first that declares a name; Lob's address is a `oneOf` of a US and an
    international one), `$ref`s followed in `root`."""
    target = local(schema, root)
    fields = {name: local(prop, root) for name, prop in (target.get("properties") or {}).items()}
    for key in ("allOf", "oneOf", "anyOf"):
        for part in target.get(key) or () if depth > 0 and isinstance(target.get(key), list) else ():
            for name, prop in value_fields(part, root, depth - 1).items() if isinstance(part, Mapping) else ():
                fields.setdefault(name, prop)
    return fields


def form_schema(schema: Mapping[str, Any], flatten: Sequence[str] = ()) -> dict[str, Any]:
    """The input schema as a form body: boolean fields also take their form words (on, 1, ...), a field of
    no declared type is text, a required list has at least one item (a form writes an empty one as no field,
    which is the list missing), and the properties of each object in `flatten` are fields of their own too
    (that object, or they, not both)."""
    flat = Flattened.of(schema, flatten)
    merged = dict(schema.get("properties", {}))
    for name, (group, prop) in flat.fields.items():
        merged[name] = {**prop, "description": f"{prop.get('description', '')} (form bodies: {group}.{name})".strip()}
    properties = {}
    required = set(schema.get("required") or ())
    for name, prop in merged.items():
        prop = _as_text_if_untyped(prop)
        if "array" in kinds(local(prop, schema)) and isinstance(prop.get("items"), Mapping):
            prop = {**prop, "items": _as_text_if_untyped(prop["items"])}
            if name in required and not prop.get("minItems"):
                # an empty list is no field at all in a form (OpenAPI's form style): a required one needs an item
                prop["minItems"] = 1
        if "boolean" in kinds(prop):
            prop = {k: v for k, v in prop.items() if k != "type"}
            # one type per branch, the words a pattern: a generator makes a union of the branches (an enum of
            # ints and strings it drops, and `true` / `True` as enum members are one name to it)
            words = {"type": "string", "pattern": "^(" + "|".join(BOOLEAN_WORDS) + ")$"}
            prop["anyOf"] = [{"type": "boolean"}, {"type": "integer", "enum": [0, 1]}, words]
        properties[name] = prop
    out = {**schema, "properties": properties}
    if flat.fields:
        out["not"] = {"anyOf": [{"required": [name, group]} for name, (group, _) in flat.fields.items()]}
    return out


TYPING_KEYWORDS = frozenset({"type", "$ref", "anyOf", "oneOf", "allOf", "not", "enum", "const"})


def _as_text_if_untyped(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """A form field whose schema says nothing of its type (`{}`, Twilio's `Items` entries) arrives as its
    text and is read as that text (`coerce`), never null, a number or an object: documented as a string."""
    return schema if TYPING_KEYWORDS & schema.keys() else {**schema, "type": "string"}
