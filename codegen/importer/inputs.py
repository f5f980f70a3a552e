"""An operation's parameters and request body as one flat input object, and where each travels.

MCP sees one object per call, so path, query and header parameters become input properties beside the
body's: a JSON object body is merged flat (`body: rest`), any other body (an array, a scalar, a oneOf)
is one property of its own (`body: {property: body}`). Body properties keep their names; a parameter
whose name is taken or is no snake_case identifier gets a property of its own (names.property_name), and
`params` says which (`{in: header, name: X-Request-ID, property: x_request_id}`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from codegen.importer.load import resolve
from codegen.importer.names import property_name
from codegen.importer.report import OperationReport
from codegen.importer.schema import LISTS, Converter, JsonSchema, walk
from kumitate.transports.http.forms import may_be_object

TRANSPORT_HEADERS = frozenset({"authorization", "content-type", "accept", "content-length"})
"""Header parameters that are the transport's business (credentials, content negotiation), not inputs."""
RUNTIME_HEADERS = frozenset({"idempotency-key", "x-run-id", "x-trace-id", "traceparent", "x-request-duration-ms"})
"""Headers kumitate's own pipeline reads or writes."""
JSON_TYPE = re.compile(r"^(application/(.+\+)?json|\*/\*|application/\*)(;.*)?$")
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
PATH_STYLES = ("label", "matrix")
"""Path parameter styles a facade sends on in (kumitate.httpshape `Param.style`); `simple` is the default."""
SCALARS = frozenset({"string", "integer", "number", "boolean"})


def resolve_mapping(document: dict[str, Any], node: object) -> dict[str, Any]:
    """`resolve` where only a mapping means anything (a response, a header): anything else is none, {}."""
    found = resolve(document, node)
    return found if isinstance(found, dict) else {}


@dataclass
class Carried:
    """A carried parameter: where it travels, its wire name, its input property, its document form."""

    location: str
    name: str
    prop: str
    raw: dict[str, Any]
    styled: bool = False
    """Read and sent in the document's own `style` (a path's label or matrix, a query's deepObject object)."""


@dataclass
class Input:
    """The tool's input schema and the HTTP binding keys that say where each property travels."""

    properties: dict[str, Any] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)
    additional: Any = False
    params: list[Carried] = field(default_factory=list)
    body: Any = "none"
    content_types: list[str] = field(default_factory=list)
    body_raw: dict[str, Any] | None = None
    """The chosen media type object of the request body (its examples)."""
    deep_objects: list[str] = field(default_factory=list)
    """Body properties a form sends in deepObject style (`http.form_deep_objects`)."""

    def schema(self) -> JsonSchema:
        """The input as a JSON Schema object."""
        out: JsonSchema = {"type": "object", "additionalProperties": self.additional}
        if self.required:
            out["required"] = self.required
        out["properties"] = self.properties
        return out

    def binding(self) -> list[dict[str, str]]:
        """`http.params`: `property` only where it differs from the wire name."""
        out = []
        for p in self.params:
            entry = {"in": p.location, "name": p.name}
            if p.prop != p.name:
                entry["property"] = p.prop
            if p.styled:
                entry["style"] = str(p.raw["style"])
            out.append(entry)
        return out


def _deep_query(location: str, param: dict[str, Any], schema: object, defs: dict[str, Any]) -> bool:
    """Whether a parameter is a query one holding an object in `deepObject` style (Lob's
    `date_created[gt]=...`), which a tool reads and a facade sends in that style."""
    return location == "query" and param.get("style") == "deepObject" and may_be_object(schema, {"$defs": defs})


