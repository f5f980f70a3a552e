"""A REST-shaped tool's operation in the OpenAPI document (kumitate.httpshape): its parameters, request
body and success response as the spec's `http` spreads the flat input and output over the wire.

Each piece is cut from the tool's own component schemas (`<Tool>Input`, `<Tool>Output`), so a parameter's
schema, description and `$ref`s are the input property's, and a body is the input minus what travels
elsewhere: the document says exactly what kumitate.transports.http.rest reads and writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from codegen.specs import ToolSpec
from kumitate.httpshape import Body
from kumitate.textvalues import kinds
from kumitate.transports.http.forms import form_schema, may_be_object

Json = dict[str, object]


def _mapping(value: object) -> Mapping[str, object]:
    """`value` if it is a JSON object, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def _object(name: str, schemas: Mapping[str, object]) -> Mapping[str, object]:
    """The object schema component `name` is, following a component that only refers to another."""
    component = _mapping(schemas.get(name))
    ref = component.get("$ref")
    while isinstance(ref, str) and ref.startswith("#/components/schemas/"):
        target = schemas.get(ref.removeprefix("#/components/schemas/"))
        if not isinstance(target, Mapping):
            break
        component, ref = target, target.get("$ref")
    return component


def _properties(schema: Mapping[str, object]) -> dict[str, Mapping[str, object]]:
    return {str(k): _mapping(v) for k, v in _mapping(schema.get("properties")).items()}


def _required(schema: Mapping[str, object]) -> list[str]:
    required = schema.get("required")
    return [str(r) for r in required] if isinstance(required, list) else []


def without(schema: Mapping[str, object], names: frozenset[str]) -> Json:
    """An object schema with properties `names` taken out (and out of `required`)."""
    out: Json = dict(schema)
    out["properties"] = {k: v for k, v in _properties(schema).items() if k not in names}
    required = [r for r in _required(schema) if r not in names]
    if required:
        out["required"] = required
    else:
        out.pop("required", None)
    return out


def parameters(tool: ToolSpec, schemas: Mapping[str, object], input_name: str) -> list[Json]:
    """The OpenAPI parameters of the input properties that travel in the path, query or headers."""
    component = _object(input_name, schemas)
    props, required = _properties(component), set(_required(component))
    out: list[Json] = []
    for param in tool.http_shape.params:
        schema: Json = dict(props.get(param.property, {}))
        entry: Json = {"name": param.name, "in": param.location}
        description = schema.pop("description", None)
        if description:
            entry["description"] = description
        entry["required"] = param.location == "path" or param.property in required
        if param.location == "query" and param.style == "deepObject":
            entry["style"], entry["explode"] = "deepObject", True
        elif "array" in kinds(schema) and param.location == "query":
            entry["style"], entry["explode"] = "form", True
        entry["schema"] = schema
        out.append(entry)
    return out


def body_schema(body: Body, component: Mapping[str, object], elsewhere: frozenset[str]) -> tuple[Json | None, bool]:
    """A body's schema (None: no body) cut from its component, and whether a caller must send it."""
    if body.carried == "none":
        return None, False
    if body.carried == "property":
        prop = body.property or ""
        return dict(_properties(component).get(prop, {})), prop in _required(component)
    schema = without(component, elsewhere)
    if not schema["properties"] and elsewhere:  # everything travels elsewhere: nothing left to send
        return None, False
    return schema, bool(_required(schema))


def body_value(body: Body, value: object, elsewhere: frozenset[str]) -> object:
    """An example's input or output as its body carries it (None: none)."""
    if body.carried == "none":
        return None
    if not isinstance(value, dict):
        return value
    if body.carried == "property":
        return value.get(body.property or "")
    return {k: v for k, v in value.items() if k not in elsewhere}


