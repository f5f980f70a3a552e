"""A REST-shaped tool over HTTP (kumitate.httpshape): its arguments gathered from the path, the query
string, request headers and the body into the one flat input object the pipeline checks, and its
result spread back out over the status, response headers and the body.

Values outside the body arrive as text; each is read as its input property's schema says (kumitate.textvalues:
`limit=10` an integer, `active=true` a boolean; an array as repeated query keys or a comma-separated
header), and the input schema then judges them as it judges a body, with the same errors.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import cache

from kumitate import textvalues
from kumitate.bindings import ToolBinding
from kumitate.errors import ToolError
from kumitate.httpshape import Param, wire_text
from kumitate.intake import data_of
from kumitate.pipeline import Outcome
from kumitate.transports.edge.paths import segment_text
from kumitate.transports.http import forms
from kumitate.transports.http.wire import HttpRequest, read_arguments, read_body


def route_path(binding: ToolBinding) -> str:
    """The Litestar route of a shaped tool: each path variable as a positional `{pN:str}` (a wire name
    need not be a Python identifier, and two tools may name one segment differently)."""
    path = binding.http_path
    for index, param in enumerate(p for p in binding.http_shape.params if p.location == "path"):
        path = path.replace(f"{{{param.name}}}", f"{{p{index}:str}}")
    return path


@cache
def _segment_reader(template: str, name: str) -> re.Pattern[str] | None:
    """How to read variable `name` out of its whole path segment, where that segment of `template` holds
    more than the variable (`{user}:getStats`, a custom method in Google's API style); None where the
    variable is the segment. Litestar routes by whole segments: it hands over the segment entire (a `%2F`
    in it still encoded: kumitate.transports.edge.paths)."""
    segment = next(part for part in template.split("/") if f"{{{name}}}" in part)
    if segment == f"{{{name}}}":
        return None
    pieces = re.split(r"(\{[^}]*\})", segment)
    pattern = "".join(
        ("(?P<value>.+?)" if piece == f"{{{name}}}" else ".+?") if piece.startswith("{") else re.escape(piece)
        for piece in pieces
    )
    return re.compile(pattern, re.DOTALL)


def _segment_values(request: HttpRequest, binding: ToolBinding) -> list[str] | None:
    """Each path variable's text, in template order; None when a segment that holds more than its
    variable does not read as this tool's (`x:getStats` is not `{user}`'s segment of `{user}:getStats`,
    and `x` not that of `{user}:getStats` either)."""
    values = []
    for index, param in enumerate(p for p in binding.http_shape.params if p.location == "path"):
        text = segment_text(str(request.path_params[f"p{index}"]))
        reader = _segment_reader(binding.http_path, param.name)
        if reader is not None:
            found = reader.fullmatch(text)
            if found is None:
                return None
            text = found.group("value")
        values.append(text)
    return values


def answers(request: HttpRequest, binding: ToolBinding) -> bool:
    """Whether `request`'s path is this shaped tool's, where tools share a Litestar route (kumitate.
    transports.http.routes.shared_routes): each segment holding more than its variable reads as the tool's."""
    return _segment_values(request, binding) is not None


def specificity(binding: ToolBinding) -> int:
    """How much fixed text a tool's path has outside its variables: the tool to try first among those
    that share a route (`/users/{user}:getStats` before `/users/{user}`)."""
    return len(re.sub(r"\{[^}]*\}", "", binding.http_path))


def _read(param: Param, text: list[str], binding: ToolBinding) -> object:
    """The JSON value of a parameter's text (kumitate.textvalues): an array's items repeated, or
    comma-separated in a header, a path segment or a single query value."""
    root = binding.input_schema
    schema = textvalues.local((root.get("properties") or {}).get(param.property) or {}, root)
    if "array" in textvalues.kinds(schema) and (param.location != "query" or (len(text) == 1 and "," in text[0])):
        text = [part.strip() for value in text for part in value.split(",")]
    return textvalues.from_text(text, schema, root)


