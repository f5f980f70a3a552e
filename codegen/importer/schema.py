"""OpenAPI schemas as JSON Schema 2020-12, with `$ref`s into the service's shared types.

`components/schemas` become the `$defs` of specs/<svc>/types/<svc>.json; a ref to one is written
`#/$defs/<Name>` here and pointed into that file when a tool spec is written (`in_tool`). OpenAPI 3.0's
dialect is translated (`nullable`, boolean `exclusiveMinimum`, `example`); what JSON Schema has no use
for (`discriminator`, `xml`, `x-*` extensions) is dropped. A cycle of refs (a tree node holding its
children) is cut where it closes, since kumitate's specs inline every ref: the cut accepts any value.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from codegen.importer.names import pascal
from codegen.refs import JsonT
from codegen.shared import SCHEMA_KEYS, SCHEMA_LISTS, SCHEMA_MAPS

DROPPED_KEYS = frozenset({"discriminator", "xml", "externalDocs", "nullable", "example", "$schema", "$id"})
MAPS = (*SCHEMA_MAPS, "definitions")
"""Keywords holding named subschemas: JSON Schema's, and draft 4's `definitions` some OpenAPI documents keep."""
ONE = SCHEMA_KEYS
LISTS = SCHEMA_LISTS
COMPONENT_REF = re.compile(r"^#/components/schemas/(.+)$")
DEF_REF = re.compile(r"^#/\$defs/(.+)$")
DEF_NAME = re.compile(r"[^A-Za-z0-9_]")
JsonSchema = dict[str, Any]
FORMAT_ALIASES = {"url": "uri"}
"""A `format` no JSON Schema draft or OpenAPI defines, that documents use for one that is: `url` (the ReadMe
and NHS APIs; Prism's validator, ajv-formats, knows it as an http(s)/ftp URL) is JSON Schema's `uri`, so
that the service, which asserts formats, refuses what is no URL (the empty text, a word) as the API would
(a validator that did not know `url` would let it pass)."""


def def_name(component: str) -> str:
    """A component's name as a `$defs` key and a class name: `Pet.Tag` -> `Pet_Tag`."""
    name = DEF_NAME.sub("_", component)
    return name if name[:1].isalpha() else f"T{name}"


class Converter:
    """Converts the document's schemas; holds the converted shared types (`defs`)."""

    def __init__(self, document: dict[str, Any], version: str) -> None:
        self.version = version
        self.document = document
        components = ((document.get("components") or {}).get("schemas")) or {}
        self.names = {name: def_name(name) for name in components}
        self.defs: dict[str, Any] = {}
        self.notes: list[str] = []
        self.overlaps = 0
        """How many `oneOf`s were read as `anyOf` (`_overlapping`)."""
        self.aliased: set[str] = set()
        """The FORMAT_ALIASES the document uses (the import reports each)."""
        for name, schema in components.items():
            self.defs[self.names[name]] = self.convert(schema)

    def convert(self, schema: JsonT) -> JsonT:
        """One schema in JSON Schema 2020-12 with refs to `#/$defs/<Name>`."""
        if isinstance(schema, bool) or not isinstance(schema, dict):
            return schema
        if isinstance(schema.get("$ref"), str):
            return self._ref(schema)
        out: JsonSchema = {}
        for key, value in schema.items():
            if key in DROPPED_KEYS or key.startswith("x-"):
                continue
            if key in MAPS and isinstance(value, dict):
                out[key] = {name: self.convert(sub) for name, sub in value.items()}
            elif key in ONE:
                out[key] = self.convert(value)
            elif key in LISTS and isinstance(value, list):
                out[key] = [self.convert(sub) for sub in value]
            else:
                out[key] = copy.deepcopy(value)
        if out.get("format") in FORMAT_ALIASES:
            self.aliased.add(out["format"])
            out["format"] = FORMAT_ALIASES[out["format"]]
        if "example" in schema and "examples" not in out:
            out["examples"] = [copy.deepcopy(schema["example"])]
        self._exclusive(out)
        if "oneOf" in out and "discriminator" not in schema and self._overlapping(schema["oneOf"]):
            out["anyOf"] = out.pop("oneOf")
            self.overlaps += 1
        if "type" not in out and "properties" in out and not any(k in out for k in LISTS):
            out["type"] = "object"
        return _nullable(out) if schema.get("nullable") is True else out

    def _overlapping(self, branches: object) -> bool:
        """Whether a `oneOf` has an alternative whose every least instance (its required properties alone)
        another alternative accepts too: that one is open (takes any other property), requires no more,
        and declares each property they share as the same schema or not at all. Such an instance is valid
        against two alternatives, so against no `oneOf`:

        - two objects that require nothing: every object (`{}` first) is valid against both (Supabase's
          `/signup` answers a user or a token, both such objects);
        - Lob's bulk verifications answer, per address, a verification (open, requiring nothing) or an
          error, which requires `error`, a property the verification does not declare;
        - Lob's letters are regular (open, requiring `color` and the letter's generated fields), registered
          or certified, each requiring those and an `extra_service` the regular one does not declare.

        The document means `anyOf`; as `oneOf`, the facade would refuse answers the API gives."""
        flats = [self._flat(branch, FLAT_DEPTH) for branch in branches] if isinstance(branches, list) else []
        least = any(
            wide is not None and least is not None and i != j and _accepts_least(wide, least)
            for i, wide in enumerate(flats)
            for j, least in enumerate(flats)
        )
        return least or self._open_beside_object(branches)

    def _open_beside_object(self, branches: object) -> bool:
        """Whether an alternative is an object requiring nothing and taking any other property beside another
        that is an object: an object valid against the other is valid against it too unless it breaks a
        property it declares (openEO's collection summaries are values, statistics `{minimum, maximum}` or a
        JSON Schema, and numeric statistics, the document's own example among them, are also a JSON Schema)."""
        raws = [self._raw(branch) for branch in (branches if isinstance(branches, list) else ())]
        objects = [raw for raw in raws if isinstance(raw, dict) and _takes_objects(raw)]
        return any(
            _open_object(wide) and not self._tells_apart(wide, other)
            for wide in objects
            for other in objects
            if wide is not other
        )

    def _tells_apart(self, wide: dict[str, Any], other: dict[str, Any]) -> bool:
        """Whether `wide` declares a property `other` requires as an enumeration or a constant (Token's
        `kind: [token]` beside a user's required `kind: [user]`): a discriminator, which keeps them apart."""
        declared_properties = wide.get("properties")
        properties: dict[str, Any] = declared_properties if isinstance(declared_properties, dict) else {}
        for name in other.get("required") or ():
            declared = self._raw(properties.get(name))
            if isinstance(declared, dict) and ("enum" in declared or "const" in declared):
                return True
        return False

    def _flat(self, schema: object, depth: int) -> _Flat | None:
        """An object schema of the document with its `allOf` merged: its properties, what it requires, and
        whether it takes any other property; None when it is no such schema (another type, an `anyOf`, an
        enum, properties declared twice differently) or nests deeper than `depth`."""
        raw = self._raw(schema)
        if not isinstance(raw, dict) or depth <= 0 or raw.get("type", "object") != "object":
            return None
        if any(k in raw for k in ("oneOf", "anyOf", "not", "enum", "const")):
            return None
        properties = raw.get("properties")
        flat = _Flat(
            dict(properties) if isinstance(properties, dict) else {},
            {str(name) for name in raw.get("required") or ()},
            raw.get("additionalProperties", True) is True
            and not raw.get("patternProperties")
            and not raw.get("minProperties"),
        )
        for part in raw.get("allOf") or ():
            sub = self._flat(part, depth - 1)
            if sub is None or any(flat.properties.get(n, s) != s for n, s in sub.properties.items()):
                return None
            flat.properties.update(sub.properties)
            flat.required |= sub.required
            flat.open = flat.open and sub.open
        return flat

    def _raw(self, schema: object) -> object:
        """The document's own schema a (chain of) `$ref`s leads to."""
        from codegen.importer.load import resolve

        return resolve(self.document, schema)

    def _ref(self, schema: JsonSchema) -> JsonSchema:
        ref = schema["$ref"]
        match = COMPONENT_REF.match(ref)
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        if match is None:  # a ref into some other part of the document: inline its schema
            from codegen.importer.load import ImportFailed, walk_pointer

            target = walk_pointer(self.document, ref.partition("#")[2], ref)
            if not isinstance(target, dict):
                raise ImportFailed(f"$ref {ref!r} does not lead to a schema object")
            return self.convert({**target, **siblings})
        component = match.group(1).replace("~1", "/").replace("~0", "~")
        out: JsonSchema = {"$ref": f"#/$defs/{self.names.get(component, def_name(component))}"}
        kept = {k: v for k, v in siblings.items() if k in ("description", "title", "default", "readOnly", "writeOnly")}
        if self.version == "3.1":  # 3.0 ignores a ref's siblings; 3.1 applies them
            kept = {k: v for k, v in self.convert(siblings).items() if k != "type"}
        out.update(kept)
        return _nullable(out) if siblings.get("nullable") is True else out

    def _exclusive(self, out: JsonSchema) -> None:
        for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
            flag = out.get(exclusive)
            if isinstance(flag, bool):  # OpenAPI 3.0: a flag on minimum/maximum
                del out[exclusive]
                if flag and bound in out:
                    out[exclusive] = out.pop(bound)

    def target(self, schema: object) -> object:
        """The schema a (chain of) `#/$defs` refs leads to, or `schema` itself."""
        seen: set[str] = set()
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
            match = DEF_REF.match(schema["$ref"])
            if match is None or match.group(1) in seen or match.group(1) not in self.defs:
                return schema
            seen.add(match.group(1))
            schema = self.defs[match.group(1)]
        return schema

    def with_defs(self, schema: JsonT) -> JsonT:
        """`schema` with the shared types attached, to validate an example against it."""
        if not isinstance(schema, dict):
            return schema
        return {**schema, "$defs": {**self.defs, **schema.get("$defs", {})}}


def _nullable(schema: JsonSchema) -> JsonSchema:
    """OpenAPI 3.0's `nullable: true` in JSON Schema: `null` among the types (or the enum), else anyOf."""
    kind = schema.get("type")
    if isinstance(kind, str) and "$ref" not in schema:
        out = {**schema, "type": [kind, "null"]}
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        return out
    if isinstance(kind, list):
        return {**schema, "type": [*kind, "null"]} if "null" not in kind else schema
    described: JsonSchema = {k: schema[k] for k in ("description", "title") if k in schema}
    rest = {k: v for k, v in schema.items() if k not in described}
    return {**described, "anyOf": [rest, {"type": "null"}]}


def walk(schema: object) -> Iterator[JsonSchema]:
    """Every schema object inside `schema`, itself included."""
    if not isinstance(schema, dict):
        return
    yield schema
    for key in MAPS:
        for sub in (schema.get(key) or {}).values() if isinstance(schema.get(key), dict) else ():
            yield from walk(sub)
    for key in ONE:
        yield from walk(schema.get(key))
    for key in LISTS:
        for sub in schema.get(key) or [] if isinstance(schema.get(key), list) else []:
            yield from walk(sub)


def refs(schema: object) -> Iterator[str]:
    """The `$defs` names `schema` refers to directly."""
    for node in walk(schema):
        match = DEF_REF.match(str(node.get("$ref", "")))
        if match:
            yield match.group(1)


def in_tool(schema: JsonT, types_file: str) -> JsonT:
    """`schema` as a tool spec writes it: `#/$defs/X` -> `../types/<svc>.json#/$defs/X`."""
    if isinstance(schema, list):
        return [in_tool(item, types_file) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: in_tool(v, types_file) for k, v in schema.items()}
    ref = out.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        out["$ref"] = f"../types/{types_file}{ref}"
    return out


def break_cycles(defs: dict[str, Any]) -> list[str]:
    """Cut every ref that closes a cycle among `defs` (depth first, in name order); one note per cut."""
    notes: list[str] = []
    state: dict[str, int] = {}

    def visit(name: str) -> None:
        state[name] = 1
        for node in walk(defs[name]):
            match = DEF_REF.match(str(node.get("$ref", "")))
            if not match or match.group(1) not in defs:
                continue
            target = match.group(1)
            if state.get(target) == 1:
                kind = defs[target].get("type") if isinstance(defs[target], dict) else None
                node.pop("$ref")
                if kind == "object":
                    node["type"] = "object"
                node["description"] = (
                    f"{node.get('description', '')} A {target} (a recursive reference, not expanded: any value"
                    " of it is accepted)."
                ).strip()
                notes.append(f"the recursive reference from {name} to {target} is cut (its value is not checked)")
            elif target not in state:
                visit(target)
        state[name] = 2

    for name in sorted(defs):
        if name not in state:
            visit(name)
    return notes


INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
FLOAT_MAX = 3.4028234663852886e38
"""The largest 32-bit float, OpenAPI's `format: float`: a number past it is no float (Prism refuses it)."""


def bound_numbers(schema: object) -> int:
    """Give every integer without a range one (its `format`'s, else int64's), as lint KT112 asks, and every
    `format: float` number float's; the count."""
    added = 0
    low: float
    high: float
    for node in walk(schema):
        if "enum" in node or "const" in node:
            continue
        if node.get("type") == "integer":
            low, high = INT_RANGES.get(str(node.get("format")), INT_RANGES["int64"])
        elif node.get("type") == "number" and node.get("format") == "float":
            low, high = -FLOAT_MAX, FLOAT_MAX
        else:
            continue
        if "minimum" not in node and "exclusiveMinimum" not in node:
            node["minimum"] = low
            added += 1
        if "maximum" not in node and "exclusiveMaximum" not in node:
            node["maximum"] = high
            added += 1
    return added


def title_enums(schema: object, owner: str, top_level: bool, used: set[str]) -> int:
    """Title every enum inside `schema` (not the schema itself when `top_level` names it), as lint KT115
    asks: the owner's name and the property's (`PetStatus`), numbered when taken; the count."""
    count = 0

    def visit(node: object, name: str, is_top: bool) -> None:
        nonlocal count
        if not isinstance(node, dict):
            return
        if "enum" in node and not isinstance(node.get("title"), str) and not is_top:
            title, n = name, 1
            while title in used:
                n += 1
                title = f"{name}{n}"
            used.add(title)
            node["title"] = title
            count += 1
        for key in MAPS:
            for prop, sub in (node.get(key) or {}).items() if isinstance(node.get(key), dict) else ():
                visit(sub, name + pascal(prop), False)
        for key in ONE:
            visit(node.get(key), name + ("Item" if key == "items" else pascal(key)), False)
        for key in LISTS:
            for i, sub in enumerate(node.get(key) or [] if isinstance(node.get(key), list) else []):
                visit(sub, f"{name}{i + 1}" if key != "allOf" else name, False)

    visit(schema, owner, top_level)
    return count


def _takes_objects(schema: dict[str, Any]) -> bool:
    """Whether a schema is one of objects: `type: object`, or no type and properties or required names."""
    kind = schema.get("type")
    return kind == "object" or (kind is None and any(k in schema for k in ("properties", "required")))


def _open_object(schema: dict[str, Any]) -> bool:
    """Whether a schema takes every object its declared properties do not refuse: it requires nothing, takes
    any other property and has no composition or enumeration that could refuse more."""
    return (
        schema.get("type", "object" if "properties" in schema else None) == "object"
        and not schema.get("required")
        and schema.get("additionalProperties", True) is not False
        and not schema.get("minProperties")
        and not any(k in schema for k in ("allOf", "oneOf", "anyOf", "not", "enum", "const"))
    )


FLAT_DEPTH = 8
"""How deep `allOf`s (through `$ref`s) are merged to compare the alternatives of a `oneOf`."""


@dataclass
class _Flat:
    """An object schema with its `allOf` merged (Converter._flat)."""

    properties: dict[str, Any]
    required: set[str]
    open: bool
    """Whether it takes any property it does not declare, as it comes."""


def _accepts_least(wide: _Flat, least: _Flat) -> bool:
    """Whether `wide` accepts every instance of `least` that holds its required properties alone."""
    return (
        wide.open
        and wide.required <= least.required
        and all(
            name not in wide.properties or wide.properties[name] == least.properties.get(name)
            for name in least.required
        )
    )