def _form_encodings(content: dict[str, Any], result: Input, defs: dict[str, Any], report: OperationReport) -> None:
    """A form body's fields go in OpenAPI's default form encoding (kumitate.formbody: an array as its field
    repeated, an object as JSON), and a body property its Encoding Object sends in `deepObject` style
    (Lob's `to[name]=...`) in that style (`http.form_deep_objects`), whichever form type says it; each
    other style is listed as not carried (ReadMe's `pipeDelimited`, non-exploded `form` fields, a
    `deepObject` field that is no body property that may be an object: ReadMe's arrays and primitives)."""
    root = {"$defs": defs}
    for media in (m for m in FORM_TYPES if m in content):
        encoding = (content[media] or {}).get("encoding")
        for name, how in encoding.items() if isinstance(encoding, dict) else ():
            style = how.get("style") if isinstance(how, dict) else None
            exploded = how.get("explode", style in (None, "form")) if isinstance(how, dict) else True
            if style == "deepObject" and result.body == "rest" and may_be_object(result.properties.get(name), root):
                result.deep_objects += [] if name in result.deep_objects else [str(name)]
            elif style not in (None, "form") or exploded is False:
                said = f"style {style!r}" if style not in (None, "form") else "form style, not exploded"
                report.dropped.append(
                    f"the {media} body's field {name!r} ({said}) goes as OpenAPI's default form encoding"
                    " (an array as its field repeated, an object as JSON)"
                )


def parameters(document: dict[str, Any], path_item: dict[str, Any], operation: dict[str, Any]) -> list[Any]:
    """The operation's parameters: the path item's, overridden by the operation's (by location and name)."""
    merged: dict[tuple[str, str], Any] = {}
    for raw in [*(path_item.get("parameters") or []), *(operation.get("parameters") or [])]:
        param = resolve(document, raw)
        if isinstance(param, dict) and "name" in param and "in" in param:
            merged[(str(param["in"]), str(param["name"]))] = param
    return list(merged.values())


def flat_object(convert: Converter, schema: object) -> tuple[dict[str, Any], list[str], Any] | None:
    """(properties, required, additionalProperties) of a plain object schema (a ref to one, or an allOf of
    such), or None when it is something else (an array, a scalar, a oneOf, a free-form object)."""
    target = convert.target(schema)
    if not isinstance(target, dict) or any(k in target for k in ("oneOf", "anyOf", "not", "if")):
        return None
    properties: dict[str, Any] = dict(target.get("properties") or {})
    required = list(target.get("required") or [])
    additional = target.get("additionalProperties", True)
    for part in target.get("allOf") or []:
        merged = flat_object(convert, part)
        if merged is None:
            return None
        properties.update(merged[0])
        required += [r for r in merged[1] if r not in required]
        additional = additional if merged[2] is not False else False
    kind = target.get("type", "object")
    if kind != "object" or not properties:
        return None
    return properties, required, additional


def media(content: dict[str, Any]) -> tuple[str, list[str]] | None:
    """The media type to read the schema from and the content types the route takes."""
    kinds = list(content)
    json_types = [k for k in kinds if JSON_TYPE.match(k.lower())]
    forms = [k for k in FORM_TYPES if k in kinds]
    if not json_types and not forms:
        return None
    chosen = json_types[0] if json_types else forms[0]
    return chosen, (["application/json"] if json_types else []) + forms


