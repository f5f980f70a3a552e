"""Where a tool's input and output travel over HTTP: the REST shape of its spec `http` binding.

MCP sees one flat input object and one output object per tool. HTTP may spread them out: `GET
/loans/{loan_id}?expand=items` carries `loan_id` in the path and `expand` in the query, a
`201 Created` carries the new loan's address in `Location`. The spec says where each property
travels (`params`, `body`, `status`, `response_headers`, `response_body`); this record is what the
generator and the HTTP transport read, so both agree on one reading of it. The default, a plain
`POST /v1/<service>/<tool>` with the input as the body and the output as a 200's, is `HttpShape()`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote

from kumitate import textvalues

Location = Literal["path", "query", "header"]
Carried = Literal["rest", "none", "property"]
"""How a body is made: `rest` the properties not sent elsewhere as one JSON object, `none` no body,
`property` one property's value."""

METHODS_WITHOUT_BODY = frozenset({"GET", "DELETE"})
"""Methods whose request sends no body unless there is something to send (RFC 9110 gives theirs no meaning)."""
_TEMPLATE_VARIABLE = re.compile(r"{([^{}/]+)}")


def wire_text(value: object) -> str:
    """A value as text outside a body: JSON's spelling of booleans and null, the text of the rest."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


def _segment(text: str) -> str:
    """`text` as one path segment: percent-encoded, `/` included, and a `.` or `..` as `%2E` (a client or
    proxy would otherwise resolve it as a dot-segment and send another path)."""
    encoded = quote(text, safe="")
    return encoded.replace(".", "%2E") if text in (".", "..") else encoded


def path_variables(path: str) -> list[str]:
    """The `{name}` segments of a route, in order."""
    return _TEMPLATE_VARIABLE.findall(path)


@dataclass(frozen=True, slots=True)
class Param:
    """One input property that travels outside the body: its place and its name there."""

    location: Location
    name: str
    """The name on the wire: the path's `{name}`, the query key, the header's name."""
    property: str
    """The input property that holds its value."""
    style: str = "simple"
    """OpenAPI's `style`. For a path parameter, how the API a facade forwards to reads it: `simple` the
    segment itself, `label` `.x`, `matrix` `;name=x`; kumitate's own route reads the segment itself
    whatever it says, and only the call sent on to that API (kumitate.forward) is written in it. For a
    query parameter, `deepObject`: an object as a key per property, `date_created[gt]=2024-01-01`, both
    read and sent so."""


@dataclass(frozen=True, slots=True)
class Body:
    """What a request or a success response body carries."""

    carried: Carried = "rest"
    property: str | None = None
    """The property whose value is the body, when `carried` is `property`."""

    @classmethod
    def parse(cls, declared: object) -> Body:
        """The record of a spec's `body` / `response_body` value: `rest` (the default), `none` or `{property: X}`."""
        if isinstance(declared, Mapping):
            return cls("property", str(declared["property"]))
        return cls("none") if declared == "none" else cls()

    def as_spec(self) -> str | dict[str, str]:
        """The spec's spelling of this body (what parse reads)."""
        return {"property": self.property or ""} if self.carried == "property" else self.carried


