"""The import proof's harness on one real document of the corpus (make import-proof runs all 24): a facade
of the Redocly museum API, served for real in front of Prism, passes every step; and the harness is no
rubber stamp: a facade that forwards to the wrong paths is caught by the stub, and a breaking change
proof.yaml does not explain fails the differ step."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from codegen import import_proof, prism, proof_stub
from codegen.openapi_diff import BreakingChange

pytestmark = pytest.mark.slow
MUSEUM = import_proof.CORPUS / "redocly-museum/openapi.yaml"


def test_a_real_document_passes_every_step(tmp_path: Path) -> None:
    proof = import_proof.prove("redocly-museum", MUSEUM, tmp_path)
    assert proof.passed, proof.steps
    assert proof.operations == 8 and proof.examples > 0
    assert set(proof.steps) >= {"import", "generate", "lint", "differ", "schemathesis", "stub accepted every request"}


def test_the_stub_names_requests_the_original_would_refuse(tmp_path: Path) -> None:
    log = tmp_path / "prism.log"
    log.write_text(
        "[7:40:10 AM] › [HTTP SERVER] post /v1/museum/tickets ✖  error     Request terminated with error:"
        " https://stoplight.io/prism/errors#NO_PATH_MATCHED_ERROR: Route not resolved, no path matched\n"
        "[7:40:11 AM] › [HTTP SERVER] get /museum-hours ℹ  info      Request received\n",
        encoding="utf-8",
    )
    refused = import_proof._stub_refusals(log)
    assert len(refused) == 1 and "NO_PATH_MATCHED_ERROR" in refused[0]


def test_an_unexplained_breaking_change_fails_and_an_explained_one_is_counted() -> None:
    change = BreakingChange("GET /x", "GET /x response 200", "/paths", True, "prevent operation removal", "gone")
    accepted = [import_proof.Difference(re.compile(r"response 404"), "not this one")]
    proof = import_proof.Proof("doc", "doc", breaking=[change])
    assert import_proof._explain(proof, accepted) == [change]
    accepted.append(import_proof.Difference(re.compile(r"operation removal"), "removed on purpose", frozenset({"doc"})))
    proof = import_proof.Proof("doc", "doc", breaking=[change])
    assert import_proof._explain(proof, accepted) == [] and proof.explained == {"removed on purpose": 1}
    other = import_proof.Proof("another", "another", breaking=[change])
    assert import_proof._explain(other, accepted) == [change]  # that difference is only expected in `doc`


def test_the_stub_reads_a_repeated_form_field_and_sends_a_boolean_header(tmp_path: Path) -> None:
    """Prism 5.16 refuses any form field for an array property without an Encoding Object style, and sends
    `null` for a boolean header with no example: the stub's copy works around both (stub_document)."""
    items = {"type": "array", "items": {"$ref": "#/components/schemas/Item"}}
    body = {"type": "object", "properties": {"Items": items, "Name": {"type": "string"}}, "required": ["Items"]}
    header = {"schema": {"type": "boolean"}}
    document = {
        "openapi": "3.0.1",
        "info": {"title": "t", "version": "1"},
        "components": {"schemas": {"Body": body, "Item": {"type": "string"}}},
        "paths": {
            "/bulk": {
                "post": {
                    "requestBody": {
                        "content": {
                            "application/x-www-form-urlencoded": {"schema": {"$ref": "#/components/schemas/Body"}}
                        }
                    },
                    "responses": {"201": {"description": "ok", "headers": {"Allow-Credentials": header}}},
                }
            }
        },
    }
    entry, stub = tmp_path / "doc.json", tmp_path / "stub.json"
    entry.write_text(json.dumps(document), encoding="utf-8")
    proof_stub.stub_document(entry, stub)
    written = json.loads(stub.read_text(encoding="utf-8"))
    operation = written["paths"]["/bulk"]["post"]
    form = operation["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]
    assert form["properties"]["Items"] == {"anyOf": [items, {"$ref": "#/components/schemas/Item"}]}
    assert form["required"] == ["Items"] and form["properties"]["Name"] == {"type": "string"}
    assert written["components"]["schemas"]["Body"] == body  # the shared schema is left as it was
    assert operation["responses"]["201"]["headers"]["Allow-Credentials"]["example"] is True


def test_the_stub_answers_an_example_written_as_json_text_as_the_json_it_spells(tmp_path: Path) -> None:
    """Xero's documents write answer examples as JSON text in a string; the stub's copy reads them as the
    JSON they spell where the schema is an object or an array, and leaves a string schema's text alone."""
    folder = {"required": ["name"], "properties": {"Name": {"type": "string"}}}  # no `type`, as Xero writes it
    responses = {
        "200": {
            "description": "ok",
            "content": {
                "application/json": {
                    "schema": {"$ref": "#/components/schemas/Folder"},
                    "example": '{ "Name": "My Docs" }',
                    "examples": {"one": {"value": '[ "not this schema" ]'}},
                }
            },
        },
        "400": {"description": "bad", "content": {"text/plain": {"schema": {"type": "string"}, "example": "{ x"}}},
    }
    document = {
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "components": {"schemas": {"Folder": folder}},
        "paths": {"/Folders": {"get": {"responses": responses}}},
    }
    entry, stub = tmp_path / "doc.json", tmp_path / "stub.json"
    entry.write_text(json.dumps(document), encoding="utf-8")
    proof_stub.stub_document(entry, stub)
    written = json.loads(stub.read_text(encoding="utf-8"))["paths"]["/Folders"]["get"]["responses"]
    assert written["200"]["content"]["application/json"]["example"] == {"Name": "My Docs"}
    assert written["200"]["content"]["application/json"]["examples"]["one"]["value"] == ["not this schema"]
    assert written["400"]["content"]["text/plain"]["example"] == "{ x"


def test_the_stub_leaves_out_examples_of_another_type_and_a_default_taken_for_a_success(tmp_path: Path) -> None:
    """Ory Hydra's `audience` (an array) has a string example, which Prism's static answers would carry; its
    `/oauth2/auth` documents a 302 and a `default`, which Prism answers as a 200. The stub's copy leaves both
    out; an example of the schema's own type, and an operation's `default` beside a 2xx, stay."""
    client = {
        "type": "object",
        "properties": {
            "audience": {"type": "array", "items": {"type": "string"}, "example": "a, b"},
            "name": {"type": "string", "example": "kept"},
            "count": {"type": "number", "example": 3},
            "flag": {"type": "integer", "example": True},
        },
    }
    error = {"description": "error", "content": {"application/json": {"schema": {"type": "object"}}}}
    document = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "components": {"schemas": {"client": client}},
        "paths": {
            "/oauth2/auth": {"get": {"responses": {"302": {"description": "redirect"}, "default": error}}},
            "/clients": {"get": {"responses": {"200": {"description": "ok"}, "default": error}}},
        },
    }
    entry, stub = tmp_path / "doc.json", tmp_path / "stub.json"
    entry.write_text(json.dumps(document), encoding="utf-8")
    proof_stub.stub_document(entry, stub)
    written = json.loads(stub.read_text(encoding="utf-8"))
    properties = written["components"]["schemas"]["client"]["properties"]
    assert "example" not in properties["audience"] and "example" not in properties["flag"]
    assert properties["name"]["example"] == "kept" and properties["count"]["example"] == 3
    assert list(written["paths"]["/oauth2/auth"]["get"]["responses"]) == ["302"]
    assert list(written["paths"]["/clients"]["get"]["responses"]) == ["200", "default"]


