"""Prove `kumitate import openapi` lossless over real OpenAPI documents (tests/data/openapi-corpus).

For each document, in a throwaway project: import it as a facade (`--forward` to a stub of the API),
generate and lint the project, compare the original with the regenerated OpenAPI document by an
independent differ (Optic, codegen.openapi_diff), then serve the facade in front of the stub and run
the imported examples over HTTP and MCP and schemathesis against the facade's own document.

The stub is Prism (`@stoplight/prism-cli`, Apache-2.0, pinned): a mock server of the original document
that validates every request it gets against that document and answers with the document's examples.
So a passing run says the facade's requests are ones the real API accepts and its answers ones the real
API gives, both judged by the original document, not by our reading of it. The stub's copy drops
`security` (the API, not the stub, judges credentials; the facade passes the caller's on).

The regenerated document is served under /v1/<service>; that prefix is removed before the comparison,
as a change of server URL would be. `python -m codegen.import_proof [SLUG ...] [--results FILE]` runs it
and writes the per-document table (tests/data/openapi-corpus/RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from codegen import npm, openapi_diff, specs
from codegen.fuzz.http import config_toml
from codegen.importer import load
from codegen.testing import free_port, serve, stop
from kumitate import formbody

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests/data/openapi-corpus"
PROOF = CORPUS / "proof.yaml"
"""What the proof holds: the breaking changes Optic finds that are deliberate, each with the reason
(`accepted`: a regular expression over the change's text, for every document or the ones it names; any
other breaking change fails the proof), the documents Optic cannot compare (`unable`), and the documents
CI proves on every change (`proven`)."""
PRISM = "@stoplight/prism-cli@5.16.0"
CACHE = Path.home() / ".cache/kumitate/prism"
COMPONENT = "#/components/schemas/"
SCAFFOLD_ERRORS = Path(__file__).with_name("scaffold") / "errors.yaml"
FUZZ_HEADERS = ("X-Run-Id: import-proof", "Authorization: Bearer import-proof")


@dataclass
class Proof:
    """What one document's proof found: each step's verdict (`ok`, or what failed) and the differences."""

    slug: str
    service: str
    operations: int = 0
    examples: int = 0
    """Spec examples run (each over HTTP and over MCP)."""
    summary: str = ""
    """The importer's one-line account (operations, parts not carried, wire adaptations)."""
    steps: dict[str, str] = field(default_factory=dict)
    breaking: list[openapi_diff.BreakingChange] = field(default_factory=list)
    explained: dict[str, int] = field(default_factory=dict)
    """Why (proof.yaml) -> how many of `breaking` it explains."""
    unexplained: list[openapi_diff.BreakingChange] = field(default_factory=list)
    """The breaking changes no entry of proof.yaml explains (each fails the differ step)."""
    not_compared: str = ""
    """What the differ did not compare, and why (proof.yaml `unable:`): the document, or some operations."""
    uncompared: int = 0
    """How many operations the differ did not compare; 0 with `not_compared` set: the whole document."""
    report: str = ""
    """The importer's IMPORT-REPORT.md: what was not carried over, and what the wire adapts."""

    @property
    def passed(self) -> bool:
        """Every step ok."""
        return all(verdict == "ok" for verdict in self.steps.values())


@dataclass(frozen=True)
class Difference:
    """A kind of breaking change the regeneration makes on purpose (proof.yaml)."""

    match: re.Pattern[str]
    why: str
    documents: frozenset[str] = frozenset()
    """The documents it is expected in; empty: any."""

    def explains(self, slug: str, change: openapi_diff.BreakingChange) -> bool:
        """Whether this entry accounts for `change` found in document `slug`."""
        return (not self.documents or slug in self.documents) and bool(self.match.search(str(change)))


def _proof_file(path: Path) -> dict[str, object]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    return data if isinstance(data, dict) else {}


def differences(path: Path = PROOF) -> list[Difference]:
    """The accepted differences (`accepted:`), in file order (the first that matches a change explains it)."""
    entries = _proof_file(path).get("accepted")
    return [
        Difference(re.compile(str(e["match"])), " ".join(str(e["why"]).split()), frozenset(e.get("documents", ())))
        for e in (entries if isinstance(entries, list) else [])
        if isinstance(e, dict)
    ]


def proven(path: Path = PROOF) -> list[str]:
    """The documents every CI run proves (`proven:`): each passed every step when it was listed."""
    entries = _proof_file(path).get("proven")
    return [str(e) for e in entries] if isinstance(entries, list) else []


