"""A JSON object as the form body an operation takes (`application/x-www-form-urlencoded` or
`multipart/form-data`): what kumitate.transports.http.forms reads back into the object.

The facade sends a form-taking API its forms this way (kumitate.forward), and the example runners and
clients send a form-only tool its arguments (kumitate.client.http). The rules are OpenAPI's defaults for
a form body's properties (its Encoding Object, absent): a text stays text, booleans and numbers are
JSON's spelling, an array is the field repeated (one part or pair per item; the empty array, which that
would drop, is `[]`), and an object (or an array inside an array) is its JSON text; in a multipart body
that part says so (`Content-Type: application/json`, the default OpenAPI gives a complex property's
part). An object property named in `deep` (spec `http.form_deep_objects`) goes in OpenAPI's deepObject
style instead, a field per property (`to[name]=Harry`, an object inside it one more `[key]`). Any JSON
object encodes, the empty one included: a multipart body of no parts is its closing delimiter alone, as
browsers send an empty form.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Collection, Sequence
from urllib.parse import urlencode

from kumitate.httpshape import deep_object_members, wire_text

__all__ = ["JSON", "MULTIPART", "URLENCODED", "encode", "fields", "form_media"]

JSON = "application/json"
URLENCODED = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"


def form_media(content_types: Sequence[str]) -> str | None:
    """The form type a body goes as to an operation that takes `content_types`; None: as JSON, whenever
    it takes JSON (or says nothing)."""
    return None if JSON in content_types or not content_types else content_types[0]


def _parts(body: object, deep: Collection[str] = ()) -> list[tuple[str, str, bool]]:
    """A body's properties as (field name, text, whether the text is JSON), in order; an array repeats
    its field, one item each; an object named in `deep` is a field per property. A body that is no
    object has no fields."""
    out: list[tuple[str, str, bool]] = []
    for name, value in body.items() if isinstance(body, dict) else ():
        if name in deep and isinstance(value, dict) and value:  # `{}` has no deepObject form: JSON text
            out += [part for key, member in deep_object_members(str(name), value) for part in _parts({key: member})]
            continue
        items = value if isinstance(value, list) and not _whole(value) else [value]
        out += [(str(name), *_text(item)) for item in items]
    return out


def _whole(array: list[object]) -> bool:
    """Whether an array goes as one JSON field (`[...]`) rather than its items repeated: when repeating
    would lose it, as none (the empty array is no field at all) or as one field a form reader takes for
    the array itself (an only item whose text is `[...]`, as kumitate.textvalues.from_text reads it)."""
    return not array or (len(array) == 1 and _text(array[0])[0].lstrip().startswith("["))


def _text(value: object) -> tuple[str, bool]:
    """One field's text, and whether it is JSON: an object or array is, a text is itself, the rest JSON's
    spelling."""
    if isinstance(value, (dict, list)):
        return json.dumps(value), True
    return (value if isinstance(value, str) else wire_text(value)), False


def fields(body: object, deep: Collection[str] = ()) -> list[tuple[str, str]]:
    """A body's properties as form fields, in order."""
    return [(name, text) for name, text, _ in _parts(body, deep)]


def encode(body: object, media: str, deep: Collection[str] = ()) -> tuple[bytes, str]:
    """The body as a form of type `media`: its bytes and their Content-Type (a multipart one names its
    boundary); the object properties in `deep` in deepObject style."""
    if media == MULTIPART:
        return _multipart(_parts(body, deep))
    return urlencode(fields(body, deep)).encode("ascii"), URLENCODED


def _multipart(parts: list[tuple[str, str, bool]]) -> tuple[bytes, str]:
    """RFC 7578's form: each field a part named by its Content-Disposition (a JSON one typed as such),
    between delimiters of a boundary that occurs in no part."""
    encoded = [(_disposition(name, is_json), text.encode("utf-8")) for name, text, is_json in parts]
    boundary = secrets.token_hex(16)
    while any(boundary.encode("ascii") in content for _, content in encoded):  # a 2**-128 chance, but sure
        boundary = secrets.token_hex(16)
    delimiter = b"--" + boundary.encode("ascii")
    out = bytearray()
    for head, content in encoded:
        out += delimiter + b"\r\n" + head + b"\r\n\r\n" + content + b"\r\n"
    out += delimiter + b"--\r\n"
    return bytes(out), f"{MULTIPART}; boundary={boundary}"


def _disposition(name: str, is_json: bool) -> bytes:
    """A part's headers: its field name quoted as the HTML standard does (`"`, CR and LF percent-escaped,
    as browsers send them and multipart parsers read them), and `Content-Type: application/json` for a
    JSON part."""
    quoted = name.replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")
    head = f'Content-Disposition: form-data; name="{quoted}"'
    return (head + (f"\r\nContent-Type: {JSON}" if is_json else "")).encode("utf-8")