def test_the_stub_outlives_a_violation_it_cannot_write_in_a_header(tmp_path: Path) -> None:
    """Prism puts the violations of its own answer in an `sl-violations` header; one quoting a character
    outside Latin-1 (an enum's `’`) ended its process (Node refuses the header), failing every later request."""
    import httpx

    document = {
        "openapi": "3.0.3",
        "info": {"title": "T", "version": "1"},
        "paths": {
            "/country": {
                "get": {
                    "responses": {
                        "200": {
                            "description": "ok",
                            "content": {
                                "application/json": {
                                    "schema": {"type": "string", "enum": ["LAO PEOPLE’S DEMOCRATIC REPUBLIC"]},
                                    "example": "NOWHERE",
                                }
                            },
                        }
                    }
                }
            }
        },
    }
    stub = tmp_path / "stub.json"
    stub.write_text(json.dumps(document), encoding="utf-8")
    with prism.prism(stub, tmp_path / "prism.log") as url:
        answers = [httpx.get(f"{url}/country", timeout=10) for _ in range(2)]
    assert [answer.json() for answer in answers] == ["NOWHERE", "NOWHERE"]
    assert "\\u2019" in answers[0].headers["sl-violations"]


def test_the_generating_stub_makes_up_a_url_where_the_document_asks_one(tmp_path: Path) -> None:
    """Prism asserts `format: url` but its generator makes up lorem text for it: the generating stub's copy
    asks faker's URLs there; the static stub's copy is the document's."""
    entry = import_proof.CORPUS / "readme-api/readme.json"
    proof_stub.stub_document(entry, tmp_path / "dynamic.json", dynamic=True)
    proof_stub.stub_document(entry, tmp_path / "static.json")
    dynamic = (tmp_path / "dynamic.json").read_text()
    assert dynamic.count('"format": "url"') == dynamic.count('"x-faker": "internet.url"') > 0
    assert "x-faker" not in (tmp_path / "static.json").read_text()


