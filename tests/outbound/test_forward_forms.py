"""A form-taking operation gets the form it takes (kumitate.formbody, for the facade and the example runners):
the fields a form parser reads back are the flat body's, a list repeated, an object as JSON text; any JSON
object encodes (the empty one, nested objects and lists, nulls), and reads back as itself."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

import pytest
from multipart import MultipartSegment, PushMultipartParser

from kumitate.formbody import encode as _form
from kumitate.textvalues import from_text

BODY = {"To": "+8190", "Tags": ["a", "b"], "Meta": {"k": 1}, "Urgent": True}


def _parts(content: bytes, media: str) -> list[tuple[str, str | None, str]]:
    """(name, the part's Content-Type, text) of each part, as the multipart parser Litestar uses reads them
    (it refuses a body that is not well formed)."""
    assert media.startswith("multipart/form-data; boundary=")
    out: list[tuple[str, str | None, str]] = []
    with PushMultipartParser(media.partition("boundary=")[2].encode()) as parser:
        for event in [*parser.parse(content), *parser.parse(b"")]:
            if isinstance(event, MultipartSegment):
                out.append((event.name, event.content_type, ""))
            elif event:
                name, kind, text = out[-1]
                out[-1] = (name, kind, text + bytes(event).decode())
        assert parser.closed
    return out


def test_a_urlencoded_form_carries_every_field() -> None:
    content, media = _form(BODY, "application/x-www-form-urlencoded")
    assert media == "application/x-www-form-urlencoded"
    assert parse_qsl(content.decode()) == [
        ("To", "+8190"),
        ("Tags", "a"),
        ("Tags", "b"),
        ("Meta", '{"k": 1}'),
        ("Urgent", "true"),
    ]


def test_a_multipart_form_carries_every_field_with_its_boundary() -> None:
    content, media = _form(BODY, "multipart/form-data")
    assert [(name, text) for name, _, text in _parts(content, media)] == [
        ("To", "+8190"),
        ("Tags", "a"),
        ("Tags", "b"),
        ("Meta", '{"k": 1}'),
        ("Urgent", "true"),
    ]


def test_an_empty_body_is_a_well_formed_multipart_form_of_no_parts() -> None:
    """It crashed the facade (a 500) and the example runner: httpx writes no multipart body without a file."""
    content, media = _form({}, "multipart/form-data")
    assert _parts(content, media) == []
    assert _form({}, "application/x-www-form-urlencoded") == (b"", "application/x-www-form-urlencoded")


def test_an_object_is_a_json_part_and_an_array_its_items_repeated() -> None:
    """OpenAPI's default for a multipart body's complex property: a part of `application/json`."""
    body = {"address": {"line": "1 Main St", "tags": ["x"]}, "rows": [{"id": 1}, [2, 3], "four", None, 5.5]}
    content, media = _form(body, "multipart/form-data")
    assert _parts(content, media) == [
        ("address", "application/json", '{"line": "1 Main St", "tags": ["x"]}'),
        ("rows", "application/json", '{"id": 1}'),
        ("rows", "application/json", "[2, 3]"),
        ("rows", None, "four"),
        ("rows", None, "null"),
        ("rows", None, "5.5"),
    ]


def test_a_field_name_is_quoted_as_browsers_quote_it() -> None:
    content, media = _form({'say "hi"\r\n': "ok"}, "multipart/form-data")
    assert _parts(content, media) == [('say "hi"\r\n', None, "ok")]


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "names": {"type": "array", "items": {"type": "string"}},
        "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
        "meta": {"type": "object"},
        "count": {"type": "integer"},
    },
}


@pytest.mark.parametrize(
    "body",
    [
        {"names": [], "grid": [], "meta": {}, "count": 0},
        {"names": ["[not json"], "grid": [[1, 2]]},
        {"names": ["a", "b"], "grid": [[1], [2, 3]], "meta": {"deep": {"list": [None, True]}}},
    ],
)
@pytest.mark.parametrize("media", ["multipart/form-data", "application/x-www-form-urlencoded"])
def test_every_body_reads_back_as_itself(body: dict[str, Any], media: str) -> None:
    """What the encoder writes, kumitate's form reading (kumitate.textvalues) reads back: an empty array, and an
    array whose only item reads as a JSON array, go whole, as JSON."""
    content, kind = _form(body, media)
    fields = (
        [(name, text) for name, _, text in _parts(content, kind)]
        if media.startswith("multipart")
        else parse_qsl(content.decode(), keep_blank_values=True)
    )
    grouped: dict[str, list[str]] = {}
    for name, text in fields:
        grouped.setdefault(name, []).append(text)
    read = {name: from_text(texts, SCHEMA["properties"][name], SCHEMA) for name, texts in grouped.items()}
    assert read == body


def test_a_multipart_form_of_no_field_is_still_a_multipart_body() -> None:
    """An operation whose form has no required field may be sent none (Qdrant's snapshot upload): the
    upstream still gets a multipart body and its Content-Type, not an empty body without one."""
    content, media = _form({}, "multipart/form-data")
    boundary = media.partition("; boundary=")[2]
    assert media.startswith("multipart/form-data; boundary=") and len(boundary) >= 16
    assert content == f"--{boundary}--\r\n".encode()  # RFC 2046: the close delimiter, no part before it
    assert _form({}, "multipart/form-data")[1] != media  # a fresh boundary each time, as httpx draws one