def not_comparable(path: Path = PROOF) -> dict[str, str]:
    """Documents the differ cannot compare (`unable:`), with why: the proof says so instead of running it."""
    entries = _proof_file(path).get("unable") or {}
    return {str(k): " ".join(str(v).split()) for k, v in entries.items()} if isinstance(entries, dict) else {}


def by_operation(path: Path = PROOF) -> dict[str, str]:
    """Documents the differ compares one operation at a time (`by_operation:`), with why: Optic does not
    finish them whole (codegen.openapi_diff.breaking_changes_by_operation)."""
    entries = _proof_file(path).get("by_operation") or {}
    return {str(k): " ".join(str(v).split()) for k, v in entries.items()} if isinstance(entries, dict) else {}


def corpus() -> list[tuple[str, Path]]:
    """(slug, entry document) of every corpus document, from its index."""
    index = yaml.safe_load((CORPUS / "index.yaml").read_text(encoding="utf-8"))
    entries = index["documents"] if isinstance(index, dict) else index
    return [(str(e["slug"]), CORPUS / str(e["slug"]) / str(e["entry"])) for e in entries]


def service_name(slug: str) -> str:
    """A service name for a corpus slug (snake_case, at most 32 characters)."""
    name = re.sub(r"[^a-z0-9]+", "_", slug.lower()).strip("_")
    return (name if name[:1].isalpha() else f"api_{name}")[:32].rstrip("_")


def _project(root: Path) -> None:
    """The least a project needs: its table in pyproject.toml, the catalogue, a handlers package."""
    (root / "specs").mkdir(parents=True)
    (root / "handlers").mkdir()
    (root / "handlers/__init__.py").write_text("", encoding="utf-8")
    (root / "specs/errors.yaml").write_text(SCAFFOLD_ERRORS.read_text(encoding="utf-8"), encoding="utf-8")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "import-proof"\nversion = "0.1.0"\n\n[tool.kumitate]\nspecs = "specs"\n', encoding="utf-8"
    )


def _run(argv: list[str], cwd: Path, timeout: float = 600) -> tuple[bool, str]:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    return done.returncode == 0, (done.stdout + done.stderr).strip()


def _last_lines(text: str, count: int = 12) -> str:
    return "\n".join(text.splitlines()[-count:])


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


PRISM_HEADER_GUARD = """// kumitate's import proof (codegen/import_proof.py, PRISM_HEADER_GUARD): keep Prism alive
const http = require('http');
const setHeader = http.ServerResponse.prototype.setHeader;
http.ServerResponse.prototype.setHeader = function (name, value) {
  if (String(name).toLowerCase() === 'sl-violations' && typeof value === 'string') {
    value = value.replace(/[^\\u0000-\\u00ff]/g, (c) => '\\\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
  }
  return setHeader.call(this, name, value);
};
const deserializers = require(require.resolve('@stoplight/prism-http/dist/validator/deserializers',
  { paths: [process.env.KUMITATE_PRISM_HOME] }));
const simple = deserializers.header.simple;
deserializers.header.simple = function (name, parameters, schema, explode) {
  return parameters[name] === undefined ? undefined : simple(name, parameters, schema, explode);
};
function refusing(readers, style) {
  const read = readers[style];
  readers[style] = function (name, parameters, ...rest) {
    if (readers !== deserializers.path && parameters[name] === undefined) return undefined;
    try {
      return read.call(this, name, parameters, ...rest);
    } catch (error) {
      return Symbol(String(error && error.message));
    }
  };
}
for (const style of ['label', 'matrix']) refusing(deserializers.path, style);
for (const style of ['spaceDelimited', 'pipeDelimited', 'commaDelimited']) refusing(deserializers.query, style);
"""
"""Loaded into Prism's Node (`--require`): two fixes that keep the stub's process alive. First, Prism 5.16
writes the violations it finds in its own answer (the document's example, or one it generated, that
breaks the document's schema: an `oneOf`'s message quotes the schema's enum values) into an `sl-violations` response header, and Node refuses a header value
with a character outside Latin-1 (Lob's country `KOREA (DEMOCRATIC PEOPLE’S REPUBLIC OF)`): the uncaught
TypeError ends the stub's process, and every later request fails (502) for the stub's sake. This writes
such a character as its `\\uXXXX` JSON escape in that header only. The proof stays as meaningful: the
header is Prism's remark on its own answer (the facade does not read it), and Prism validates each
request before it answers, unchanged. Second, Prism's reader of a `simple` header splits the header's
text for an array or object schema without asking whether the request has the header: an optional one
left out (ReadMe's `array` header) throws a TypeError that ends the process. A header the request does
not have reads as absent, as any other parameter does (a `required` one is still refused as missing).
Third, its `label` and `matrix` path readers throw on a segment not in their style (`x` where `.x` is
due), and its `spaceDelimited` / `pipeDelimited` query readers on any parameter that is no array (ReadMe's
`object`, which OpenAPI allows), sent or not: each ends the process too. A query parameter not sent reads
as absent; a value such a reader cannot read reads as a value no schema type accepts, so the request is
refused (logged as any other refusal) and the stub lives on to judge the next."""


