"""How tool arguments travel as form fields (urlencoded or multipart).

A form field is text, so each one is read back as the JSON type its property
declares. `form_schema` is the same rule seen from the other side: the schema the
OpenAPI document shows for form bodies, so that what is documented is exactly what
is accepted.
"""

from collections.abc import Mapping
from typing import Any

import msgspec

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


def coerce(text: str, schema: Mapping[str, Any]) -> Any:
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


def form_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The input schema as a form body: boolean fields also take their form words (on, 1, ...)."""
    properties = {}
    for name, prop in schema.get("properties", {}).items():
        if "boolean" in kinds(prop):
            words: list[Any] = [0, 1, *BOOLEAN_WORDS]
            prop = {k: v for k, v in prop.items() if k != "type"}
            prop["anyOf"] = [{"type": "boolean"}, {"enum": words}]
        properties[name] = prop
    return {**schema, "properties": properties}
