"""codegen.fuzz.forms: schemathesis, with kumitate's hooks loaded, sends a urlencoded body's object fields in
the style the document's Encoding Object names, even where the object hides behind alternatives (Lob's `to`:
an address id, or an address that is a `oneOf`), where schemathesis alone sends the dict's keys; and sends
no query holding `null` inside a deepObject parameter (the text `null`, not a null, on the wire)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

import schemathesis

import codegen.fuzz.forms  # registers the serializer, as the config's `hooks` does

FORM = "application/x-www-form-urlencoded"
ADDRESS = {"oneOf": [{"type": "object", "properties": {"name": {"type": "string"}}}]}
OPERATION: dict[str, Any] = {
    "requestBody": {
        "content": {
            FORM: {
                "schema": {
                    "type": "object",
                    "properties": {
                        "to": {"anyOf": [{"type": "string"}, ADDRESS]},
                        "meta": {"anyOf": [ADDRESS]},
                        "copies": {"type": "integer"},
                    },
                },
                "encoding": {
                    "to": {"style": "deepObject", "explode": True},
                    "meta": {"contentType": "application/json"},
                },
            }
        }
    },
    "responses": {"200": {"description": "Sent."}},
}
LISTING: dict[str, Any] = {
    "parameters": [
        {"name": "date_created", "in": "query", "style": "deepObject", "explode": True, "schema": {"type": "object"}},
        {"name": "note", "in": "query", "schema": {"type": "string"}},
    ],
    "responses": {"200": {"description": "The letters."}},
}
DOCUMENT = {
    "openapi": "3.1.0",
    "info": {"title": "Mailer", "version": "1.0.0"},
    "paths": {"/letters": {"post": OPERATION, "get": LISTING}},
}


def _sent(body: dict[str, Any]) -> list[tuple[str, str]]:
    operation = schemathesis.openapi.from_dict(DOCUMENT)["/letters"]["POST"]
    kwargs = operation.Case(body=body, media_type=FORM).as_transport_kwargs(base_url="http://127.0.0.1:9")
    return parse_qsl(kwargs["data"].decode())


def test_an_object_behind_alternatives_goes_in_its_documented_style() -> None:
    sent = _sent({"to": {"name": "Harry", "floor": {"n": 3}}, "meta": {"name": "x"}, "copies": 2})
    assert sent == [("to[name]", "Harry"), ("to[floor][n]", "3"), ("meta", '{"name": "x"}'), ("copies", "2")]


def test_the_operations_deep_object_fields_are_read_from_its_encoding() -> None:
    assert codegen.fuzz.forms.deep_objects(OPERATION, FORM) == ["to"]
    assert codegen.fuzz.forms.deep_objects({}, FORM) == []


def test_a_null_inside_a_deep_object_query_parameter_is_not_sent() -> None:
    operation = schemathesis.openapi.from_dict(DOCUMENT)["/letters"]["GET"]
    context = schemathesis.HookContext(operation=operation)
    assert codegen.fuzz.forms.filter_query(context, {"date_created[gt]": "2024-01-01", "note": "null"})
    assert not codegen.fuzz.forms.filter_query(context, {"date_created[gt]": "null"})
    assert not codegen.fuzz.forms.filter_query(context, {"date_created": {"gt": None}})
    assert codegen.fuzz.forms.deep_query(LISTING) == {"date_created"}
