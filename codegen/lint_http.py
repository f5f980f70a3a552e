"""Lint rule KT121: a tool's REST-shaped HTTP binding (kumitate.httpshape) places every property once,
somewhere it can travel.

MCP sees one flat input object, so each input property has exactly one place on HTTP: a path segment,
a query key, a header, or the body. The rule checks what the runtime would otherwise find out on the
first call: a parameter naming no input property, a property sent in two places (a path `id` and a
query `id` both mapped to `id`), a path variable without a property, an optional path parameter, an
object where only text can travel, a property with no place at all (a GET whose input has a property
that is no parameter), and response headers or bodies naming output properties that do not exist.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from codegen.specs import Problem, SpecTree, ToolSpec
from kumitate.httpshape import Param, path_variables
from kumitate.textvalues import kinds
from kumitate.transports.http.forms import may_be_object

RULE = "KT121"
TEXT_ONLY = frozenset({"object"})
"""Types no path segment, query key or header can carry as text (kumitate.textvalues reads scalars and lists)."""


def _props(schema: Mapping[str, object]) -> Mapping[str, Mapping[str, object]]:
    props = schema.get("properties")
    return props if isinstance(props, Mapping) else {}


def _required(schema: Mapping[str, object]) -> set[str]:
    required = schema.get("required")
    return {str(r) for r in required} if isinstance(required, list) else set()


def _params(tool: ToolSpec) -> Iterator[str]:
    shape = tool.http_shape
    props, required = _props(tool.input_schema), _required(tool.input_schema)
    seen: dict[str, str] = {}
    wire: set[tuple[str, str]] = set()
    for param in shape.params:
        where = f"{param.location} {param.name!r}"
        key = (param.location, param.name.lower() if param.location == "header" else param.name)
        if key in wire:
            yield f"{where} is declared twice"
        wire.add(key)
        if param.property not in props:
            yield f"{where} names no input property ({param.property!r})"
            continue
        if param.property in seen:
            yield f"input property {param.property!r} travels twice: as the {seen[param.property]} and the {where}"
        seen[param.property] = where
        if param.location == "path" and param.property not in required:
            yield f"path parameter {param.name!r} must be a required input property"
        yield from _travels(param, props[param.property], tool.input_schema)
    variables = path_variables(tool.http_path)
    for param in shape.params:
        if param.location == "path" and param.name not in variables:
            yield f"path parameter {param.name!r} is not a `{{{param.name}}}` of {tool.http_path}"


def _travels(param: Param, schema: Mapping[str, object], root: Mapping[str, object]) -> Iterator[str]:
    """Whether a parameter's value can travel where it does, in its style: an object only as a query
    parameter in deepObject style, label and matrix only in a path."""
    where = f"{param.location} {param.name!r}"
    items = schema.get("items")
    if param.style == "deepObject":
        if param.location != "query":
            yield f"{where} has style deepObject: only a query parameter takes it"
        elif not may_be_object(schema, root):
            yield f"{where} has style deepObject but its property is no object"
    elif kinds(schema) & TEXT_ONLY or (isinstance(items, Mapping) and kinds(items) & TEXT_ONLY):
        yield f"{where} is an object: only text, numbers, booleans and their lists travel outside the body"
    if param.style in ("label", "matrix") and param.location != "path":
        yield f"{where} has style {param.style}: only a path parameter takes it"


def _bodies(tool: ToolSpec) -> Iterator[str]:
    shape = tool.http_shape
    props = _props(tool.input_schema)
    placed = shape.param_properties
    if shape.body.carried == "property" and shape.body.property not in props:
        yield f"body property {shape.body.property!r} is not an input property"
    if shape.body.carried != "rest":
        carried = placed | {shape.body.property} if shape.body.carried == "property" else placed
        for name in sorted(set(props) - carried):
            yield f"input property {name!r} has no place on HTTP: list it under http.params or send a body"
    out = _props(tool.output_schema)
    for name, prop in shape.response_headers:
        if prop not in out:
            yield f"response header {name!r} names no output property ({prop!r})"
    if shape.response_body.carried == "property" and shape.response_body.property not in out:
        yield f"response_body property {shape.response_body.property!r} is not an output property"
    if shape.status == 204 and shape.response_body.carried != "none":
        yield "a 204 answers no body: set `response_body: none`"


def check_http_shape(tree: SpecTree) -> Iterator[Problem]:
    """KT121: each input property has one place on HTTP that can carry it, and the response keys name
    output properties."""
    for tool in tree.all_tools():
        if tool.http_shape.plain:
            continue
        rel = tool.source.resolve().relative_to(tree.root.parent).as_posix()
        for message in [*_params(tool), *_bodies(tool)]:
            yield Problem(rel, "/http", RULE, message)
