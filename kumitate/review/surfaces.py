"""What each reviewed surface is, derived from a loaded tool or resource.

- HTTP wire: method, path, content types, the status codes a route can return (declared
  errors plus the generic ones, mapped through the catalogue), auth scopes, request and
  response bodies (the JSON Schemas, compared in diff.py).
- MCP: tool names, inputSchema/outputSchema (the same schemas), annotations, resource URIs.
- Python API: the generated pydantic models, named with codegen.naming (<Tool>Input,
  <Tool>Output, <Resource>Resource); fields and their Python types are derived from the schema
  the way datamodel-code-generator maps JSON Schema (string -> str, integer -> int, ...).
- LLM text: summaries, descriptions, titles, examples, instructions.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from typing import Any

from codegen import naming
from codegen.specs import GENERIC_ERRORS, ResourceSpec, SpecTree, ToolSpec


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
    type: str
    required: bool


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


def py_type(schema: Any) -> str:
    """The Python annotation (without the Optional a non-required field gets)."""
    if not isinstance(schema, dict):
        return "Any"
    if "const" in schema:
        return f"Literal[{schema['const']!r}]"
    if "enum" in schema:
        return "Enum"
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list):
            return " | ".join(dict.fromkeys(py_type(s) for s in schema[key]))
    kinds = schema.get("type")
    if isinstance(kinds, list):
        return " | ".join(dict.fromkeys(py_type({**schema, "type": k}) for k in kinds))
    if kinds == "string":
        return _FORMATS.get(str(schema.get("format")), "str")
    if kinds in _SCALARS:
        return _SCALARS[str(kinds)]
    if kinds == "array":
        return f"list[{py_type(schema.get('items'))}]"
    if kinds == "object" or "properties" in schema:
        return "Model" if schema.get("properties") else "dict[str, Any]"
    return "Any"


def py_fields(model: str, schema: Any) -> dict[str, PyField]:
    """`Model.field.sub` -> its Python type and whether it is required, for every nested field."""
    out: dict[str, PyField] = {}

    def walk(node: Any, prefix: str) -> None:
        if not isinstance(node, dict):
            return
        props = node.get("properties")
        if isinstance(props, dict):
            needed = set(node.get("required", []))
            for name, sub in props.items():
                path = f"{prefix}.{py_field_name(name)}"
                out[path] = PyField(py_type(sub), name in needed)
                walk(sub, path)
        items = node.get("items")
        if isinstance(items, dict):
            walk(items, f"{prefix}[]")
        for key in ("oneOf", "anyOf"):
            for sub in node.get(key) or []:
                walk(sub, prefix)

    walk(schema, model)
    return out


def tool_models(tool: ToolSpec) -> dict[str, dict[str, PyField]]:
    """Model name -> its fields, for a tool's generated input and output models."""
    return {
        naming.input_model(tool.name): py_fields(naming.input_model(tool.name), tool.input_schema),
        naming.output_model(tool.name): py_fields(naming.output_model(tool.name), tool.output_schema),
    }


def resource_models(res: ResourceSpec) -> dict[str, dict[str, PyField]]:
    if not res.is_json or res.output_schema is None:
        return {}
    name = naming.resource_model(res.name)
    return {name: py_fields(name, res.output_schema)}


def py_union(annotation: str) -> set[str]:
    return {part.strip() for part in annotation.split(" | ")} if annotation else set()


def py_accepts(wide: str, narrow: str) -> bool:
    """Does a field typed `wide` accept every value of `narrow`? (int is accepted where float is.)"""
    a, b = py_union(wide), py_union(narrow)
    return all(t in a or (t == "int" and "float" in a) or "Any" in a for t in b)