def request_body(
    document: dict[str, Any], operation: dict[str, Any], convert: Converter, report: OperationReport
) -> Input:
    """The input as the body alone: flat properties, or one `body` property, or nothing."""
    raw = resolve(document, operation.get("requestBody"))
    result = Input()
    if not isinstance(raw, dict):
        return result
    content = raw.get("content") or {}
    carried = media(content)
    if carried is None:
        report.dropped.append(
            f"the request body ({', '.join(content) or 'no content'}) is no JSON or form: not carried;"
            " write the handler to build it"
        )
        return result
    chosen, result.content_types = carried
    result.body_raw = content[chosen] or {}
    schema = convert.convert((content[chosen] or {}).get("schema") or {})
    required = raw.get("required") is True
    flat = flat_object(convert, schema)
    if chosen.startswith("multipart/") and any(node.get("format") == "binary" for node in walk(schema)):
        report.dropped.append("a multipart file part (format: binary) travels as a string, not as a file upload")
    if flat is not None:
        properties, inner_required, result.additional = flat
        read_only = [n for n, p in properties.items() if _read_only(convert.target(p))]
        for name in read_only:
            del properties[name]
        if read_only:
            report.notes.append(f"read-only body properties left out of the input: {', '.join(read_only)}")
        result.properties = properties
        # `requestBody.required` is false unless said, yet a body sent must hold its schema's required
        # properties: they stay required inputs unless the document says outright that the body may be left out
        optional = raw.get("required") is False
        result.required = [] if optional else _body_required(inner_required, properties, read_only, result, report)
        if inner_required and optional:
            report.adapted.append("the body is optional, so its required properties are optional inputs")
        result.body = "rest"
        if result.additional is not False:
            result.additional = True if result.additional in (None, True, {}) else result.additional
    else:
        result.properties = {"body": schema}
        result.required = ["body"] if required else []
        result.body = {"property": "body"}
        result.additional = False
    _form_encodings(content, result, convert.defs, report)
    return result


def _body_required(
    required: list[str], properties: dict[str, Any], read_only: list[str], result: Input, report: OperationReport
) -> list[str]:
    """The body's required properties as required inputs. One the body requires without declaring it (Xero's
    `Folder` requires `name` and declares `Name`) stays required where the body takes other properties, since
    the API refuses a body without it; a read-only one is the API's to fill in (OpenAPI: not required in a
    request)."""
    undeclared = [r for r in required if r not in properties and r not in read_only]
    if undeclared and result.additional is not False:
        report.notes.append(
            f"the body requires {', '.join(map(repr, undeclared))} without declaring it: a required input of any type"
        )
        return [r for r in required if r not in read_only]
    if undeclared:
        report.dropped.append(
            f"the body requires {', '.join(map(repr, undeclared))}, which it neither declares nor allows: not required"
        )
    return [r for r in required if r in properties]


def _read_only(schema: object) -> bool:
    return isinstance(schema, dict) and bool(schema.get("readOnly"))


def _fits(convert: Converter, schema: object, location: str) -> bool:
    """Whether a value of `schema` can travel in a path segment, a query key or a header."""
    target = convert.target(schema)
    if not isinstance(target, dict):
        return False
    kinds = target.get("type")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
    choices = target.get("anyOf") or target.get("oneOf")
    if not kinds and isinstance(choices, list) and choices:
        return all(_fits(convert, choice, location) for choice in choices)
    parts = target.get("allOf")
    if not kinds and isinstance(parts, list) and parts:  # a value of every part: each must travel (Lob's ids)
        return all(_fits(convert, part, location) for part in parts)
    if not kinds:
        return "enum" in target or not any(k in target for k in ("properties", *LISTS))
    if set(kinds) - {"null"} <= SCALARS:
        return True
    if location != "path" and set(kinds) - {"null"} == {"array"}:
        item = convert.target(target.get("items") or {})
        item_kinds = item.get("type") if isinstance(item, dict) else None
        return isinstance(item_kinds, str) and item_kinds in SCALARS
    return False


def _left_out(location: str, name: str, report: OperationReport) -> bool:
    """Whether a parameter is no input: a cookie, or a header the transport or the pipeline owns."""
    if location == "cookie":
        report.dropped.append(f"cookie parameter {name!r}: cookies are not carried")
        return True
    if location == "header" and name.lower() in TRANSPORT_HEADERS:
        report.notes.append(f"header {name!r} is the transport's (credentials, content types), not an input")
        return True
    if location == "header" and name.lower() in RUNTIME_HEADERS:
        report.notes.append(f"header {name!r} is one kumitate's pipeline reads itself, not an input")
        return True
    return False


