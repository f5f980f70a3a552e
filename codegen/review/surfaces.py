"""What each reviewed surface is, derived from a loaded tool or resource.

- HTTP wire: method, path, content types, the status codes a route can return (declared
  errors plus the generic ones, mapped through the catalogue), auth scopes, request and
  response bodies (the JSON Schemas, compared in schemas.py).
- MCP: tool names, inputSchema/outputSchema (the same schemas), annotations, resource URIs.
- MCP as served: the `tools/list` entry (codegen.docs.tool_list_entry), which adds what policy
  derives from the spec: `idempotency_key` in the inputSchema, the deprecation note in the
  description.
- Python API: the generated pydantic classes, named as codegen.models names them: one per shared
  `$defs` type (types/*.json, under its own name) and <Tool>Input, <Tool>Output,
  <Resource>Resource. Fields and their Python types are derived from the bundle codegen feeds to
  datamodel-code-generator (string -> str, integer -> int, a shared type -> its class name, ...);
  classes datamodel-code-generator names after a field (an inline enum or object) are followed by
  their field path, and their enum members are compared.
- LLM text: summaries, descriptions, titles, examples, instructions.
"""

from __future__ import annotations

import json
import keyword
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codegen import models, naming
from codegen.refs import JsonValue
from codegen.specs import GENERIC_ERRORS, ResourceSpec, ServiceSpec, SpecTree, ToolSpec


def statuses(tree: SpecTree, codes: list[str]) -> dict[int, list[str]]:
    """HTTP status -> the codes that produce it, for a tool's declared codes plus the generic ones."""
    out: dict[int, list[str]] = {}
    for code in sorted(set(codes) | set(GENERIC_ERRORS)):
        if code in tree.errors:
            out.setdefault(tree.errors[code].status, []).append(code)
    return out


# --- the generated Python API ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PyField:
    """A field of a generated model as the Python API sees it: its type, whether it is required, and its
    enum members."""

    type: str
    required: bool
    members: tuple[Any, ...] = ()
    """The values of the Enum class the field is typed with (inline or shared), if any."""


Defs = dict[str, Any]
"""Class name -> its schema, as in the bundle codegen feeds datamodel-code-generator (refs to shared
types are `#/$defs/<Name>`, everything else is inlined)."""

_REF = re.compile(r"^#/\$defs/([^/]+)$")


def py_field_name(name: str) -> str:
    """The attribute name datamodel-code-generator gives a property (the JSON name stays the alias)."""
    out = re.sub(r"\W", "_", name)
    if not out or out[0].isdigit():
        out = f"field_{out}"
    if keyword.iskeyword(out) or out in ("model_config", "model_fields"):
        out += "_"
    return out


_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
_FORMATS = {"date-time": "AwareDatetime", "date": "date", "time": "time", "uuid": "UUID"}


def service_defs(svc: ServiceSpec, root: Path) -> Defs | None:
    """The classes codegen generates for a service; None when the bundle cannot be built (broken refs)."""
    try:
        defs = models.bundle(svc, root)["$defs"]
    except Exception:  # a half-broken side: fall back to the dereferenced schemas
        return None
    return defs if isinstance(defs, dict) else None


def _ref_name(schema: object, defs: Defs | None) -> str | None:
    if defs is None or not isinstance(schema, dict) or not isinstance(schema.get("$ref"), str):
        return None
    match = _REF.match(schema["$ref"])
    return match.group(1) if match and match.group(1) in defs else None


def _resolve(schema: JsonValue, defs: Defs | None, seen: frozenset[str] = frozenset()) -> JsonValue:
    """A schema with a top-level ref to a shared type replaced by that type (sibling keywords kept)."""
    name = _ref_name(schema, defs)
    if name is None or name in seen or defs is None or not isinstance(schema, dict):
        return schema
    target = _resolve(defs[name], defs, seen | {name})
    siblings = {k: v for k, v in schema.items() if k != "$ref"}
    return {**target, **siblings} if isinstance(target, dict) else target


def is_class(schema: object) -> bool:
    """Does a shared type become a class of its own (a model or an Enum), rather than collapse into its users?"""
    return isinstance(schema, dict) and (bool(schema.get("properties")) or "enum" in schema)


def enum_members(schema: JsonValue, defs: Defs | None = None) -> tuple[Any, ...]:
    """The values of the enum `schema` is (resolving a $ref through `defs`), without null; () when none."""
    schema = _resolve(schema, defs)
    if not isinstance(schema, dict):
        return ()
    if isinstance(schema.get("enum"), list):
        return tuple(v for v in schema["enum"] if v is not None)
    out: list[Any] = []
    for key in ("oneOf", "anyOf"):
        for sub in schema.get(key) or []:
            out += [v for v in enum_members(sub, defs) if v not in out]
    if isinstance(schema.get("items"), dict):
        return enum_members(schema["items"], defs)
    return tuple(out)