@contextmanager
def prism(document: Path, log: Path, *, dynamic: bool = False, seed: int = 0) -> Iterator[str]:
    """Prism mocking `document` on a free loopback port: static answers (the document's examples), or with
    `dynamic` answers generated from the response schemas (a document's examples may break its own schema,
    which a fuzzer then blames on the facade), by json-schema-faker from `seed`, so that a run repeats (with
    schemathesis' own seed, the same requests get the same answers)."""
    bin_dir = npm.install(CACHE, [PRISM], ["prism"], "import proof")
    port = free_port()
    command = [
        str(bin_dir / "prism"),
        "mock",
        "--cors=false",
        "-h",
        "127.0.0.1",
        "-p",
        str(port),
        *(["-d", "--seed", str(seed)] if dynamic else []),
    ]
    guard = log.with_name("prism-header-guard.js")
    guard.write_text(PRISM_HEADER_GUARD, encoding="utf-8")
    env = npm.node_env(bin_dir)
    env["NODE_OPTIONS"] = f"{env.get('NODE_OPTIONS', '')} --require {guard}".strip()
    env["KUMITATE_PRISM_HOME"] = str(bin_dir.parent.parent)  # where the guard finds Prism's own modules
    with log.open("wb") as out:
        process = subprocess.Popen([*command, str(document)], stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while "Prism is listening" not in log.read_text(errors="replace"):  # no probe request: it would be logged
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"prism did not start: {_last_lines(log.read_text(errors='replace'))}")
            time.sleep(0.3)
        yield url
    finally:
        stop(process)


def _regenerated(project: Path, prefix: str, target: Path) -> None:
    """The project's generated document with the service's prefix taken off every path."""
    document = json.loads((project / "generated/openapi.json").read_text(encoding="utf-8"))
    document["paths"] = {
        (path.removeprefix(prefix) or "/"): item for path, item in document["paths"].items() if path.startswith(prefix)
    }
    target.write_text(json.dumps(document), encoding="utf-8")


UPSTREAM_FAILURES = """
[checks.not_a_server_error]
expected-statuses = ["2xx", "3xx", "4xx", "502", "504"]
"""
"""A facade's 502 (UPSTREAM_ERROR) and 504 (UPSTREAM_TIMEOUT) say that the API failed, not the facade: the
stub answered 5xx, or an answer its own document does not allow (Prism's generator cannot satisfy every
schema, and its example answers may break it: Prism flags them itself). The proof fuzzes the facade, so
those are no server error of its; a 500 is. What the facade sends is judged by the stub, whatever it answers
(`_stub_refusals`), and every imported example must succeed through it."""


def _schemathesis(url: str, tree: specs.SpecTree, work: Path, max_examples: int, seed: int) -> tuple[bool, str]:
    config = work / "schemathesis.toml"
    config.write_text(config_toml(tree, max_examples) + UPSTREAM_FAILURES, encoding="utf-8")
    command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run"]
    command += [f"{url}/schema/openapi.json", "--checks", "all", "--phases", "examples,fuzzing", "--seed", str(seed)]
    for header in FUZZ_HEADERS:
        command += ["-H", header]
    return _run(command, work, timeout=1800)


