"""An operation's responses as the tool's output, its success status, and its catalogue error codes.

The success is the lowest documented 2xx: a JSON object body is the output; an array or a scalar is the
output's one property (`items`, `result`) with `response_body: {property: ...}`; 204 answers no body;
the success's documented headers (`Location`) are output properties too, sent back as headers
(`response_headers`). Each documented 4xx/5xx becomes a catalogue code; the error body's own schema is not
carried, since kumitate answers its own error envelope.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from codegen.importer.catalogue import Catalogue
from codegen.importer.inputs import JSON_TYPE, flat_object, resolve_mapping
from codegen.importer.names import property_name
from codegen.importer.report import OperationReport
from codegen.importer.schema import Converter, JsonSchema

STATUSES = (200, 201, 202, 204)
"""The success statuses a kumitate binding can answer."""
SKIPPED_HEADERS = frozenset({"content-type", "content-length", "date", "transfer-encoding", "connection"})
EMPTY: JsonSchema = {"type": "object", "additionalProperties": False, "properties": {}}


@dataclass
class Output:
    """The tool's output schema and the HTTP binding keys of its success."""

    schema: JsonSchema = field(default_factory=lambda: dict(EMPTY))
    status: int = 200
    body: Any = "rest"
    headers: list[dict[str, str]] = field(default_factory=list)
    media: dict[str, Any] | None = None
    """The chosen media type object of the success (its examples)."""
    header_raw: dict[str, Any] = field(default_factory=dict)
    """Output property -> the document's header object (its example)."""
    kept: JsonSchema | None = None
    """The body's schema as the document writes it, when it is a plain object (kept as the output)."""


def _status(key: str) -> int | None:
    return int(key) if re.fullmatch(r"[1-5][0-9][0-9]", key) else None


def success(document: dict[str, Any], responses: dict[str, Any], convert: Converter, report: OperationReport) -> Output:
    """The lowest documented 2xx as the output; the other 2xx noted in the report."""
    out = Output()
    found = sorted(s for s in (_status(str(k)) for k in responses) if s is not None and 200 <= s < 300)
    if not found:
        if "2XX" in responses:
            found = [200]
            responses = {**responses, "200": responses["2XX"]}
        else:
            others = ", ".join(str(k) for k in responses) or "none"
            report.dropped.append(f"no 2xx response is documented ({others}): the output is an empty object")
            return out
    status = found[0]
    for other in found[1:]:
        report.dropped.append(f"the other success response {other} is not carried (the tool answers {status})")
    raw = resolve_mapping(document, responses[str(status)])
    if raw.get("links"):
        report.dropped.append(f"the success's links ({', '.join(raw['links'])}): write them as the spec's `links`")
    out.status = status if status in STATUSES else 200
    if out.status != status:
        report.adapted.append(f"success status {status} is answered as 200")
    content = raw.get("content") or {}
    body_props, body_required, body_mode = _body(content, convert, out, report, out.status)
    headers = _headers(document, raw.get("headers") or {}, convert, set(body_props or {}), out)
    if body_props is None and not headers:  # a free-form object body: the output as it is
        return out
    if body_props is None:
        body_props, body_required, body_mode = {"result": out.schema}, ["result"], {"property": "result"}
    if not headers and body_mode == "rest" and out.kept is not None:  # the document's own (shared) type
        out.schema = out.kept if out.kept.get("type") == "object" else {**out.kept, "type": "object"}
        return out
    out.body = body_mode
    properties = {**body_props, **{p: s for p, (s, _) in headers.items()}}
    required = body_required + [p for p, (_, r) in headers.items() if r]
    out.schema = {"type": "object", "additionalProperties": out.schema.get("additionalProperties", False)}
    if required:
        out.schema["required"] = required
    out.schema["properties"] = properties
    return out


def _body(
    content: dict[str, Any], convert: Converter, out: Output, report: OperationReport, status: int
) -> tuple[dict[str, Any] | None, list[str], Any]:
    """(properties, required, response_body) of the success body; None when out.schema is the body as is."""
    if status == 204 or not content:
        return {}, [], "none"
    json_types = [k for k in content if JSON_TYPE.match(k.lower())]
    if json_types:
        out.media = content[json_types[0]] or {}
        schema = convert.convert(out.media.get("schema") or {})
        target = convert.target(schema)
        is_object = (
            isinstance(target, dict)
            and target.get("type") == "object"
            and not any(k in target for k in ("oneOf", "anyOf"))
        )
        flat = flat_object(convert, schema)
        if flat is not None:
            out.schema = {**out.schema, "additionalProperties": flat[2]}
            out.kept = schema
            return dict(flat[0]), list(flat[1]), "rest"
        if is_object:  # a free-form object: kept as one
            out.schema = schema if "$ref" not in schema else {"type": "object", **schema}
            return None, [], "rest"
        prop = "items" if isinstance(target, dict) and target.get("type") == "array" else "result"
        return {prop: schema}, [prop], {"property": prop}
    text = [k for k in content if k.startswith("text/") or k in ("application/xml", "text/xml")]
    if text:
        out.media = content[text[0]] or {}
        report.notes.append(f"the {text[0]} success body is the string property `result`")
        return {"result": {"type": "string", "description": f"The {text[0]} body."}}, ["result"], {"property": "result"}
    report.dropped.append(f"the success body ({', '.join(content)}) is not JSON or text: not carried")
    return {}, [], "none"


def _headers(
    document: dict[str, Any], headers: dict[str, Any], convert: Converter, taken: set[str], out: Output
) -> dict[str, tuple[Any, bool]]:
    """The success's documented headers as output properties (property -> (schema, required))."""
    found: dict[str, tuple[Any, bool]] = {}
    for name, raw in headers.items():
        header = resolve_mapping(document, raw)
        if name.lower() in SKIPPED_HEADERS:
            continue
        prop = property_name(name.lower().replace("-", "_"), "header", taken)
        schema = convert.convert(header.get("schema") or {"type": "string"})
        if header.get("description"):
            schema = {**schema, "description": " ".join(str(header["description"]).split())}
        found[prop] = (schema, header.get("required") is True)
        out.headers.append({"name": str(name), "property": prop})
        out.header_raw[prop] = header
    return found


def errors(
    document: dict[str, Any], responses: dict[str, Any], catalogue: Catalogue, report: OperationReport
) -> list[str]:
    """The catalogue codes of the documented 4xx and 5xx statuses; ranges and `default` reported."""
    codes: list[str] = []
    with_body: list[str] = []
    for key in sorted(responses, key=str):
        status = _status(str(key))
        raw = resolve_mapping(document, responses[key])
        if status is None:
            if str(key).upper() in ("4XX", "5XX", "DEFAULT"):
                report.dropped.append(f"the {key} response has no single status: no error code for it")
            continue
        if status < 400:
            continue
        code = catalogue.code_for(status, str(raw.get("description") or ""))
        if code not in codes:
            codes.append(code)
        if raw.get("content"):
            with_body.append(str(status))
    if with_body:
        report.dropped.append(
            f"the error body schema of {', '.join(with_body)}: kumitate answers its own error envelope"
        )
    return codes
