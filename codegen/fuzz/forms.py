"""schemathesis hook (loaded by the config codegen.fuzz.http writes): a urlencoded body sent as the
document's Encoding Object says, as kumitate reads it (kumitate.formbody writes it).

schemathesis serializes a form field in its `style` only where it can tell from the field's schema that
it is an object; a field whose object hides behind alternatives (Lob's `to`: an address id, or an address
that is a `oneOf`) reaches the HTTP library as a dict, which then sends its keys (`to=name&to=zip`), a
form no server can read back. Here each field still holding an object goes in its documented style:
`deepObject` as `to[name]=...`, and `contentType: application/json` as its JSON text. A null field is
left out, as schemathesis's own serializer leaves it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import schemathesis

from kumitate import formbody


def deep_objects(definition: Mapping[str, Any], media: str) -> list[str]:
    """The fields an operation's `definition` (its OpenAPI object) sends in deepObject style as `media`."""
    body = definition.get("requestBody")
    content = body.get("content") if isinstance(body, Mapping) else None
    entry = content.get(media) if isinstance(content, Mapping) else None
    encoding = entry.get("encoding") if isinstance(entry, Mapping) else None
    if not isinstance(encoding, Mapping):
        return []
    return [
        str(name) for name, how in encoding.items() if isinstance(how, Mapping) and how.get("style") == "deepObject"
    ]


@schemathesis.serializer(formbody.URLENCODED)
def urlencoded(ctx: schemathesis.SerializationContext, value: object) -> bytes | None:
    """The form's bytes (schemathesis sends the case's Content-Type); a body that is no object goes as
    schemathesis sends one."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if not isinstance(value, dict):
        return json.dumps(value).encode("utf-8")
    deep = deep_objects(ctx.case.operation.definition.raw, formbody.URLENCODED)
    fields = {name: field for name, field in value.items() if field is not None}
    return formbody.encode(fields, formbody.URLENCODED, deep)[0]
