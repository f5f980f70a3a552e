"""schemathesis hooks (loaded by the config codegen.fuzz.http writes): a urlencoded body sent as the
document's Encoding Object says, as kumitate reads it (kumitate.formbody writes it); and no null inside a
deepObject query parameter.

schemathesis serializes a form field in its `style` only where it can tell from the field's schema that
it is an object; a field whose object hides behind alternatives (Lob's `to`: an address id, or an address
that is a `oneOf`) reaches the HTTP library as a dict, which then sends its keys (`to=name&to=zip`), a
form no server can read back. Here each field still holding an object goes in its documented style:
`deepObject` as `to[name]=...`, and `contentType: application/json` as its JSON text. A null field is
left out, as schemathesis's own serializer leaves it.

A query string has no null: `date_created[gt]=null` is the text `null`. schemathesis knows that of a
query parameter's own value (it does not make a text one null to test a refusal), not of a member of a
deepObject one: it sent `date_created[x]=null` as a value breaking the member's `type: string` and counted
the acceptance a failure, though the text is a string. Such queries, and those holding the text `null`
there (the same request), are not generated.
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


def deep_query(definition: Mapping[str, Any]) -> set[str]:
    """The query parameters of an operation's `definition` in deepObject style."""
    params = definition.get("parameters")
    return {
        str(p.get("name"))
        for p in (params if isinstance(params, list) else ())
        if isinstance(p, Mapping) and p.get("in") == "query" and p.get("style") == "deepObject"
    }


def _holds_null(value: object) -> bool:
    if isinstance(value, Mapping):
        return any(_holds_null(inner) for inner in value.values())
    if isinstance(value, list):
        return any(_holds_null(inner) for inner in value)
    return value is None or value == "null"  # a null member reaches this hook already written as its text


@schemathesis.hook
def filter_query(context: schemathesis.HookContext, query: dict[str, Any] | None) -> bool:
    """Whether a generated query can go on the wire as it is: no null inside a deepObject parameter (as
    its object, or as its `name[key]` members once serialized)."""
    operation = context.operation
    deep = deep_query(operation.definition.raw) if operation is not None else set()
    return not any(_holds_null(value) for key, value in (query or {}).items() if key.partition("[")[0] in deep)