def test_the_stub_answers_an_operation_that_documents_no_answer(tmp_path: Path) -> None:
    """Prism answers 500 where an operation has no `responses` (and the facade's breaker opens): the stub's
    copy gives each such operation a bodiless 200, what the import reads it as answering."""
    entry = import_proof.CORPUS / "readme-parameters-style/parameters-style.json"
    proof_stub.stub_document(entry, tmp_path / "stub.json")
    paths = json.loads((tmp_path / "stub.json").read_text())["paths"]
    operations = [op for item in paths.values() for op in item.values() if isinstance(op, dict)]
    assert operations and all(list(op["responses"]) == ["200"] for op in operations)


def _stub_of(tmp_path: Path, document: dict[str, object], *, dynamic: bool = False) -> dict[str, object]:
    entry, stub = tmp_path / "doc.json", tmp_path / "stub.json"
    entry.write_text(json.dumps(document), encoding="utf-8")
    proof_stub.stub_document(entry, stub, dynamic=dynamic)
    written: dict[str, object] = json.loads(stub.read_text(encoding="utf-8"))
    return written


def test_the_stub_reads_a_multipart_body_as_the_parts_the_facade_sends(tmp_path: Path) -> None:
    """Prism reads a JSON part as text ("must be object", Lob's `ride_along_image`), checks a part with an
    Encoding Object for reserved characters as if it were percent-encoded, and throws (ending its process)
    on a `pipeDelimited` property that is no array (ReadMe's). The stub's copy lets an object property be
    its JSON text, allows reserved characters, and reads no `style`; the component schema stays as it is."""
    campaign = {
        "allOf": [
            {"type": "object", "properties": {"image": {"type": "object"}, "url": {"type": "string"}}},
            {"type": "object", "required": ["image"]},
        ]
    }
    body = {
        "content": {
            "multipart/form-data": {
                "schema": {"$ref": "#/components/schemas/Campaign"},
                "encoding": {"url": {"contentType": "text/plain"}, "image": {"style": "pipeDelimited"}},
            }
        }
    }
    document = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "components": {"schemas": {"Campaign": campaign}},
        "paths": {"/campaigns": {"post": {"requestBody": body, "responses": {"200": {"description": "ok"}}}}},
    }
    written = _stub_of(tmp_path, document)
    media = written["paths"]["/campaigns"]["post"]["requestBody"]["content"]["multipart/form-data"]  # type: ignore[index]
    assert media["encoding"] == {
        "url": {"contentType": "text/plain", "allowReserved": True},
        "image": {"allowReserved": True},
    }
    image = media["schema"]["allOf"][0]["properties"]["image"]
    assert image == {"anyOf": [{"type": "object"}, {"type": "string"}]}
    assert written["components"]["schemas"]["Campaign"] == campaign  # type: ignore[index]


def test_the_stub_answers_first_the_response_example_a_request_example_pairs_with(tmp_path: Path) -> None:
    """Prism answers a response's first example; the import keeps the examples that pair by name (Lob's
    `/intl_verifications`: answers `full`, `test`, only `test` asked): the stub's copy lists `test` first."""

    def named(*names: str) -> dict[str, object]:
        return {name: {"value": {"name": name}} for name in names}

    operation = {
        "requestBody": {
            "content": {"application/json": {"schema": {"type": "object"}, "examples": named("basic", "test")}}
        },
        "responses": {
            "200": {"description": "ok", "content": {"application/json": {"examples": named("full", "test")}}},
            "400": {"description": "bad", "content": {"application/json": {"examples": named("full", "test")}}},
        },
    }
    document = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {"/verify": {"post": operation}}}
    responses = _stub_of(tmp_path, document)["paths"]["/verify"]["post"]["responses"]  # type: ignore[index]
    assert list(responses["200"]["content"]["application/json"]["examples"]) == ["test", "full"]
    assert list(responses["400"]["content"]["application/json"]["examples"]) == ["full", "test"]