EXAMPLES_SCRIPT = """
import asyncio, json, sys
from pathlib import Path
from fastmcp import Client
from codegen import specs
from codegen.examples import all_examples
from codegen.testing import examples_over_http, examples_over_mcp
from kumitate.project import Project

project = Project.at(Path.cwd())
project.activate()
tree = specs.load(project.specs)
# the stub answers an operation's first example to every request: only each tool's first success example,
# and every error example, can be reproduced through it
for tool in tree.all_tools():
    successes = [ex for ex in tool.examples if ex.error is None]
    tool.examples = [ex for ex in tool.examples if ex.error is not None or ex is successes[0]]
url = sys.argv[1]
headers = {"Authorization": "Bearer import-proof"}
over_http = asyncio.run(examples_over_http(tree, url, headers))
over_mcp = asyncio.run(examples_over_mcp(tree, Client(url + "/mcp", auth="import-proof")))
print(json.dumps({"count": len(all_examples(tree)), "http": over_http, "mcp": over_mcp}))
"""
"""Run in the project (its generated package, not this repository's, says which services it serves)."""


def _examples(url: str, project: Path) -> tuple[int, list[str], list[str]]:
    """How many spec examples ran, and the failures over HTTP and over MCP (streamable HTTP)."""
    ok, said = _run([sys.executable, "-c", EXAMPLES_SCRIPT, url], project)
    line = next((line for line in reversed(said.splitlines()) if line.startswith('{"count"')), None)
    if not ok or line is None:
        return 0, [_last_lines(said)], [_last_lines(said)]
    result = json.loads(line)
    return int(result["count"]), list(result["http"]), list(result["mcp"])


def _failures(said: str) -> str:
    """The first failures schemathesis reports (what failed, where, and the curl that reproduces it),
    then its summary's failure counts."""
    lines = said.splitlines()
    start = next((i for i, line in enumerate(lines) if "FAILURES" in line), 0)
    counts = [line.strip() for line in lines if line.strip().startswith("❌ ST")]
    return "\n".join([*lines[start : start + 40], *counts])


def _stub_refusals(log: Path) -> list[str]:
    """The forwarded requests the stub refused as not matching the original document (no such path, or
    a request its validator rejects): a facade that is lossless sends none."""
    refused = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if "Violation: response." in line:  # Prism judging its own answer (the document's example), not ours
            continue
        if "NO_PATH_MATCHED_ERROR" in line or "UNPROCESSABLE_ENTITY" in line or "[VALIDATOR] ✖" in line:
            refused.append(line.split("›", 1)[-1].strip())
    return refused


def _serve_and_call(
    proof: Proof, project: Path, tree: specs.SpecTree, work: Path, stub: Path, max_examples: int, seed: int
) -> None:
    """The facade served in front of the stub: the examples over HTTP and MCP, schemathesis, and whether the
    stub refused any request the facade forwarded.

    The fuzz runs against the stub answering the document's examples; where that fails, once more against
    the stub making its answers up from the response schemas, and it passes if either run does. Each stub
    fails in its own way on real documents (examples that break their own schema, Xero's amounts as
    strings; a generator that cannot satisfy a `oneOf`, or answers 500 and opens the facade's breaker),
    while a fault of the facade fails both; whatever either stub refuses fails the document regardless."""
    upstream_url = f"KUMITATE_{proof.service.upper()}_UPSTREAM_URL"
    # kumitate's own tokens, as `make fuzz` sets them: the facade of a secured API asks for one (ST401)
    env = {"KUMITATE_TOKENS": '{"import-proof": {"principal": "proof", "scopes": ["*"]}}'}
    env["KUMITATE_AUTH_FAILURES"] = "100000/100000"
    logs = [work / "prism.log"]
    with (
        prism(stub, logs[0]) as upstream,
        serve(project, work / "var", **env, **{upstream_url: upstream}) as facade,
    ):
        proof.examples, over_http, over_mcp = _examples(facade.url, project)
        proof.steps["examples over HTTP"] = "ok" if not over_http else "; ".join(over_http[:3])
        proof.steps["examples over MCP"] = "ok" if not over_mcp else "; ".join(over_mcp[:3])
        ok, said = _schemathesis(facade.url, tree, work, max_examples, seed)
    if not ok:
        logs.append(work / "prism-dynamic.log")
        with (
            prism(work / "stub-dynamic.json", logs[1], dynamic=True, seed=seed) as upstream,
            serve(project, work / "var-fuzz", **env, **{upstream_url: upstream}) as facade,
        ):
            ok, again = _schemathesis(facade.url, tree, work, max_examples, seed)
        said = f"{said}\n--- against the generating stub ---\n{again}"
    (work / "schemathesis.log").write_text(said, encoding="utf-8")
    proof.steps["schemathesis"] = "ok" if ok else _failures(said.rpartition("--- against the generating stub ---")[2])
    refused = [line for log in logs for line in _stub_refusals(log)]
    proof.steps["stub accepted every request"] = "ok" if not refused else f"{len(refused)}: {refused[0]}"