def _param_schema(
    param: dict[str, Any], location: str, name: str, convert: Converter, report: OperationReport
) -> dict[str, Any] | None:
    """The parameter's schema as an input property's, or None when it cannot travel where it does."""
    raw_schema = param.get("schema")
    if raw_schema is None and isinstance(param.get("content"), dict) and param["content"]:
        raw_schema = next(iter(param["content"].values())).get("schema")
        report.notes.append(f"parameter {name!r} is declared by content: its schema is taken, sent as text")
    schema = convert.convert(raw_schema if raw_schema is not None else {"type": "string"})
    if isinstance(schema, dict) and _fits(convert, schema, location):  # _fits: a schema object, or a ref to one
        return schema
    if isinstance(schema, dict) and _deep_query(location, param, schema, convert.defs):
        return schema
    if location == "path":  # a path segment cannot be left out: the caller sends it as the API writes it
        report.adapted.append(f"path parameter {name!r} is a string: send it serialised as the API expects")
        return {"type": "string", "description": "Serialised as the API expects (it is no plain value)."}
    report.dropped.append(f"{location} parameter {name!r}: an object value cannot travel there as kumitate sends it")
    return None


def add_parameters(
    document: dict[str, Any],
    params: list[Any],
    convert: Converter,
    result: Input,
    report: OperationReport,
) -> None:
    """Path, query and header parameters as input properties beside the body's (see the module's rule)."""
    order = {"path": 0, "query": 1, "header": 2, "cookie": 3}
    taken = set(result.properties)
    wants_body = [p for p in params if p.get("in") != "cookie" and p.get("name") == "body"]
    if wants_body and result.body == {"property": "body"}:
        result.properties = {"payload": result.properties.pop("body")}
        result.required = ["payload" if r == "body" else r for r in result.required]
        result.body = {"property": "payload"}
        taken = {"payload"}
    for param in sorted(params, key=lambda p: order.get(str(p.get("in")), 9)):
        location, name = str(param["in"]), str(param["name"])
        if _left_out(location, name, report):
            continue
        schema = _param_schema(param, location, name, convert, report)
        if schema is None:
            continue
        styled = location == "path" and param.get("style") in PATH_STYLES
        styled = styled or _deep_query(location, param, schema, convert.defs)
        if not styled and (param.get("style") not in (None, "simple", "form") or param.get("explode") is False):
            report.notes.append(f"parameter {name!r} is serialised as kumitate does (repeated keys / comma list)")
        prop = property_name(name, location, taken)
        if prop != name:
            report.adapted.append(f"{location} parameter {name!r} is the input property {prop!r}")
        if param.get("description"):
            schema = {**schema, "description": " ".join(str(param["description"]).split())}
        if param.get("deprecated"):
            schema = {**schema, "deprecated": True}
        if (
            schema.get("type") == "string"
            and not param.get("allowEmptyValue")
            and not any(k in schema for k in ("minLength", "format", "pattern", "enum", "const"))
        ):
            # OpenAPI: a parameter's value is not empty unless `allowEmptyValue` (and an empty path segment is
            # another route): one character at least, where no format, pattern or enum already says so
            schema = {**schema, "minLength": 1}
        result.properties[prop] = schema
        if location == "path" or param.get("required") is True:
            result.required.append(prop)
        result.params.append(Carried(location, name, prop, param, styled))


def undeclared_path_parameters(path: str, result: Input, report: OperationReport) -> None:
    """A `{name}` of the path that no parameter declares (an invalid document) as a required string input,
    so that the route still has every variable."""
    carried = {p.name for p in result.params if p.location == "path"}
    taken = set(result.properties)
    for name in re.findall(r"{([^}]+)}", path):
        if name in carried:
            continue
        prop = property_name(name, "path", taken)
        result.properties[prop] = {"type": "string", "minLength": 1, "description": f"The `{name}` of the path."}
        result.required.append(prop)
        result.params.append(Carried("path", name, prop, {}))
        carried.add(name)
        report.adapted.append(f"path variable {{{name}}} has no parameter in the document: a required string {prop!r}")
