"""A form-taking operation gets the form it takes (kumitate.formbody, for the facade and the example runners):
the fields a form parser reads back are the flat body's, a list repeated, an object as JSON text."""

from __future__ import annotations

from email.parser import BytesParser
from email.policy import HTTP
from urllib.parse import parse_qsl

from kumitate.formbody import encode as _form

BODY = {"To": "+8190", "Tags": ["a", "b"], "Meta": {"k": 1}, "Urgent": True}


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
    assert media.startswith("multipart/form-data; boundary=")
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {media}\r\n\r\n".encode() + content)
    fields = [
        (part.get_param("name", header="content-disposition"), part.get_content()) for part in message.iter_parts()
    ]
    assert fields == [("To", "+8190"), ("Tags", "a"), ("Tags", "b"), ("Meta", '{"k": 1}'), ("Urgent", "true")]


def test_a_multipart_form_of_no_field_is_still_a_multipart_body() -> None:
    """An operation whose form has no required field may be sent none (Qdrant's snapshot upload): the
    upstream still gets a multipart body and its Content-Type, not an empty body without one."""
    content, media = _form({}, "multipart/form-data")
    boundary = media.partition("; boundary=")[2]
    assert media.startswith("multipart/form-data; boundary=") and len(boundary) >= 16
    assert content == f"--{boundary}--\r\n".encode()  # RFC 2046: the close delimiter, no part before it
    assert _form({}, "multipart/form-data")[1] != media  # a fresh boundary each time, as httpx draws one