def prove(slug: str, entry: Path, work: Path, *, max_examples: int = 3, seed: int = 20261207) -> Proof:
    """One document's proof in `work` (a fresh directory); stops at the first step that cannot go on."""
    service = service_name(slug)
    proof = Proof(slug, service)
    project = work / "project"
    _project(project)
    prefix = f"/v1/{service}"
    stub = work / "stub.json"
    stub_document(entry, stub)
    stub_document(entry, work / "stub-dynamic.json", dynamic=True)
    port_hint = "http://127.0.0.1:9"  # replaced by the stub's address when it serves (the env var below)
    command = [sys.executable, "-m", "kumitate", "import", "openapi", str(entry), "--service", service]
    ok, said = _run([*command, "--forward", port_hint, "--base-path", prefix], project)
    proof.summary = next((line for line in said.splitlines() if line.startswith("imported ")), said[-300:])
    match = re.search(r"imported (\d+) operation", proof.summary)
    proof.operations = int(match.group(1)) if match else 0
    proof.steps["import"] = "ok" if ok else _last_lines(said)
    if not ok:
        return proof
    report = project / "specs" / service / "IMPORT-REPORT.md"
    proof.report = report.read_text(encoding="utf-8") if report.is_file() else ""
    for step, argv in (("generate", ["--check"]), ("lint", ["--lint"])):
        ok, said = _run([sys.executable, "-m", "codegen", *argv], project)
        proof.steps[step] = "ok" if ok else _last_lines(said)
    regenerated = work / "regenerated.json"
    _regenerated(project, prefix, regenerated)
    proof.steps["differ"] = _differ(proof, entry, regenerated)
    tree = specs.load(project / "specs")
    try:
        _serve_and_call(proof, project, tree, work, stub, max_examples, seed)
    except RuntimeError as exc:  # the stub or the facade did not start: a step that failed, not a crash
        proof.steps["serve"] = _last_lines(str(exc))
    return proof


def _differ(proof: Proof, entry: Path, regenerated: Path) -> str:
    """The differ step's verdict: Optic's breaking changes between the original and the regenerated
    document, whole or one operation at a time (proof.yaml `by_operation:`), each explained by proof.yaml or a failure; a
    document or a path it cannot compare is a failure too (proof.yaml `unable:` says why, if it is known)."""
    unable = not_comparable().get(proof.slug)
    if unable is not None:
        proof.not_compared = unable
        return f"not compared: {unable}"
    missed: dict[str, str] = {}
    try:
        if proof.slug in by_operation():
            split = openapi_diff.breaking_changes_by_operation(entry, regenerated)
            proof.breaking, missed = split.changes, split.not_compared
        else:
            proof.breaking = openapi_diff.breaking_changes(entry, regenerated)
    except openapi_diff.DiffFailed as exc:
        return str(exc)
    unexplained = proof.unexplained = _explain(proof, differences())
    problems = [f"{len(unexplained)} unexplained, e.g. {unexplained[0]}"] if unexplained else []
    known = {op: not_comparable().get(f"{proof.slug} {op}") for op in missed}
    if any(known.values()):
        proof.not_compared = "; ".join(f"{op}: {why}" for op, why in known.items() if why)
        proof.uncompared = sum(1 for why in known.values() if why)
    unknown = {op: why for op, why in missed.items() if not known[op]}
    if unknown:
        listed = "; ".join(f"{op}: {why}" for op, why in unknown.items())
        problems.append(f"{len(unknown)} operation(s) not compared: {listed}")
    return "; ".join(problems) or "ok"


def _explain(proof: Proof, accepted: list[Difference]) -> list[openapi_diff.BreakingChange]:
    """Count each breaking change under the first difference that explains it; the ones none does."""
    unexplained = []
    for change in proof.breaking:
        why = next((d.why for d in accepted if d.explains(proof.slug, change)), None)
        if why is None:
            unexplained.append(change)
        else:
            proof.explained[why] = proof.explained.get(why, 0) + 1
    return unexplained