def test_the_generating_stub_makes_up_what_the_schema_says_where_its_generator_would_not(tmp_path: Path) -> None:
    """json-schema-faker makes up a string for any schema with a `pattern` (Lob's `metadata`, an object),
    and fails on an array that says nothing of its items (Lob's `uploads`): the generating stub's copy
    leaves string keywords out of schemas that name no string type, and gives such an array `items: {}`,
    which validates nothing differently; the static stub's copy is the document's."""
    metadata = {"type": "object", "additionalProperties": {"type": "string"}, "maxLength": 500, "pattern": '[^"]*'}
    name = {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5}
    uploads = {"type": "array", "maxItems": 1}
    document = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "components": {"schemas": {"Metadata": metadata, "Name": name, "Uploads": uploads}},
        "paths": {},
    }
    schemas = _stub_of(tmp_path, document, dynamic=True)["components"]["schemas"]  # type: ignore[index]
    assert schemas["Metadata"] == {"type": "object", "additionalProperties": {"type": "string"}}
    assert schemas["Name"] == name
    assert schemas["Uploads"] == {**uploads, "items": {}}
    assert _stub_of(tmp_path, document)["components"]["schemas"]["Metadata"] == metadata  # type: ignore[index]


def test_the_stub_outlives_an_optional_array_header_left_out(tmp_path: Path) -> None:
    """Prism split an array header's text without asking whether the request had it: an optional one left
    out (ReadMe's parameter-style headers) ended its process. It reads as absent; a required one is refused."""
    import httpx

    def header(name: str, required: bool) -> dict[str, object]:
        schema = {"type": "array", "items": {"type": "string"}}
        return {"in": "header", "name": name, "required": required, "schema": schema}

    ok = {"200": {"description": "ok", "content": {"application/json": {"example": "ok"}}}}
    document = {
        "openapi": "3.1.0",
        "info": {"title": "T", "version": "1"},
        "paths": {
            "/optional": {"get": {"parameters": [header("X-List", False)], "responses": ok}},
            "/required": {"get": {"parameters": [header("X-List", True)], "responses": ok}},
        },
    }
    stub = tmp_path / "stub.json"
    stub.write_text(json.dumps(document), encoding="utf-8")
    with prism.prism(stub, tmp_path / "prism.log") as url:
        statuses = [httpx.get(f"{url}{path}", timeout=10).status_code for path in ("/optional", "/required")]
        statuses.append(httpx.get(f"{url}/required", headers={"X-List": "a,b"}, timeout=10).status_code)
    assert statuses == [200, 422, 200]


def test_the_stub_refuses_a_parameter_its_style_reader_cannot_read_and_lives_on(tmp_path: Path) -> None:
    """Prism's `label` path reader threw on a segment without its `.` (ReadMe's parameter styles, which the
    facade sends as plain segments), and its `pipeDelimited` reader on an object query parameter, sent or
    not, ending its process: such a value is refused, an absent one is absent, and the stub answers on."""
    import httpx

    label = {"in": "path", "name": "id", "required": True, "style": "label", "schema": {"type": "string"}}
    ok = {"200": {"description": "ok", "content": {"application/json": {"example": "ok"}}}}
    piped = {"in": "query", "name": "object", "style": "pipeDelimited", "schema": {"type": "object"}}
    document = {
        "openapi": "3.1.0",
        "info": {"title": "T", "version": "1"},
        "paths": {
            "/label/{id}": {"get": {"parameters": [label], "responses": ok}},
            "/piped": {"get": {"parameters": [piped], "responses": ok}},
        },
    }
    stub = tmp_path / "stub.json"
    stub.write_text(json.dumps(document), encoding="utf-8")
    with prism.prism(stub, tmp_path / "prism.log") as url:
        paths = ("/label/plain", "/label/.dotted", "/piped", "/piped?object=a|b", "/label/.again")
        statuses = [httpx.get(f"{url}{path}", timeout=10).status_code for path in paths]
    assert statuses == [422, 200, 200, 422, 200]
    assert import_proof._stub_refusals(tmp_path / "prism.log")