@dataclass(slots=True)
class HttpRequest:
    """A call's arguments as a shaped tool's HTTP request: what a client (kumitate.client, the example
    runner, the facade's forwarder) sends; `body` is absent (`has_body` False) when the shape sends none."""

    path: str
    query: list[tuple[str, str]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    body: object = None
    has_body: bool = False


def deep_object_members(prefix: str, value: Mapping[str, object]) -> list[tuple[str, object]]:
    """An object in OpenAPI's deepObject style: (`prefix[key]`, value) per property, an object inside one
    level deeper (`prefix[key][inner]`); the empty object, which has no key, stays a value."""
    out: list[tuple[str, object]] = []
    for key, inner in value.items():
        name = f"{prefix}[{key}]"
        out += deep_object_members(name, inner) if isinstance(inner, Mapping) and inner else [(name, inner)]
    return out


def _styled(param: Param, segment: str) -> str:
    """A path segment in its parameter's OpenAPI `style` (a `simple` one as it is)."""
    if param.style == "label":
        return f".{segment}"
    if param.style == "matrix":
        return f";{_segment(param.name)}={segment}"
    return segment


@dataclass(frozen=True, slots=True)
class HttpShape:
    """The REST shape of one tool's HTTP binding (spec `http`: `params`, `body`, `status`,
    `response_headers`, `response_body`); `plain` when it is the default POST-a-JSON-object binding."""

    params: tuple[Param, ...] = ()
    body: Body = Body()
    status: int = 200
    response_headers: tuple[tuple[str, str], ...] = ()
    """(header name, output property) pairs: those properties travel as headers, not in the body."""
    response_body: Body = Body()

    @classmethod
    def parse(cls, http: Mapping[str, object], path: str) -> HttpShape:
        """The shape a spec's `http` mapping declares. A path variable no `params` entry names is the
        input property of its own name. The body is `rest` unless `body` says otherwise, for every method
        (a GET whose properties all travel as parameters has nothing left to send: no body)."""
        declared = http.get("params")
        params = [
            Param(entry["in"], entry["name"], entry.get("property", entry["name"]), entry.get("style", "simple"))
            for entry in (declared if isinstance(declared, Sequence) else ())
            if isinstance(entry, Mapping)
        ]
        named = {p.name for p in params if p.location == "path"}
        params += [Param("path", name, name) for name in path_variables(path) if name not in named]
        headers = http.get("response_headers")
        status = http.get("status", 200)
        return cls(
            params=tuple(params),
            body=Body.parse(http.get("body")),
            status=status if isinstance(status, int) else 200,
            response_headers=tuple(
                (str(h["name"]), str(h["property"]))
                for h in (headers if isinstance(headers, Sequence) else ())
                if isinstance(h, Mapping)
            ),
            response_body=Body.parse(http.get("response_body")),
        )

    @property
    def plain(self) -> bool:
        """Whether the whole input is the JSON body and the whole output a 200's (the default binding)."""
        return self == HttpShape()

    @property
    def param_properties(self) -> frozenset[str]:
        """The input properties that travel outside the body."""
        return frozenset(p.property for p in self.params)

    @property
    def header_properties(self) -> frozenset[str]:
        """The output properties that travel as response headers."""
        return frozenset(prop for _, prop in self.response_headers)

    def request(
        self, path: str, arguments: Mapping[str, object], method: str = "POST", *, styled: bool = False
    ) -> HttpRequest:
        """The request that carries `arguments` (the flat input) the way this shape reads it: path
        variables filled in (percent-encoded; `styled`, the call a facade sends on, in each one's `style`),
        query keys (a list repeated), headers (a list comma-joined), and the body: the rest of the input as
        an object, even an empty one, for a method that sends a body (`PATCH` with nothing to change is
        `{}`, not no body), and for GET or DELETE only when it has some."""
        out = HttpRequest(path)
        for param in self.params:
            if param.property not in arguments:
                continue
            value = arguments[param.property]
            if param.location == "path":
                segment = _segment(wire_text(value))
                out.path = out.path.replace(f"{{{param.name}}}", _styled(param, segment) if styled else segment)
            elif param.location == "query":
                members: list[tuple[str, object]] = [(param.name, value)]
                if param.style == "deepObject" and isinstance(value, Mapping) and value:
                    members = deep_object_members(param.name, value)
                for name, member in members:
                    values = member if isinstance(member, list) else [member]
                    out.query += [(name, wire_text(v)) for v in values]
            else:
                values = value if isinstance(value, list) else [value]
                out.headers[param.name] = ",".join(wire_text(v) for v in values)
        if self.body.carried == "property":
            out.has_body = (self.body.property or "") in arguments
            out.body = arguments.get(self.body.property or "")
        elif self.body.carried == "rest":
            rest = {k: v for k, v in arguments.items() if k not in self.param_properties}
            out.has_body = bool(rest) or method not in METHODS_WITHOUT_BODY
            out.body = rest
        return out

    def result(
        self, body: object, headers: Mapping[str, str], output_schema: Mapping[str, Any] | None = None
    ) -> dict[str, object]:
        """The flat output of a success answered as this shape answers it (`body` decoded, None when it
        had none): the body's properties, or the one property it carries, and the header properties. A
        header is text: given the tool's `output_schema`, each is read as its property's type
        (kumitate.textvalues: `150` the integer an integer property declares), the one reading every
        reader of a shaped answer shares (the facade of an API, the typed HTTP client, the example
        runner); without it, its text (the output schema then judges it)."""
        out: dict[str, object]
        if self.response_body.carried == "property":
            out = {self.response_body.property or "": body}
        elif self.response_body.carried == "rest" and isinstance(body, Mapping):
            out = dict(body)
        else:
            out = {}
        lowered = {k.lower(): v for k, v in headers.items()}
        properties = output_schema.get("properties") if output_schema is not None else None
        for name, prop in self.response_headers:
            if name.lower() not in lowered:
                continue
            text = lowered[name.lower()]
            schema = properties.get(prop) if isinstance(properties, Mapping) else None
            if output_schema is not None and isinstance(schema, Mapping):
                declared = textvalues.local(schema, output_schema)
                out[prop] = textvalues.coerce(text, declared, output_schema)
            else:
                out[prop] = text
        return out
