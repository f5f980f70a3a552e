"""A JSON object as the form body an operation takes (`application/x-www-form-urlencoded` or
`multipart/form-data`): what kumitate.transports.http.forms reads back into the object.

The facade sends a form-taking API its forms this way (kumitate.forward), and the example runners and
clients send a form-only tool its arguments (kumitate.client.http): a text stays text, a list is the
field repeated, an object is its JSON text, and booleans and numbers are JSON's spelling.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from urllib.parse import urlencode

import httpx

from kumitate.httpshape import wire_text

__all__ = ["JSON", "MULTIPART", "URLENCODED", "encode", "fields", "form_media"]

JSON = "application/json"
URLENCODED = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"


def form_media(content_types: Sequence[str]) -> str | None:
    """The form type a body goes as to an operation that takes `content_types`; None: as JSON, whenever
    it takes JSON (or says nothing)."""
    return None if JSON in content_types or not content_types else content_types[0]


def fields(body: object) -> list[tuple[str, str]]:
    """A body's properties as form fields, in order."""
    out: list[tuple[str, str]] = []
    for name, value in body.items() if isinstance(body, dict) else ():
        for item in value if isinstance(value, list) else [value]:
            text = item if isinstance(item, str) else json.dumps(item) if isinstance(item, dict) else wire_text(item)
            out.append((str(name), text))
    return out


def encode(body: object, media: str) -> tuple[bytes, str]:
    """The body as a form of type `media`: its bytes and their Content-Type (a multipart one names its
    boundary; httpx's own encoder writes it, and the form of no field, which httpx sends as no body at all
    and no Content-Type, is written here as the closing boundary alone)."""
    if media == MULTIPART:
        parts = fields(body)
        if not parts:
            boundary = secrets.token_hex(16)
            return f"--{boundary}--\r\n".encode("ascii"), f"{MULTIPART}; boundary={boundary}"
        built = httpx.Request("POST", "http://form", files=[(name, (None, text)) for name, text in parts])
        return built.read(), built.headers["content-type"]
    return urlencode(fields(body)).encode("ascii"), URLENCODED