def _cut_examples(examples: Mapping[str, object], body: Body, elsewhere: frozenset[str]) -> Json:
    """Named examples of the whole input or output, each cut to what the body carries."""
    return {
        name: {**ex, "value": body_value(body, ex.get("value"), elsewhere)}
        for name, ex in examples.items()
        if isinstance(ex, Mapping)
    }


def form_encoding(tool: ToolSpec) -> Json:
    """A form body's Encoding Object, as kumitate reads a form (kumitate.transports.http.forms): the fields
    in `http.form_deep_objects` in deepObject style; every other field that may be an object as JSON text
    (`contentType: application/json`; one in `http.form_flatten` may also come as fields of its own); the
    rest in OpenAPI's defaults."""
    encoding: Json = {}
    for name, schema in _properties(tool.input_schema).items():
        if name in tool.form_deep_objects:
            encoding[name] = {"style": "deepObject", "explode": True}
        elif may_be_object(schema, tool.input_schema):
            encoding[name] = {"contentType": "application/json"}
    return encoding


def _form_of(schema: Json, body: Body, flatten: Sequence[str]) -> Json:
    """A form body's schema: the body's fields as a form reads them (`form_schema`). A body that is one
    property's value (Lob's `address_create`: `body: {property: body}`, an address `oneOf`) is that value's
    fields, as the form reader takes them (not an object holding it: schemathesis then sent a field `body`
    the tool refused); a value with no `properties` of its own (a `oneOf`, a `$ref`) is its schema as it is."""
    if body.carried == "rest":
        return form_schema(schema, flatten)
    return form_schema(schema) if "properties" in schema else schema


def request_body(
    tool: ToolSpec, schemas: Mapping[str, object], input_name: str, content: dict[str, Json]
) -> Json | None:
    """The request body of a shaped tool: the default's content with each media type's schema and
    examples cut to what the body carries; None when it carries none."""
    shape = tool.http_shape
    component = _object(input_name, schemas)
    schema, required = body_schema(shape.body, component, shape.param_properties)
    if schema is None:
        return None
    out: dict[str, Json] = {}
    for media, entry in content.items():
        if media == "application/json":
            cut: Json = {"schema": schema}
        else:  # a form of the body's own fields, not the whole input's (nor, for a property, the input's)
            form = _form_of(schema, shape.body, tool.form_flatten)
            cut = {"schema": form}
            encoding = {k: v for k, v in _mapping(entry.get("encoding")).items() if k in _properties(form)}
            if encoding:
                cut["encoding"] = encoding
        if isinstance(examples := entry.get("examples"), Mapping):
            cut["examples"] = _cut_examples(examples, shape.body, shape.param_properties)
        out[media] = cut
    return {"required": required, "content": out}


def response(tool: ToolSpec, schemas: Mapping[str, object], output_name: str, ok: Json) -> tuple[str, Json]:
    """A shaped tool's success response, from the default's (`ok`, a 200 with the whole output): its
    status, the output properties that travel as headers, and the body cut to what it carries."""
    shape = tool.http_shape
    component = _object(output_name, schemas)
    props = _properties(component)
    out: Json = dict(ok)
    headers = dict(_mapping(ok.get("headers")))
    for name, prop in shape.response_headers:
        header: Json = {"schema": {k: v for k, v in props.get(prop, {}).items() if k != "description"}}
        description = props.get(prop, {}).get("description")
        if description:
            header["description"] = description
        header["required"] = prop in _required(component)
        headers[name] = header
    out["headers"] = headers
    schema, _ = body_schema(shape.response_body, component, shape.header_properties)
    if schema is None or shape.status == 204:
        out.pop("content", None)
        out.pop("links", None)
    else:
        media: Json = {"schema": schema}
        old = _mapping(_mapping(ok.get("content")).get("application/json"))
        if isinstance(examples := old.get("examples"), Mapping):
            media["examples"] = _cut_examples(examples, shape.response_body, shape.header_properties)
        out["content"] = {"application/json": media}
    return str(shape.status), out
