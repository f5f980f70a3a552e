"""A schema as an answer reads it: OpenAPI's `required` binds a `writeOnly` property in requests only, and
an answer is held to the properties a type declares.

OpenAPI says a property that is both required and `writeOnly` must be sent, and is never answered (the
Redocly Cafe's `OrderItem` requires `menuItemId`, a write-only id). JSON Schema has no such rule, so an
output schema that keeps the `required` would refuse every real answer. A shared type that requires a
write-only property, directly or in a type it refers to, gets an answer view beside it (`OrderItemAnswer`:
the same type without that `required`), and an output refers to the views; requests keep the type itself.
The same holds for a name a type requires without declaring it (`_undeclared`). The import report lists
the views made (`AnswerViews.made`).
"""

from __future__ import annotations

from typing import Any

from codegen.importer.schema import DEF_REF, LISTS, MAPS, ONE, Converter
from codegen.refs import JsonT

SUFFIX = "Answer"


class AnswerViews:
    """The answer views of a converter's shared types, made as outputs need them (into `convert.defs`)."""

    def __init__(self, convert: Converter) -> None:
        self.convert = convert
        self.views: dict[str, str] = {}
        """Shared type -> its answer view's name (itself when it needs none)."""
        self.made: list[str] = []
        """Each view made, and what it leaves out, for the import report."""

    def answer(self, schema: JsonT) -> JsonT:
        """`schema` requiring no write-only property and no undeclared one, at any depth, through refs to
        shared types."""
        if isinstance(schema, list):
            return [self.answer(item) for item in schema]  # type: ignore[return-value]
        if not isinstance(schema, dict):
            return schema
        out: dict[str, Any] = {}
        for key, value in schema.items():
            match = DEF_REF.match(value) if key == "$ref" and isinstance(value, str) else None
            if match is not None:
                out[key] = f"#/$defs/{self._view(match.group(1))}"
            elif key in MAPS and isinstance(value, dict):
                out[key] = {name: self.answer(sub) for name, sub in value.items()}
            elif key in ONE or key in LISTS:
                out[key] = self.answer(value)
            else:
                out[key] = value
        if isinstance(out.get("required"), list):
            unsent = self._write_only(out) | _undeclared(out)
            out["required"] = [name for name in out["required"] if name not in unsent]
            if not out["required"]:
                del out["required"]
        return out

    def _write_only(self, schema: dict[str, Any]) -> set[str]:
        properties = schema.get("properties") or {}
        return {
            name
            for name, prop in properties.items()
            if isinstance(prop, dict)
            and (prop.get("writeOnly") is True or _flag(self.convert.target(prop), "writeOnly"))
        }

    def _view(self, name: str) -> str:
        if name in self.views:
            return self.views[name]
        defs = self.convert.defs
        if name not in defs:
            return name
        self.views[name] = name  # a ref cycle back to this type, while it is looked at, keeps the type
        view = self.answer(defs[name])
        if view == defs[name]:
            return name
        fresh = name + SUFFIX
        while fresh in defs:
            fresh += "_"
        defs[fresh] = view
        self.views[name] = fresh
        self.made.append(f"{fresh} ({name} as an answer: {_what_changed(defs[name], view)})")
        return fresh


def _what_changed(before: dict[str, Any], after: dict[str, Any]) -> str:
    dropped = [name for name in before.get("required") or () if name not in (after.get("required") or ())]
    return f"not required: {', '.join(dropped)}" if dropped else "refers to answer views"


def _flag(schema: object, key: str) -> bool:
    return isinstance(schema, dict) and schema.get(key) is True


def _undeclared(schema: dict[str, Any]) -> set[str]:
    """The names an object requires but does not declare, where its `properties` are all it declares (no
    alternatives, no refs, no pattern): Xero Files' `FileObject` requires `id`, `name`, `manufacturer`
    and `releaseDate` (an inventory sample's) and declares `Id` and `Name`; its API answers those. A
    request must still send them (inputs.py); an answer is not held to a name whose type the document
    never gives, where holding it would refuse every answer the API really gives."""
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        return set()
    if any(key in schema for key in ("allOf", "anyOf", "oneOf", "$ref", "patternProperties", "if", "not")):
        return set()
    return {name for name in schema.get("required") or () if name not in properties}
