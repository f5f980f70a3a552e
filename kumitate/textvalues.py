"""JSON values from text: what a form field, a query key, a path segment or a header stands for.

Text carries no types, so each value is read as the JSON type its property's schema declares (`10` an
integer, `on` a boolean, a list as the values repeated); what fits no declared type stays text, and the
schema check then refuses it with the usual message. The HTTP transport reads requests this way
(kumitate.transports.http: forms and REST-shaped parameters), the facade reads an API's response headers
this way (kumitate.forward), and the generator reads the types here too (codegen's lint and OpenAPI).
"""

from collections.abc import Mapping, Sequence
from typing import Any

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


def coerce(text: str, schema: Mapping[str, Any]) -> object:
    """The JSON value a form field stands for; text that fits no declared type stays text (and fails validation)."""
    types = kinds(schema)
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
    if "array" in kinds(schema) and not (len(values) == 1 and values[0].lstrip().startswith("[")):
        items = local(schema.get("items") or {}, root)
        return [coerce(value, items) for value in values]
    return coerce(values[-1], schema)