def results_table(proofs: list[Proof]) -> str:
    """The per-document table of RESULTS: each step's verdict, and Optic's breaking changes (explained by
    proof.yaml / not)."""
    steps = ["import", "generate", "lint", "examples over HTTP", "examples over MCP", "schemathesis"]
    steps.append("stub accepted every request")
    lines = [
        "| document | ops | verdict | import | generate | lint | breaking: explained / not | examples HTTP, MCP"
        " | schemathesis | stub accepted all |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in proofs:
        verdict = {step: ("ok" if p.steps.get(step) == "ok" else "FAIL" if step in p.steps else "-") for step in steps}
        explained = sum(p.explained.values())
        breaking = f"{explained} / {len(p.breaking) - explained}" if "differ" in p.steps else "-"
        if p.not_compared:
            breaking += f" ({p.uncompared or 'document'} not compared)"
        lines.append(
            f"| {p.slug} | {p.operations} | **{'PASS' if p.passed else 'FAIL'}** | {verdict['import']}"
            f" | {verdict['generate']} | {verdict['lint']} | {breaking}"
            f" | {verdict['examples over HTTP']}, {verdict['examples over MCP']} | {verdict['schemathesis']}"
            f" | {verdict['stub accepted every request']} |"
        )
    passed = sum(p.passed for p in proofs)
    return "\n".join(lines) + f"\n\n{passed} of {len(proofs)} documents pass every step.\n"


RESULTS_INTRO = """# Importing real APIs: the corpus

`make import-proof` (codegen/import_proof.py) imports each document of tests/data/openapi-corpus
(24 public OpenAPI 3.0/3.1 documents, with their licences) as a facade, and for each one: generates and
lints the project; compares the original with the regenerated document by Optic's breaking-change rules
(codegen/openapi_diff.py), every change found either explained in tests/data/openapi-corpus/proof.yaml
or a failure; serves the facade in front of Prism mocking the original (which validates every forwarded
request against the original document) and runs the imported examples over HTTP and MCP and schemathesis
against the facade. This page is its output (`python -m codegen.import_proof --results docs/import-corpus.md`).
"""


def results(proofs: list[Proof]) -> str:
    """RESULTS: the table, then per document what was carried over and what was not."""
    parts = [RESULTS_INTRO, results_table(proofs)]
    for p in proofs:
        parts.append(f"## {p.slug}\n\n{p.summary}\n")
        failed = {step: verdict for step, verdict in p.steps.items() if verdict != "ok"}
        for step, verdict in failed.items():
            parts.append(f"- **{step} failed**: {' '.join(verdict.split())[:500]}")
        if p.not_compared:
            parts.append(f"- not compared by Optic: {p.not_compared}")
        for why, count in p.explained.items():
            parts.append(f"- {count} breaking change(s) by design: {why}")
        report = p.report.split("\n", 1)[1] if p.report.startswith("#") else p.report
        if report.strip():
            parts.append("\n" + re.sub(r"^#", "###", report.strip(), flags=re.M) + "\n")
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Prove the named corpus documents (default: all); print each verdict; exit 1 if any failed."""
    parser = argparse.ArgumentParser(prog="python -m codegen.import_proof", description=__doc__.splitlines()[0])
    parser.add_argument("slugs", nargs="*")
    parser.add_argument("--proven", action="store_true", help="only the documents proof.yaml lists as proven (CI)")
    parser.add_argument("--max-examples", type=int, default=3)
    parser.add_argument("--results", type=Path, help="write the per-document table (markdown) here")
    args = parser.parse_args(argv)
    wanted = set(args.slugs) | set(proven()) if args.proven else set(args.slugs)
    chosen = [(slug, entry) for slug, entry in corpus() if slug in wanted or not (wanted or args.proven)]
    proofs = []
    for slug, entry in chosen:
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=f"import-proof-{slug}-") as tmp:
            proof = prove(slug, entry, Path(tmp), max_examples=args.max_examples)
        proofs.append(proof)
        took = time.monotonic() - started
        print(f"{'PASS' if proof.passed else 'FAIL'} {slug} ({took:.0f} s): {proof.summary}", flush=True)
        for step, verdict in proof.steps.items():
            if verdict != "ok":
                print(f"  {step}: {verdict}")
        for change in proof.unexplained:
            print(f"  breaking, unexplained: {change}")
    if args.results:
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(results(proofs), encoding="utf-8")
    return 0 if all(p.passed for p in proofs) else 1


if __name__ == "__main__":
    sys.exit(main())
