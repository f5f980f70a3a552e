"""JSON values from text: what a form field, a query key, a path segment or a header stands for.

Text carries no types, so each value is read as the JSON type its property's schema declares (`10` an
integer, `on` a boolean, a list as the values repeated); a value of an `anyOf` / `oneOf` as the first
alternative it is valid as (`42` for `anyOf: [integer, uuid string]` is the integer, as a client that sent
the point id 42 meant); what fits no declared type stays text, and the schema check then refuses it with
the usual message. The HTTP transport reads requests this way (kumitate.transports.http: forms and
REST-shaped parameters); a REST-shaped answer's response headers are read this way by whoever reads one
(kumitate.httpshape `HttpShape.result`: the facade of an API, the HTTP clients, the example runner); and
the generator reads the types here too (codegen's lint and OpenAPI).
"""

from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema_rs
import msgspec

__all__ = ["BOOLEAN_WORDS", "coerce", "from_text", "kinds", "local"]

BOOLEAN_WORDS: dict[str, bool] = {
    "true": True,
    "false": False,
    "True": True,
    "False": False,
    "1": True,
    "0": False,
    "on": True,
    "off": False,
}


def kinds(schema: Mapping[str, Any]) -> set[str]:
    """The JSON types `schema` declares, whether `type` is one name or a list of them."""
    declared = schema.get("type")
    return set(declared) if isinstance(declared, list) else {declared} if isinstance(declared, str) else set()


def local(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """`schema`, or the `#/$defs/<name>` of `root` it refers to (advertised schemas share repeated types)."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = (root.get("$defs") or {}).get(ref.removeprefix("#/$defs/"))
        if isinstance(target, Mapping):
            return target
    return schema


_VALIDATORS: dict[tuple[int, bool], tuple[Mapping[str, Any], jsonschema_rs.Draft202012Validator]] = {}
"""A validator per alternative schema and format assertion, by the schema's id (the schema kept with it,
so the id is not reused)."""


def _valid(value: object, schema: Mapping[str, Any], root: Mapping[str, Any], formats: bool) -> bool:
    """Whether `value` is valid under `schema`, an alternative inside `root` (whose `$defs` its refs name)."""
    cached = _VALIDATORS.get((id(schema), formats))
    if cached is None or cached[0] is not schema:
        try:
            compiled = {**schema, "$defs": root.get("$defs") or {}}
            validator = jsonschema_rs.Draft202012Validator(compiled, validate_formats=formats)
        except ValueError:  # a schema the validator cannot compile: the input's own check says so
            return False
        cached = _VALIDATORS[(id(schema), formats)] = (schema, validator)
    return bool(cached[1].is_valid(value))


def _alternative(text: str, schema: Mapping[str, Any], root: Mapping[str, Any]) -> object:
    """The value `text` stands for under an `anyOf` / `oneOf`: read as each alternative in turn, the first
    read that alternative accepts, its `format` asserted (`42` is not a uuid, so `anyOf: [uuid string,
    integer]` reads it as the integer) or, where no read passes so, not; none: the text (the schema check
    then says why)."""
    options = schema.get("anyOf") or schema.get("oneOf")
    alternatives = [local(o, root) for o in options if isinstance(o, Mapping)] if isinstance(options, list) else []
    reads = [(coerce(text, option, root), option) for option in alternatives]
    for formats in (True, False):
        for value, option in reads:
            if _valid(value, option, root, formats):
                return value
    return text


def _null_word(text: str, schema: Mapping[str, Any], types: set[str], root: Mapping[str, Any]) -> bool:
    """Whether `text` is JSON's null, as kumitate writes one in a form or a header (`null`): where the schema
    takes null, unless the string `null` is a value it takes too (a nullable string with no format, pattern
    or enum that leaves it out)."""
    if text != "null" or "null" not in types:
        return False
    return "string" not in types or not _valid(text, schema, root, True)


def _typed_part(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int = 8) -> Mapping[str, Any] | None:
    """The schema a `$ref` names, or the first part of an `allOf` that says a type (or alternatives), through
    `$ref`s and nested `allOf`s; None when none does."""
    target = local(schema, root)
    if depth <= 0:
        return None
    if kinds(target) or isinstance(target.get("anyOf") or target.get("oneOf"), list):
        return target
    for part in target.get("allOf") or () if isinstance(target.get("allOf"), list) else ():
        found = _typed_part(part, root, depth - 1) if isinstance(part, Mapping) else None
        if found is not None:
            return found
    return None


def coerce(text: str, schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> object:
    """The JSON value a form field stands for; text that fits no declared type stays text (and fails validation).
    `root` holds the `$defs` the alternatives of an `anyOf` / `oneOf` name (`schema` itself when None). A
    schema that is a `$ref` or an `allOf` (Lob's `color`: `allOf: [{$ref: Color}, {default: false}]`) is read
    as the first of its parts that says a type."""
    types = kinds(schema)
    if not types and ("$ref" in schema or isinstance(schema.get("allOf"), list)):
        typed = _typed_part(schema, schema if root is None else root)
        if typed is not None:
            return coerce(text, typed, schema if root is None else root)
    if _null_word(text, schema, types, schema if root is None else root):
        return None
    if not types and isinstance(schema.get("anyOf") or schema.get("oneOf"), list):
        return _alternative(text, schema, schema if root is None else root)
    if types & {"object", "array"}:
        try:
            return msgspec.json.decode(text)
        except msgspec.DecodeError:
            return text
    if "boolean" in types and text in BOOLEAN_WORDS:
        return BOOLEAN_WORDS[text]
    if types & {"integer", "number"}:
        try:
            return int(text)
        except ValueError:
            pass
        try:
            number = float(text)
        except ValueError:
            return text
        return int(number) if "number" not in types and number.is_integer() else number
    return text


def from_text(values: Sequence[str], schema: Mapping[str, Any], root: Mapping[str, Any]) -> object:
    """The JSON value of one property sent as text `values` (a field or key repeated, in order): for an
    array each value read as an item (one value that is JSON text, `[...]`, is the list itself), else the
    last value read as the property; `root` holds the `$defs` its refs name."""
    if (
        len(values) == 1
        and _null_word(values[0], schema, kinds(schema), root)
        and not _valid(values, schema, root, True)
    ):
        return None  # a nullable list sent as null, not a list of the one item `null`
    if "array" in kinds(schema) and not (len(values) == 1 and values[0].lstrip().startswith("[")):
        items = local(schema.get("items") or {}, root)
        return [coerce(value, items, root) for value in values]
    return coerce(values[-1], schema, root)