def py_type(schema: JsonValue, defs: Defs | None = None) -> str:
    """The Python annotation (without the Optional a non-required field gets)."""
    name = _ref_name(schema, defs)
    if name is not None and defs is not None:
        return name if is_class(defs[name]) else py_type(_resolve(schema, defs), defs)
    if not isinstance(schema, dict):
        return "Any"
    if "const" in schema:
        return f"Literal[{schema['const']!r}]"
    if "enum" in schema:
        return "Enum"
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list):
            return " | ".join(dict.fromkeys(py_type(s, defs) for s in schema[key]))
    kinds = schema.get("type")
    if isinstance(kinds, list):
        return " | ".join(dict.fromkeys(py_type({**schema, "type": k}, defs) for k in kinds))
    if kinds == "string":
        return _FORMATS.get(str(schema.get("format")), "str")
    if kinds in _SCALARS:
        return _SCALARS[str(kinds)]
    if kinds == "array":
        return f"list[{py_type(schema.get('items'), defs)}]"
    if kinds == "object" or "properties" in schema:
        return "Model" if schema.get("properties") else "dict[str, Any]"
    return "Any"


def py_fields(model: str, schema: JsonValue, defs: Defs | None = None) -> dict[str, PyField]:
    """`Model.field.sub` -> its Python type, whether it is required and its enum members, for every
    nested field; nested shared types are followed under the field's path (so a change in `Hit`
    shows on every tool that returns hits)."""
    out: dict[str, PyField] = {}

    def walk(node: JsonValue, prefix: str, seen: frozenset[str]) -> None:
        name = _ref_name(node, defs)
        if name is not None:
            if name in seen:
                return
            seen = seen | {name}
        node = _resolve(node, defs)
        if not isinstance(node, dict):
            return
        props = node.get("properties")
        if isinstance(props, dict):
            needed = set(node.get("required", []))
            for prop, sub in props.items():
                path = f"{prefix}.{py_field_name(prop)}"
                out[path] = PyField(py_type(sub, defs), prop in needed, enum_members(sub, defs))
                walk(sub, path, seen)
        items = node.get("items")
        if isinstance(items, dict):
            walk(items, f"{prefix}[]", seen)
        for key in ("oneOf", "anyOf"):
            for sub in node.get(key) or []:
                walk(sub, prefix, seen)

    walk(schema, model, frozenset())
    return out


def tool_models(tool: ToolSpec, defs: Defs | None = None) -> dict[str, dict[str, PyField]]:
    """Model name -> its fields, for a tool's generated input and output models."""
    out = {}
    for name, schema in (
        (naming.input_model(tool.name), tool.input_schema),
        (naming.output_model(tool.name), tool.output_schema),
    ):
        out[name] = py_fields(name, defs[name] if defs is not None and name in defs else schema, defs)
    return out


def resource_models(res: ResourceSpec, defs: Defs | None = None) -> dict[str, dict[str, PyField]]:
    """The generated model of a JSON resource, name -> its fields; empty for other resources."""
    if not res.is_json or res.output_schema is None:
        return {}
    name = naming.resource_model(res.name)
    return {name: py_fields(name, defs[name] if defs is not None and name in defs else res.output_schema, defs)}


@dataclass(frozen=True, slots=True)
class SharedClass:
    """A class generated from a shared `$defs` type: a model (its field names) or an Enum (its members)."""

    kind: str
    """model | enum"""
    names: tuple[Any, ...]
    body: str = field(compare=False)
    """The canonical JSON of its schema (with refs), to recognise a renamed class."""


def shared_classes(svc: ServiceSpec, defs: Defs | None) -> dict[str, SharedClass]:
    """The classes of a service's shared types (not the per-tool / per-resource models)."""
    if defs is None:
        return {}
    own = {m for t in svc.tools for m in (naming.input_model(t.name), naming.output_model(t.name))}
    own |= {naming.resource_model(r.name) for r in svc.resources}
    out = {}
    for name, schema in sorted(defs.items()):
        if name in own or not is_class(schema):
            continue
        body = json.dumps(schema, ensure_ascii=False, sort_keys=True)
        if "enum" in schema and not schema.get("properties"):
            out[name] = SharedClass("enum", tuple(v for v in schema["enum"] if v is not None), body)
        else:
            out[name] = SharedClass("model", tuple(sorted(schema["properties"])), body)
    return out


def rename_types(annotation: str, renamed: dict[str, str]) -> str:
    """An annotation with old class names replaced by their new ones."""
    if not renamed:
        return annotation
    return re.sub(r"\b\w+\b", lambda m: renamed.get(m.group(0), m.group(0)), annotation)


def py_union(annotation: str) -> set[str]:
    """The members of a type annotation's union (`int | None` -> {'int', 'None'})."""
    return {part.strip() for part in annotation.split(" | ")} if annotation else set()


def py_accepts(wide: str, narrow: str) -> bool:
    """Does a field typed `wide` accept every value of `narrow`? (int is accepted where float is.)"""
    a, b = py_union(wide), py_union(narrow)
    return all(t in a or (t == "int" and "float" in a) or "Any" in a for t in b)
