"""The import proof's stub document: the original OpenAPI document as Prism serves it (codegen.prism).

The copy drops `security` (the API, not the stub, judges credentials; the facade passes the caller's on),
and works around what Prism 5.16 cannot read or answer and the slips a document makes in its own examples,
each rewrite with the behaviour it works around and why the proof stays meaningful. The original document
itself is never changed, and neither is the imported project: what the facade sends is judged by the
document's own schemas wherever Prism can judge them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from codegen.importer import load
from kumitate import formbody


def stub_document(entry: Path, target: Path, *, dynamic: bool = False) -> None:
    """The original document bundled into one file for the stub, without its security requirements, and
    with the Prism 5.16 limitations below worked around (`_multipart_as_prism_reads_it`,
    `_form_arrays_as_forms`, `_boolean_headers`, `_an_answer_where_none_is_documented`,
    `_no_default_as_success`: an operation with no 2xx answers what it documents rather than its
    `default`; `_paired_examples_first`: it answers the example the proof's example pairs with) and the
    document's own slips in its examples (`_examples_from_json_text`, `_examples_of_their_type`). For a
    `dynamic` stub, an answer documented by examples alone gets its first example as its schema (`const`):
    Prism cannot make up an answer without a schema, and the document's example is the answer it means;
    a `format: url` string is made up as a URL (`_urls_made_up_as_urls`), and an object as an object
    (`_string_keywords_on_strings_only`)."""
    data = load.read(str(entry)).data
    data.pop("security", None)
    if dynamic:
        _urls_made_up_as_urls(data)
        _string_keywords_on_strings_only(data)
        _array_items_said(data)
    for item in (data.get("paths") or {}).values():
        for operation in item.values() if isinstance(item, dict) else ():
            if isinstance(operation, dict):
                operation.pop("security", None)
                _multipart_as_prism_reads_it(data, operation)
                _form_arrays_as_forms(data, operation)
                _boolean_headers(data, operation)
                _examples_from_json_text(data, operation)
                _paired_examples_first(data, operation)
                _no_default_as_success(operation)
                _an_answer_where_none_is_documented(operation)
                if dynamic:
                    _examples_as_schemas(data, operation)
    _examples_of_their_type(data)
    target.write_text(json.dumps(data), encoding="utf-8")


JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _examples_of_their_type(node: object) -> None:
    """A schema's `example` of another JSON type than the schema's is left out (Ory Hydra's `audience`, an
    array, has a comma-joined string as its example): Prism's static answers are built from such examples,
    so the stub would answer what the document itself forbids. The document's slip, not the API's answer."""
    if isinstance(node, list):
        for item in node:
            _examples_of_their_type(item)
        return
    if not isinstance(node, dict):
        return
    kinds = node.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if "example" in node and isinstance(kinds, list) and all(k in JSON_TYPES for k in kinds):
        value = node["example"]
        allowed = tuple(t for k in [*kinds, *(["null"] if node.get("nullable") else [])] for t in JSON_TYPES[k])
        if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
            del node["example"]
    for value in node.values():
        _examples_of_their_type(value)


def _no_default_as_success(operation: dict[str, object]) -> None:
    """Prism answers an operation that documents no 2xx with its `default` response (the API's errors) as
    a 200; Ory Hydra's `/oauth2/auth` documents a 302 and a `default` error, and Hydra answers the 302. The
    stub's copy leaves such an operation's `default` out, so that the stub answers what the API does."""
    responses = operation.get("responses")
    if not isinstance(responses, dict) or "default" not in responses:
        return
    if not any(str(status).startswith("2") for status in responses) and len(responses) > 1:
        del responses["default"]


def _resolved(document: dict[str, object], node: object) -> object:
    """`node`, or what its local `$ref` (a chain of them) points at."""
    seen: set[str] = set()
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"] not in seen:
        seen.add(node["$ref"])
        node = load.walk_pointer(document, node["$ref"].removeprefix("#"), "stub")
    return node


def _form_arrays_as_forms(document: dict[str, object], operation: dict[str, object]) -> None:
    """Let each array property of a form body (urlencoded or multipart) that has no Encoding Object
    `style` also be one of its items, in the stub's copy of the body schema.

    The facade sends a list in a form as the field repeated, once per item (OpenAPI's default for a form
    body, `style: form, explode: true`; Twilio's `Items`, `Types`). Prism 5.16 reads a form into a
    key -> text map (a repeated field keeps its last value) and makes an array of a field only where the
    property has an Encoding Object with a `style`; without one it refuses the text: "property Items must
    be array", however many items were sent. Spelling the default out as an Encoding Object does not
    help: Prism then reads an empty item (`Items=`) as the field missing, and checks the field's raw text
    for reserved characters, refusing `+`, a form's space. So the stub's copy of the body schema accepts
    the array or one item (`anyOf`), and Prism judges the field as the one item it reads. What the proof
    gives up is only what Prism cannot see (the items before the last): the field's presence and name and
    its last item's schema are still judged, and the component schemas are left as they are (the body
    schema is copied into the operation before it is changed)."""
    body = _resolved(document, operation.get("requestBody"))
    content = body.get("content") if isinstance(body, dict) else None
    for media, entry in content.items() if isinstance(content, dict) else ():
        if isinstance(entry, dict) and media in (formbody.URLENCODED, formbody.MULTIPART):
            _arrays_or_an_item(document, entry)


def _arrays_or_an_item(document: dict[str, object], entry: dict[str, object]) -> None:
    schema = _resolved(document, entry.get("schema"))
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(schema, dict) or not isinstance(properties, dict):
        return
    encoding = entry.get("encoding")
    styled = (
        {n for n, how in encoding.items() if isinstance(how, dict) and "style" in how}
        if isinstance(encoding, dict)
        else set()
    )
    changed = {
        name: {"anyOf": [prop, resolved.get("items", {})]}
        for name, prop in properties.items()
        if name not in styled and _is_array(resolved := _resolved(document, prop)) and isinstance(resolved, dict)
    }
    if changed:
        entry["schema"] = {**schema, "properties": {**properties, **changed}}


def _is_array(schema: object) -> bool:
    kind = schema.get("type") if isinstance(schema, dict) else None
    return kind == "array" or (isinstance(kind, list) and "array" in kind)


MULTIPART_COMPOSITION_DEPTH = 8
"""How deep `allOf` / `anyOf` / `oneOf` (through `$ref`s) are followed into a multipart body's schema."""


def _multipart_as_prism_reads_it(document: dict[str, object], operation: dict[str, object]) -> None:
    """A multipart body's copy that Prism 5.16 reads as RFC 7578 parts, the way the facade sends them.

    - Prism reads every part as text (parse-multipart-data; the part's own Content-Type unread), so the
      JSON part the facade sends for an object property (OpenAPI's default for one, Lob's
      `ride_along_image`) is refused: "must be object". Each object property of the body also accepts a
      text in the stub's copy.
    - Prism applies the urlencoded rules to a part that has an Encoding Object: it refuses RFC 3986
      reserved characters unless `allowReserved` (a comma, a slash in any text) and percent-decodes the
      part, though a part's text is not percent-encoded (RFC 7578 4.5; OpenAPI 3.1.1, Appendix E.2: in
      form-data percent-encoding "is not needed and is likely to cause interoperability problems"). Each
      Encoding Object says `allowReserved: true` in the copy.
    - Prism's readers of an Encoding Object `style` in a part are its query readers: `pipeDelimited` on a
      property that is no array throws, an uncaught error that ends the stub's process (ReadMe's
      `object`; OpenAPI allows it), and an optional array field left out is read as the text '' and
      refused ("must be array"). The facade sends a multipart body in OpenAPI's default encoding (an
      array as its parts repeated, an object as a JSON part; the import report lists each `style` it
      does not carry), so the copy leaves `style` and `explode` out and judges the parts as sent (an
      array field as `_form_arrays_as_forms` says).

    What the proof gives up is only what Prism cannot read: the content of a JSON part (the facade
    checked it against the same schema before it sent it), and the items before an array's last.
    Each part's presence and name, and every text part against its schema, are still judged; the
    component schemas are left as they are (the body's schema is copied into the operation before it is
    changed)."""
    body = _resolved(document, operation.get("requestBody"))
    content = body.get("content") if isinstance(body, dict) else None
    entry = content.get(formbody.MULTIPART) if isinstance(content, dict) else None
    if not isinstance(entry, dict):
        return
    encoding = entry.get("encoding")
    for how in encoding.values() if isinstance(encoding, dict) else ():
        if isinstance(how, dict):
            how.pop("style", None)
            how.pop("explode", None)
            how["allowReserved"] = True
    schema = _composed(document, entry.get("schema"), MULTIPART_COMPOSITION_DEPTH)
    _json_parts_as_text(document, schema)
    entry["schema"] = schema


def _composed(document: dict[str, object], schema: object, depth: int) -> object:
    """`schema` (its `$ref` resolved) copied down through its `allOf` / `anyOf` / `oneOf`, each level's
    `properties` a copy of its own: what `_json_parts_as_text` changes is the operation's, not a
    component's."""
    schema = _resolved(document, schema)
    if not isinstance(schema, dict) or depth <= 0:
        return schema
    out = dict(schema)
    if isinstance(out.get("properties"), dict):
        out["properties"] = dict(out["properties"])
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(out.get(key), list):
            out[key] = [_composed(document, part, depth - 1) for part in out[key]]
    return out


def _levels(schema: object) -> Iterator[dict[str, object]]:
    """`schema` and each schema of its `allOf` / `anyOf` / `oneOf` (as `_composed` copied them)."""
    if isinstance(schema, dict):
        yield schema
        for key in ("allOf", "anyOf", "oneOf"):
            for part in schema.get(key) or () if isinstance(schema.get(key), list) else ():
                yield from _levels(part)


def _json_parts_as_text(document: dict[str, object], schema: object) -> None:
    for level in _levels(schema):
        properties = level.get("properties")
        if not isinstance(properties, dict):
            continue
        for name, prop in list(properties.items()):
            resolved = _resolved(document, prop)
            kind = resolved.get("type") if isinstance(resolved, dict) else None
            if kind == "object" or (isinstance(kind, list) and "object" in kind):
                properties[name] = {"anyOf": [prop, {"type": "string"}]}


def _boolean_headers(document: dict[str, object], operation: dict[str, object]) -> None:
    """Give each boolean response header that has no example of its own one: its schema's example,
    default or first enum value, else `true`.

    Prism writes a header without an example from a value its generator makes, but only a string or a
    number: any other value (a boolean) it replaces by null, which goes on the wire as the text `null`
    (prism-http mocker `computeMockedHeaders`, in static and dynamic mode alike), so every answer of
    Twilio's carries `Access-Control-Allow-Credentials: null` against the document's `boolean` and the
    facade rightly refuses it as output that breaks the tool's own contract. With an example Prism sends
    `true`, which the document allows; the facade's reading of a header as its declared type is still
    exercised, and an answer that breaks the document still fails the call."""
    responses = operation.get("responses")
    for response in responses.values() if isinstance(responses, dict) else ():
        headers = _resolved(document, response)
        headers = headers.get("headers") if isinstance(headers, dict) else None
        for header in headers.values() if isinstance(headers, dict) else ():
            header = _resolved(document, header)
            if not isinstance(header, dict) or "example" in header or "examples" in header:
                continue
            schema = _resolved(document, header.get("schema"))
            if isinstance(schema, dict) and schema.get("type") == "boolean":
                said = (schema.get("example"), schema.get("default"), *(schema.get("enum") or ()))
                header["example"] = next((value for value in said if isinstance(value, bool)), True)


def _examples_from_json_text(document: dict[str, object], operation: dict[str, object]) -> None:
    """An answer example of an object or array schema written as JSON text in a string (Xero's documents:
    `example: '{ "Name": "helo-heros.jpg", ... }'`) as the JSON it spells: the stub answers an example as
    it is written, and a string where the schema says object is the document's slip, not the API's answer."""
    responses = operation.get("responses")
    for response in responses.values() if isinstance(responses, dict) else ():
        content = _resolved(document, response)
        content = content.get("content") if isinstance(content, dict) else None
        for media in content.values() if isinstance(content, dict) else ():
            schema = _resolved(document, media.get("schema")) if isinstance(media, dict) else None
            if not isinstance(schema, dict) or not (
                schema.get("type") in ("object", "array") or "properties" in schema or "items" in schema
            ):
                continue
            named = media.get("examples")
            holders = [media, *(named.values() if isinstance(named, dict) else ())]
            for holder, key in [(media, "example"), *((h, "value") for h in holders[1:])]:
                text = holder.get(key) if isinstance(holder, dict) else None
                if isinstance(text, str) and text.lstrip()[:1] in ("{", "["):
                    try:
                        holder[key] = json.loads(text)
                    except ValueError:
                        continue


def _paired_examples_first(document: dict[str, object], operation: dict[str, object]) -> None:
    """A response's named examples that a request body example of the same name pairs with, first.

    Prism answers a response's first example; the import pairs request and response examples by name
    (codegen.importer.examples) and the proof runs each tool's first such pair, so where the first
    response example pairs with no request (Lob's `/intl_verifications`: requests `basic`, ..., `test`,
    answers `full`, `test`, kept as the example `test`) the stub answered `full` to the example `test`.
    Only the order changes: every example is still the document's, and still the answer Prism sends."""
    body = _resolved(document, operation.get("requestBody"))
    content = body.get("content") if isinstance(body, dict) else None
    asked: set[str] = set()
    for media in content.values() if isinstance(content, dict) else ():
        named = media.get("examples") if isinstance(media, dict) else None
        asked |= set(named) if isinstance(named, dict) else set()
    responses = operation.get("responses")
    for status, response in responses.items() if isinstance(responses, dict) and asked else ():
        answer = _resolved(document, response) if str(status).startswith("2") else None
        answers = answer.get("content") if isinstance(answer, dict) else None
        for media in answers.values() if isinstance(answers, dict) else ():
            named = media.get("examples") if isinstance(media, dict) else None
            if isinstance(named, dict) and any(name in asked for name in named):
                media["examples"] = {
                    **{k: v for k, v in named.items() if k in asked},
                    **{k: v for k, v in named.items() if k not in asked},
                }


def _an_answer_where_none_is_documented(operation: dict[str, object]) -> None:
    """An operation that documents no `responses` (OpenAPI 3.1 allows it: readme-parameters-style) gets a
    bodiless 200 in the stub's copy. Prism answers such an operation 500 (NO_RESPONSE_RESPONSE_DEFINED,
    after validating the request), for which the facade's 502 is right, but then its breaker opens and
    every later call fails: the fuzz proves nothing. The import reads the operation as answering nothing
    (an empty output), so this answer is what the facade expects; Prism still validates each request."""
    if not operation.get("responses"):
        operation["responses"] = {"200": {"description": "No answer is documented (the import proof's stub)."}}


def _urls_made_up_as_urls(node: object) -> None:
    """Every `format: url` schema gets `x-faker: internet.url`. Prism's validator (ajv-formats) asserts
    `url`, but its generator (json-schema-faker) does not know it and makes up lorem text, an answer
    that breaks the document (ReadMe's `baseUrl`), which the fuzzer then blames on the facade. The
    keyword only steers what the stub generates: it validates requests as before."""
    if isinstance(node, dict):
        if node.get("format") == "url" and node.get("type") in ("string", None):
            node.setdefault("x-faker", "internet.url")
        for value in node.values():
            _urls_made_up_as_urls(value)
    elif isinstance(node, list):
        for value in node:
            _urls_made_up_as_urls(value)


STRING_KEYWORDS = ("pattern", "minLength", "maxLength", "format")


def _string_keywords_on_strings_only(node: object) -> None:
    """A schema whose `type` names no string loses its string keywords (`pattern`, `minLength`,
    `maxLength`, `format`). JSON Schema applies them to strings only, so Prism validates nothing
    differently; but its generator (json-schema-faker) makes up a string for any schema with a `pattern`,
    whatever its `type`: Lob's `metadata` (an object, with `pattern` and `maxLength` meant for its
    values) was answered as a string, which the facade rightly refuses as an answer that breaks the
    tool's contract."""
    if isinstance(node, dict):
        kinds = node.get("type")
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if isinstance(kinds, list) and kinds and "string" not in kinds:
            for keyword in STRING_KEYWORDS:
                if not isinstance(node.get(keyword), dict):  # a property named so, not the keyword
                    node.pop(keyword, None)
        for value in node.values():
            _string_keywords_on_strings_only(value)
    elif isinstance(node, list):
        for value in node:
            _string_keywords_on_strings_only(value)


def _array_items_said(node: object) -> None:
    """An array schema that says nothing of its items gets `items: {}` (any item, what JSON Schema reads
    its absence as, so nothing validates differently): Prism's generator (json-schema-faker) ends the
    answer with "missing items for" such an array (Lob's campaign `uploads`), a 500 the facade rightly
    passes on as a failed upstream call."""
    if isinstance(node, dict):
        kinds = node.get("type")
        if (kinds == "array" or (isinstance(kinds, list) and "array" in kinds)) and not any(
            k in node for k in ("items", "prefixItems")
        ):
            node["items"] = {}
        for value in node.values():
            _array_items_said(value)
    elif isinstance(node, list):
        for value in node:
            _array_items_said(value)


def _examples_as_schemas(document: dict[str, object], operation: dict[str, object]) -> None:
    responses = operation.get("responses")
    for response in responses.values() if isinstance(responses, dict) else ():
        content = response.get("content") if isinstance(response, dict) else None
        for media in content.values() if isinstance(content, dict) else ():
            if not isinstance(media, dict) or "schema" in media:
                continue
            examples = media.get("examples")
            first = next(iter(examples.values()), None) if isinstance(examples, dict) and examples else None
            if isinstance(first, dict) and isinstance(first.get("$ref"), str):
                first = load.walk_pointer(document, first["$ref"].removeprefix("#"), "stub")
            value = first.get("value") if isinstance(first, dict) else media.get("example")
            if value is not None:
                media["schema"] = {"const": value}
