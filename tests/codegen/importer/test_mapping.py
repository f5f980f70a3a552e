"""What `kumitate import openapi` writes for small crafted OpenAPI 3.0 and 3.1 documents."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import pytest
import yaml

from codegen.importer import ImportFailed
from tests.codegen.importer.conftest import DATA, http_server, run, tools


def test_multi_file_refs_become_shared_types(project: Path) -> None:
    """A schema in another file (a whole file, or a component of one) is hoisted into types/<svc>.json;
    every tool's ref points there; OpenAPI 3.0's nullable and boolean exclusiveMinimum are translated."""
    run(project, "petstore30/openapi.yaml", "pets")
    types = json.loads((project / "specs/pets/types/pets.json").read_text())["$defs"]
    assert {"Pet", "Owner", "NewPet", "Error", "Node"} <= set(types)
    assert types["Pet"]["properties"]["owner"] == {"$ref": "#/$defs/Owner"}
    assert types["Pet"]["properties"]["tag"]["type"] == ["string", "null"]
    assert types["Owner"]["properties"]["since"] == {"type": "integer", "exclusiveMinimum": 1900, "maximum": 2**63 - 1}
    specs = tools(project, "pets")
    assert specs["get_pet"]["output"] == {"$ref": "../types/pets.json#/$defs/Pet", "type": "object"}
    assert specs["list_pets"]["output"]["properties"]["items"]["items"] == {"$ref": "../types/pets.json#/$defs/Pet"}


def test_a_recursive_schema_is_cut_where_it_closes(project: Path) -> None:
    done = run(project, "petstore30/openapi.yaml", "pets")
    node = json.loads((project / "specs/pets/types/pets.json").read_text())["$defs"]["Node"]
    assert "$ref" not in node["properties"]["children"]["items"]
    assert node["properties"]["kind"]["title"] == "NodeKind"  # lint KT115
    assert done.report is not None
    assert any("recursive reference from Node to Node" in line for line in done.report.document)


def test_tool_names_are_readable_short_and_unique(project: Path) -> None:
    """operationId in snake_case; without one, the method and the path's nouns; a Japanese operationId
    has no ASCII words, so the route names it; a name used twice is numbered; 64 characters at most."""
    run(project, "petstore30/openapi.yaml", "pets")
    run(project, "library31.json", "library")
    assert set(tools(project, "pets")) == {"list_pets", "create_pet", "get_pet", "tag_pets", "delete_pet", "get_tree"}
    names = set(tools(project, "library"))
    assert {"update_book", "update_book_2", "create_search"} <= names
    assert all(len(name) <= 64 for name in names)
    assert "a_very_long_operation_identifier_that_goes_on_and_on_past_sixty" in names


def test_parameters_and_body_merge_into_one_flat_input(project: Path) -> None:
    """Body properties keep their names; a parameter whose name is taken gets its location as a prefix, one
    that is no snake_case identifier its snake_case; `property:` is written whenever it differs from `name`.
    Cookies, Authorization and read-only body properties are no inputs."""
    run(project, "petstore30/openapi.yaml", "pets")
    run(project, "library31.json", "library")
    update = tools(project, "library")["update_book"]
    assert update["http"]["params"] == [
        {"in": "path", "name": "id", "property": "path_id"},
        {"in": "query", "name": "id", "property": "query_id"},
        {"in": "query", "name": "body"},
    ]
    assert update["http"]["body"] == "rest"
    assert {"id", "title", "year", "format", "path_id", "query_id", "body"} == set(update["input"]["properties"])
    assert "path_id" in update["input"]["required"]
    listing = tools(project, "pets")["list_pets"]
    assert listing["http"]["params"][-1] == {"in": "header", "name": "X-Request-ID", "property": "x_request_id"}
    assert set(listing["input"]["properties"]) == {"limit", "status", "x_request_id"}
    assert listing["input"]["properties"]["limit"]["maximum"] == 2**31 - 1  # KT112, from format int32
    assert listing["input"]["properties"]["status"]["title"] == "ListPetsInputStatus"  # KT115
    create = tools(project, "pets")["create_pet"]
    assert set(create["input"]["properties"]) == {"name", "tag"}  # id is readOnly


def test_a_body_that_is_no_flat_object_is_one_property(project: Path) -> None:
    """An array body is the property `body`; a oneOf body too, or `payload` when a parameter is called body."""
    run(project, "petstore30/openapi.yaml", "pets")
    run(project, "library31.json", "library")
    tag = tools(project, "pets")["tag_pets"]
    assert tag["http"]["body"] == {"property": "body"}
    assert tag["input"]["properties"]["body"] == {"type": "array", "items": {"type": "string"}}
    assert tag["output"]["properties"]["items"]["type"] == "array"
    assert tag["http"]["response_body"] == {"property": "items"}
    search = tools(project, "library")["create_search"]
    assert search["http"]["body"] == {"property": "payload"}
    assert search["http"]["params"] == [{"in": "query", "name": "body"}]
    assert search["output"]["properties"]["result"]["type"] == "string"  # a text/plain answer
    assert search["http"]["response_body"] == {"property": "result"}
    form = tools(project, "library")["a_very_long_operation_identifier_that_goes_on_and_on_past_sixty"]
    assert form["http"]["content_types"] == ["application/x-www-form-urlencoded"]
    assert form["http"]["status"] == 202


def test_201_with_location_and_204(project: Path) -> None:
    run(project, "petstore30/openapi.yaml", "pets")
    specs = tools(project, "pets")
    create = specs["create_pet"]
    assert create["http"]["status"] == 201
    assert create["http"]["response_headers"] == [{"name": "Location", "property": "location"}]
    assert "location" in create["output"]["required"] and "id" in create["output"]["properties"]
    delete = specs["delete_pet"]
    assert delete["http"]["status"] == 204 and delete["http"]["response_body"] == "none"
    assert delete["output"] == {"type": "object", "additionalProperties": False, "properties": {}}


def test_annotations_and_policy_follow_the_method(project: Path) -> None:
    run(project, "petstore30/openapi.yaml", "pets")
    specs = tools(project, "pets")
    hints = {name: spec["mcp"]["annotations"] for name, spec in specs.items()}
    assert hints["list_pets"]["readOnlyHint"] and hints["list_pets"]["idempotentHint"]
    assert hints["delete_pet"]["destructiveHint"] and hints["delete_pet"]["idempotentHint"]
    assert hints["tag_pets"]["idempotentHint"] and not hints["tag_pets"]["readOnlyHint"]
    assert not hints["create_pet"]["idempotentHint"] and not hints["create_pet"]["readOnlyHint"]
    assert not any(h["openWorldHint"] for h in hints.values())  # no --forward: no facade
    assert specs["create_pet"]["policy"] == {"idempotency": True}
    assert specs["delete_pet"]["policy"]["idempotency"] is False and specs["delete_pet"]["policy"]["idempotency_note"]
    assert "policy" not in specs["get_pet"]


def test_documented_errors_map_to_catalogue_codes(project: Path) -> None:
    """Existing codes for statuses that have one; a new code, described by the document, for one that has none."""
    done = run(project, "petstore30/openapi.yaml", "pets")
    specs = tools(project, "pets")
    assert specs["create_pet"]["errors"] == ["CONFLICT", "GONE", "NOT_IMPLEMENTED"]
    assert specs["get_pet"]["errors"] == ["NOT_FOUND", "NOT_IMPLEMENTED"]
    catalogue = yaml.safe_load((project / "specs/errors.yaml").read_text())["codes"]
    assert catalogue["GONE"] == {
        "status": 410,
        "retryable": False,
        "title": "Gone",
        "description": "The store is closed for good.",
    }
    assert done.report is not None and done.report.new_codes == ["GONE (410)"]
    report = (project / "specs/pets/IMPORT-REPORT.md").read_text()
    assert "the error body schema of 404" in report
    assert "the default response has no single status" in report


def test_examples_are_kept_only_when_they_validate(project: Path) -> None:
    run(project, "petstore30/openapi.yaml", "pets")
    run(project, "library31.json", "library")
    pets = tools(project, "pets")
    assert pets["list_pets"]["examples"] == [
        {"name": "example", "input": {"limit": 2}, "output": {"items": [{"id": 1, "name": "Rex", "tag": None}]}}
    ]
    assert pets["create_pet"]["examples"] == [
        {"name": "rex", "input": {"name": "Rex"}, "output": {"location": "/pets/1", "id": 1, "name": "Rex"}}
    ]
    assert "examples" not in pets["tag_pets"]  # the path parameter has no example value
    assert "examples" not in tools(project, "library")["update_book"]
    report = (project / "specs/library/IMPORT-REPORT.md").read_text()
    assert "example 'example': its output does not fit the tool's schema (/year:" in report
    assert (
        "example(s) nameless: no request or response example to pair with"
        in (project / "specs/pets/IMPORT-REPORT.md").read_text()
    )


def test_cookies_security_and_what_else_is_reported(project: Path) -> None:
    done = run(project, "library31.json", "library")
    service = yaml.safe_load((project / "specs/library/service.yaml").read_text())
    assert service["policy"]["scopes"] == ["library"] and "public" not in service["policy"]
    assert "http" not in service  # the routes are the document's own paths
    assert tools(project, "library")["update_book"]["http"]["path"] == "/books/{id}"
    report = (project / "specs/library/IMPORT-REPORT.md").read_text()
    assert "security schemes key (apiKey) are not carried" in report
    assert "callbacks (done)" in report
    assert done.report is not None and "details: specs/library/IMPORT-REPORT.md" in done.report.summary()
    run(project, "petstore30/openapi.yaml", "pets", base_path="/store")
    service = yaml.safe_load((project / "specs/pets/service.yaml").read_text())
    assert service["policy"]["public"] is True and service["version"] == "1.2.0"
    assert tools(project, "pets")["get_pet"]["http"]["path"] == "/store/pets/{petId}"
    assert service["http"] == {"base_path": "/store"}
    assert "cookie parameter 'session'" in (project / "specs/pets/IMPORT-REPORT.md").read_text()


def test_forward_writes_a_facade(project: Path) -> None:
    run(project, "library31.json", "library", forward="https://library.example.org/api")
    spec = tools(project, "library")["update_book"]
    assert spec["handler_input"] == spec["handler_output"] == "data"
    assert spec["mcp"]["annotations"]["openWorldHint"] is True
    assert "UPSTREAM_ERROR" in spec["errors"] and "NOT_IMPLEMENTED" not in spec["errors"]
    handlers = (project / "handlers/library/__init__.py").read_text()
    assert 'return self.upstream.call(ctx, "update_book", input)' in handlers
    assert "from kumitate.forward import Upstream" in handlers
    settings = (project / "handlers/library/settings.py").read_text()
    assert '"KUMITATE_LIBRARY_UPSTREAM_URL",\n        "https://library.example.org/api",' in settings


def test_stubs_without_forward(project: Path) -> None:
    run(project, "petstore30/openapi.yaml", "pets")
    handlers = (project / "handlers/pets/__init__.py").read_text()
    assert "def get_pet(self, input: models.GetPetInput, ctx: CallContext) -> models.GetPetOutput:" in handlers
    assert 'raise NotImplementedToolError("get_pet' in handlers


@pytest.mark.parametrize(
    ("document", "options", "message"),
    [
        ("remote.yaml", {}, "remote $ref 'https://example.org/schemas/x.json#/X' at #/paths/~1x/get/responses"),
        ("petstore30/openapi.yaml", {"base_path": "/Pets"}, "--base-path '/Pets' must look like /v1/pets"),
        ("petstore30/openapi.yaml", {"forward": "ftp://x"}, "--forward 'ftp://x' must be an http(s) URL"),
        ("missing.yaml", {}, "missing.yaml: no such file"),
    ],
)
def test_refusals_are_one_line(project: Path, document: str, options: dict[str, str], message: str) -> None:
    with pytest.raises(ImportFailed) as refused:
        run(project, document, "pets", **options)
    assert message in str(refused.value) and "\n" not in str(refused.value)
    assert not (project / "specs/pets").exists()


def test_an_existing_service_is_not_overwritten(project: Path) -> None:
    run(project, "petstore30/openapi.yaml", "pets")
    with pytest.raises(ImportFailed, match="already exists"):
        run(project, "petstore30/openapi.yaml", "pets")


@pytest.fixture
def served() -> Iterator[str]:
    """tests/codegen/importer/data/ over HTTP on a free port; its base URL."""
    with http_server(functools.partial(QuietFiles, directory=str(DATA))) as url:
        yield url


class QuietFiles(SimpleHTTPRequestHandler):
    """Files, without a log line per request."""

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


def test_a_document_by_url(project: Path, served: str) -> None:
    """A document read from an http(s) URL imports as a file does; its refs to other files would be fetches
    of other URLs, so they are refused in one line."""
    run(project, f"{served}/library31.json", "library")
    assert "update_book" in tools(project, "library")
    with pytest.raises(ImportFailed, match=r"remote \$ref '\./schemas/pet\.yaml' at .* is refused"):
        run(project, f"{served}/petstore30/openapi.yaml", "pets")


def test_an_undeclared_path_variable_is_a_required_string(project: Path, tmp_path: Path) -> None:
    document = tmp_path / "doc.yaml"
    document.write_text(
        "openapi: 3.0.0\ninfo: {title: T, version: 1.0.0}\npaths:\n  /things/{thingId}:\n"
        "    get:\n      responses: {'200': {description: ok}}\n"
    )
    run(project, str(document), "things")
    spec = tools(project, "things")["get_thing"]
    assert spec["http"]["params"] == [{"in": "path", "name": "thingId", "property": "thing_id"}]
    assert spec["input"]["required"] == ["thing_id"]


def test_a_body_property_required_but_not_declared_stays_required(project: Path, tmp_path: Path) -> None:
    """Xero Files' `Folder` requires `name` and declares `Name`: the API refuses a body without `name`, so the
    input requires it too (any value); where the body allows no other property, nothing could satisfy it."""
    document = tmp_path / "doc.yaml"
    body = (
        "{type: object, required: [name, id], properties: {Name: {type: string}, id: {type: string, readOnly: true}}}"
    )
    closed = "{type: object, additionalProperties: false, required: [name], properties: {Name: {type: string}}}"
    document.write_text(
        "openapi: 3.0.0\ninfo: {title: T, version: 1.0.0}\npaths:\n"
        f"  /folders:\n    post:\n      requestBody: {{content: {{application/json: {{schema: {body}}}}}}}\n"
        "      responses: {'200': {description: ok}}\n"
        f"  /closed:\n    post:\n      requestBody: {{content: {{application/json: {{schema: {closed}}}}}}}\n"
        "      responses: {'200': {description: ok}}\n"
    )
    run(project, str(document), "folders")
    specs = tools(project, "folders")
    assert specs["create_folder"]["input"]["required"] == ["name"]
    assert specs["create_folder"]["input"]["additionalProperties"] is True
    assert "required" not in specs["create_closed"]["input"]
    report = (project / "specs/folders/IMPORT-REPORT.md").read_text(encoding="utf-8")
    assert "requires 'name' without declaring it" in report
    assert "requires 'name', which it neither declares nor allows" in report


def test_a_one_of_no_answer_could_satisfy_is_read_as_any_of(project: Path, tmp_path: Path) -> None:
    """Supabase's `/signup` answers `oneOf: [token, user]`, both objects that require nothing: every object is
    valid against both, so as a `oneOf` the facade would refuse every real answer. One such object beside an
    object that requires `id` (openEO's summaries: statistics or a JSON Schema) is no better. Lob's bulk
    verifications answer `oneOf: [verification, error]`, the verification open and the error requiring
    `error`, which the verification does not declare: every error is valid against both; its letters are
    regular (open) or registered, which requires what a regular one does and an `extra_service` the regular
    one does not declare. Alternatives that a closed object, a type, or a property the open one declares as
    an enumeration (a discriminator) tells apart stay a `oneOf`."""
    document = tmp_path / "doc.yaml"
    document.write_text(
        "openapi: 3.0.0\ninfo: {title: T, version: 1.0.0}\npaths:\n"
        "  /signup:\n    post:\n      responses:\n        '200':\n          description: ok\n"
        "          content: {application/json: {schema: {oneOf: [{$ref: '#/components/schemas/Token'},"
        " {$ref: '#/components/schemas/User'}]}}}\n"
        "  /pick:\n    get:\n      responses:\n        '200':\n          description: ok\n"
        "          content: {application/json: {schema: {oneOf: [{$ref: '#/components/schemas/Token'},"
        " {type: object, required: [kind], properties: {kind: {enum: [user]}}}]}}}\n"
        "  /ids:\n    get:\n      responses:\n        '200':\n          description: ok\n"
        "          content: {application/json: {schema: {oneOf: [{$ref: '#/components/schemas/User'},"
        " {type: object, required: [n], properties: {n: {type: integer}}}]}}}\n"
        "  /closed:\n    get:\n      responses:\n        '200':\n          description: ok\n"
        "          content: {application/json: {schema: {oneOf: [{type: array},"
        " {type: object, additionalProperties: false, properties: {id: {type: string}}},"
        " {type: object, required: [n], properties: {n: {type: integer}}}]}}}\n"
        "  /verify:\n    get:\n      responses:\n        '200':\n          description: ok\n"
        "          content: {application/json: {schema: {oneOf: [{$ref: '#/components/schemas/User'},"
        " {type: object, required: [error], properties: {error: {type: string}}}]}}}\n"
        "  /letter:\n    get:\n      responses:\n        '200':\n          description: ok\n"
        "          content: {application/json: {schema: {oneOf: [{allOf: [{title: regular},"
        " {$ref: '#/components/schemas/Regular'}]}, {allOf: [{title: registered},"
        " {$ref: '#/components/schemas/Registered'}]}]}}}\n"
        "components:\n  schemas:\n"
        "    Color: {type: string, enum: [black, color]}\n"
        "    Base: {type: object, required: [id], properties: {id: {type: string}}}\n"
        "    Regular: {allOf: [{type: object, required: [color], properties: {color: {$ref: '#/components/schemas/Color'}}},"
        " {$ref: '#/components/schemas/Base'}]}\n"
        "    Registered: {allOf: [{type: object, required: [color, extra_service], properties: {color: {$ref:"
        " '#/components/schemas/Color'}, extra_service: {enum: [registered]}}}, {$ref: '#/components/schemas/Base'}]}\n"
        "    Token: {type: object, properties: {access_token: {type: string}, kind: {enum: [token]}}}\n"
        "    User: {type: object, properties: {id: {type: string}}}\n"
    )
    run(project, str(document), "auth")
    specs = tools(project, "auth")
    signup = json.dumps(specs["create_signup"]["output"])
    assert '"anyOf"' in signup and '"oneOf"' not in signup
    assert '"oneOf"' in json.dumps(specs["get_pick"]["output"])
    verify = json.dumps(specs["get_verify"]["output"])
    assert '"anyOf"' in verify and '"oneOf"' not in verify
    letter = json.dumps(specs["get_letter"]["output"])
    assert '"anyOf"' in letter and '"oneOf"' not in letter
    ids = json.dumps(specs["list_ids"]["output"])
    assert '"anyOf"' in ids and '"oneOf"' not in ids
    assert '"oneOf"' in json.dumps(specs["get_closed"]["output"])
    report = (project / "specs/auth/IMPORT-REPORT.md").read_text(encoding="utf-8")
    assert "4 `oneOf`(s) where an alternative is valid for every object another takes" in report


def test_an_answer_does_not_require_a_write_only_property(project: Path, tmp_path: Path) -> None:
    """The Redocly Cafe's `OrderItem` requires `menuItemId`, a write-only id: a request must send it, an
    answer never carries it. The request keeps the shared type; the output refers to its answer view, and so
    does the view of a type that holds one. An answer is not held to a name the type requires without
    declaring it either."""
    document = tmp_path / "doc.yaml"
    document.write_text(
        "openapi: 3.1.0\ninfo: {title: T, version: 1.0.0}\npaths:\n"
        "  /orders:\n    post:\n"
        "      requestBody: {content: {application/json: {schema: {$ref: '#/components/schemas/Order'}}}}\n"
        "      responses:\n        '200':\n          description: ok\n"
        "          content: {application/json: {schema: {$ref: '#/components/schemas/Order'}}}\n"
        "components:\n  schemas:\n"
        "    Order: {type: object, required: [items], properties: {items: {type: array,"
        " items: {$ref: '#/components/schemas/OrderItem'}}}}\n"
        "    OrderItem: {type: object, required: [menuItemId, quantity, name], properties: {menuItemId: {type: string,"
        " writeOnly: true}, quantity: {type: integer}, Name: {type: string}}}\n"
    )
    run(project, str(document), "cafe")
    spec = tools(project, "cafe")["create_order"]
    assert spec["output"]["$ref"].endswith("#/$defs/OrderAnswer")
    assert spec["input"]["properties"]["items"]["items"]["$ref"].endswith("#/$defs/OrderItem")
    defs = json.loads((project / "specs/cafe/types/cafe.json").read_text(encoding="utf-8"))["$defs"]
    assert defs["OrderItem"]["required"] == ["menuItemId", "quantity", "name"]
    assert defs["OrderItemAnswer"]["required"] == ["quantity"]  # `name` is undeclared (Xero Files' FileObject)
    assert defs["OrderAnswer"]["properties"]["items"]["items"] == {"$ref": "#/$defs/OrderItemAnswer"}


def test_a_parameter_whose_schema_is_an_all_of_keeps_it(project: Path, tmp_path: Path) -> None:
    """Lob's ids: a string refined by an `allOf` of a ref (its pattern) and a described string. The value
    travels in a path segment as well as a plain string does, so the parameter keeps its schema (and the
    facade refuses what the API would) instead of becoming any string; an object `allOf` still cannot."""
    document = tmp_path / "doc.yaml"
    document.write_text(
        "openapi: 3.0.0\ninfo: {title: T, version: 1.0.0}\npaths:\n  /banks/{bank_id}:\n    get:\n"
        "      parameters:\n      - {in: path, name: bank_id, required: true, schema: {$ref: '#/components/schemas/Id'}}\n"
        "      - {in: query, name: where, schema: {allOf: [{$ref: '#/components/schemas/Place'}]}}\n"
        "      responses: {'200': {description: ok}}\ncomponents:\n  schemas:\n"
        "    Id: {allOf: [{$ref: '#/components/schemas/Bare'}, {type: string, description: An id.}]}\n"
        "    Bare: {type: string, pattern: '^bank_[a-z0-9]+$'}\n"
        "    Place: {type: object, properties: {city: {type: string}}}\n"
    )
    done = run(project, str(document), "banks")
    spec = tools(project, "banks")["get_bank"]
    assert spec["input"]["properties"]["bank_id"]["$ref"] == "../types/banks.json#/$defs/Id"
    assert "where" not in spec["input"]["properties"]
    assert done.report is not None
    notes = [line for op in done.report.operations for line in op.adapted + op.dropped]
    assert not any("bank_id" in line for line in notes)
    assert any("'where'" in line for line in notes)


def test_format_url_is_read_as_uri(project: Path, tmp_path: Path) -> None:
    """`format: url` is no JSON Schema format (a validator ignores it; Prism's knows it as a URL): the import
    reads it as `uri`, which the service asserts, and says so."""
    document = tmp_path / "doc.yaml"
    document.write_text(
        "openapi: 3.0.0\ninfo: {title: T, version: 1.0.0}\npaths:\n  /apply:\n    post:\n"
        "      requestBody: {content: {application/json: {schema: {type: object, properties:"
        " {linkedin: {type: string, format: url}, site: {$ref: '#/components/schemas/Site'}}}}}}\n"
        "      responses: {'200': {description: ok}}\ncomponents:\n  schemas:\n"
        "    Site: {type: string, format: url}\n"
    )
    done = run(project, str(document), "jobs")
    spec = tools(project, "jobs")["create_apply"]
    assert spec["input"]["properties"]["linkedin"]["format"] == "uri"
    assert json.loads((project / "specs/jobs/types/jobs.json").read_text())["$defs"]["Site"]["format"] == "uri"
    assert done.report is not None
    assert any("`format: url` is no JSON Schema format" in line for line in done.report.document)


def test_an_operation_that_requires_a_body_no_tool_can_send_is_not_imported(project: Path, tmp_path: Path) -> None:
    """openEO's `PUT /files/{path}` requires an `application/octet-stream` body: a tool without it could only
    fail, so the operation is skipped and reported; one whose such body is optional is imported without it."""
    document = tmp_path / "doc.yaml"
    raw = "{content: {application/octet-stream: {schema: {type: string, format: binary}}}"
    document.write_text(
        "openapi: 3.0.2\ninfo: {title: T, version: 1.0.0}\npaths:\n  /files/{path}:\n"
        "    parameters: [{name: path, in: path, required: true, schema: {type: string}}]\n"
        f"    put:\n      requestBody: {raw}, required: true}}\n      responses: {{'200': {{description: ok}}}}\n"
        f"    post:\n      requestBody: {raw}}}\n      responses: {{'200': {{description: ok}}}}\n"
        "    get:\n      responses: {'200': {description: ok}}\n"
    )
    run(project, str(document), "files")
    assert set(tools(project, "files")) == {"create_file", "get_file"}
    report = (project / "specs/files/IMPORT-REPORT.md").read_text(encoding="utf-8")
    assert "PUT /files/{path}: its required request body is application/octet-stream only" in report


def test_a_path_parameter_in_label_or_matrix_style_is_sent_on_in_it(project: Path, tmp_path: Path) -> None:
    """ReadMe's parameter styles: a `label` path parameter is `.x` to the API, a `matrix` one `;name=x`. The
    binding names the style (the facade writes the call sent on in it); a `simple` one says nothing."""
    document = tmp_path / "doc.yaml"
    document.write_text(
        "openapi: 3.1.0\ninfo: {title: T, version: 1.0.0}\npaths:\n"
        "  /things/{a}/{b}/{c}:\n    get:\n      parameters:\n"
        "        - {in: path, name: a, required: true, style: label, schema: {type: string}}\n"
        "        - {in: path, name: b, required: true, style: matrix, explode: true, schema: {type: string}}\n"
        "        - {in: path, name: c, required: true, style: simple, schema: {type: string}}\n"
        "      responses: {'200': {description: ok}}\n"
    )
    run(project, str(document), "styles")
    (spec,) = tools(project, "styles").values()
    params = spec["http"]["params"]
    assert params == [
        {"in": "path", "name": "a", "style": "label"},
        {"in": "path", "name": "b", "style": "matrix"},
        {"in": "path", "name": "c"},
    ]
    report = (project / "specs/styles/IMPORT-REPORT.md").read_text(encoding="utf-8")
    assert "serialised as kumitate does" not in report


def test_a_form_field_in_another_style_than_the_default_is_listed_as_not_carried(project: Path, tmp_path: Path) -> None:
    """The facade sends a form body in OpenAPI's default encoding (ReadMe's parameter styles name
    `pipeDelimited` and non-exploded `form` fields): each field styled otherwise is listed as not carried."""
    document = tmp_path / "doc.yaml"
    document.write_text(
        "openapi: 3.1.0\ninfo: {title: T, version: 1.0.0}\npaths:\n"
        "  /form:\n    post:\n      requestBody:\n        content:\n          multipart/form-data:\n"
        "            schema: {type: object, properties: {a: {type: array, items: {type: string}},"
        " b: {type: array, items: {type: string}}, c: {type: string}}}\n"
        "            encoding: {a: {style: pipeDelimited}, b: {style: form, explode: false}, c: {style: form}}\n"
        "      responses: {'200': {description: ok}}\n"
    )
    run(project, str(document), "forms")
    report = (project / "specs/forms/IMPORT-REPORT.md").read_text(encoding="utf-8")
    assert "field 'a' (style 'pipeDelimited') goes as OpenAPI's default form encoding" in report
    assert "field 'b' (form style, not exploded) goes as" in report
    assert "field 'c'" not in report


def test_a_deep_object_query_parameter_keeps_its_style_only_for_an_object(project: Path, tmp_path: Path) -> None:
    """`style: deepObject` on a query object is carried (read and sent as `range[gt]=1`); on a text, which
    OpenAPI gives no meaning, the parameter travels as kumitate sends one, and the report says so."""
    document = tmp_path / "doc.yaml"
    document.write_text(
        "openapi: 3.0.0\ninfo: {title: T, version: 1.0.0}\npaths:\n  /things:\n    get:\n      parameters:\n"
        "        - {name: range, in: query, style: deepObject, explode: true,"
        " schema: {type: object, properties: {gt: {type: integer}}}}\n"
        "        - {name: word, in: query, style: deepObject, schema: {type: string}}\n"
        "      responses: {'200': {description: ok}}\n"
    )
    run(project, str(document), "things")
    params = tools(project, "things")["list_things"]["http"]["params"]
    assert params == [{"in": "query", "name": "range", "style": "deepObject"}, {"in": "query", "name": "word"}]
    report = (project / "specs/things/IMPORT-REPORT.md").read_text(encoding="utf-8")
    assert "parameter 'word' is serialised as kumitate does" in report
    assert "'range'" not in report