def _read_deep_object(request: HttpRequest, param: Param, binding: ToolBinding, arguments: dict[str, object]) -> None:
    """A deepObject query parameter's keys (`date_created[gt]=...`) gathered into its object, each read by
    the schema of the property it names; the object may still come as one key of JSON text, not both."""
    root = binding.input_schema
    schema = (root.get("properties") or {}).get(param.property) or {}
    deep = forms.DeepObjects(frozenset({param.name}))
    for key in dict.fromkeys(request.query_params.keys()):
        inside = deep.path(key)
        if inside is not None:
            texts = [str(v) for v in request.query_params.getall(key)]
            deep.put(
                param.name, inside[1], textvalues.from_text(texts, forms.member_schema(schema, inside[1], root), root)
            )
    gathered = deep.nest({param.name: arguments[param.property]} if param.property in arguments else {})
    if param.name in gathered:
        arguments[param.property] = gathered[param.name]


def _param_text(request: HttpRequest, binding: ToolBinding) -> dict[str, list[str]]:
    """Each parameter's text as sent, by input property (absent ones left out: the schema says whether
    they are required)."""
    out: dict[str, list[str]] = {}
    path_values = iter(_segment_values(request, binding) or ())
    for param in binding.http_shape.params:
        if param.location == "path":
            out[param.property] = [next(path_values, "")]
        elif param.location == "query":
            values = request.query_params.getall(param.name, [])
            if values:
                out[param.property] = [str(v) for v in values]
        else:
            value = request.headers.get(param.name)
            if value is not None:
                out[param.property] = [value]
    return out


async def _body(request: HttpRequest, binding: ToolBinding) -> object:
    """The request body's data as the tool reads it, or None when it sent none."""
    length = request.headers.get("content-length")
    if length in (None, "", "0") and "chunked" not in request.headers.get("transfer-encoding", ""):
        return None
    body = binding.http_shape.body
    fields = None
    if body.carried == "property" and body.property is not None:  # a form's fields are the value's, not the input's
        value = (binding.input_schema.get("properties") or {}).get(body.property, {})
        fields = forms.value_fields(value, binding.input_schema)
    arguments = await read_arguments(request, binding, fields)
    return data_of(arguments)


async def read_shaped_arguments(request: HttpRequest, binding: ToolBinding) -> dict[str, object]:
    """The flat input object of a shaped tool's call, from wherever its spec says each property travels."""
    shape = binding.http_shape
    sent = _param_text(request, binding)
    arguments: dict[str, object] = {
        param.property: _read(param, sent[param.property], binding) for param in shape.params if param.property in sent
    }
    for param in shape.params:
        if param.location == "query" and param.style == "deepObject":
            _read_deep_object(request, param, binding, arguments)
    if shape.body.carried == "none":
        await read_body(request)  # read (and bounded by the route's cap), never used
        return arguments
    body = await _body(request, binding)
    if shape.body.carried == "property" and shape.body.property is not None:
        if body is not None:
            arguments[shape.body.property] = body
        return arguments
    if body is None:
        return arguments
    if not isinstance(body, dict):
        raise ToolError("the request body must be a JSON object", code="BAD_REQUEST")
    elsewhere = sorted(set(body) & shape.param_properties)
    if elsewhere:
        where = {p.property: f"{p.location} {p.name!r}" for p in shape.params}
        raise ToolError(f"`{elsewhere[0]}` is sent as the {where[elsewhere[0]]}, not in the body", code="BAD_REQUEST")
    return {**body, **arguments}


def shaped_outcome(outcome: Outcome, binding: ToolBinding) -> Outcome:
    """A success as its REST shape answers it: the spec's status, output properties moved into
    response headers, and the body the rest of the output, one property's value, or nothing."""
    shape = binding.http_shape
    if not outcome.ok or outcome.status != 200 or not isinstance(outcome.body, dict):
        return outcome
    body = dict(outcome.body)
    headers = dict(outcome.headers)
    for name, prop in shape.response_headers:
        value = body.pop(prop, None)
        if value is not None:
            headers[name] = wire_text(value)
    if shape.response_body.carried == "none" or shape.status == 204:
        shaped: object = b""
    elif shape.response_body.carried == "property":
        shaped = outcome.body.get(shape.response_body.property or "")
    else:
        shaped = body
    return replace(outcome, status=shape.status, body=shaped, headers=headers)
