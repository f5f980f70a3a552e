"""generated/openapi.json documents every header the HTTP wire uses, and the live server keeps to it."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import referencing
import referencing.jsonschema
import yaml

from codegen import naming, openapi, openapi_lint, specs
from codegen.examples import VOLATILE
from kumitate.policies import discovery
from tests.conftest import REPO, LiveServer, serve_in_process

GOLDEN = REPO / "tests" / "fixtures" / "golden"


@pytest.fixture(scope="module")
def doc(spec_tree: specs.SpecTree) -> dict[str, Any]:
    """The repository's OpenAPI document, built once for the module (the tests only read it)."""
    return openapi.build(spec_tree)


def _deref(doc: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return node
    out: Any = doc
    for part in ref.removeprefix("#/").split("/"):
        out = out[part]
    assert isinstance(out, dict)
    return out


def _validator(schema: dict[str, Any]) -> Any:
    """`jsonschema.validate(instance, schema)` for many instances: the schema checked and compiled once."""
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _operations(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(f"{m.upper()} {p}", op) for p, item in doc["paths"].items() for m, op in item.items()]


def _header_params(doc: dict[str, Any], op: dict[str, Any]) -> set[str]:
    params = [_deref(doc, p) for p in op.get("parameters", [])]
    return {p["name"] for p in params if p["in"] == "header"}


def test_every_operation_reads_the_correlation_headers_and_idempotency_key_where_the_policy_has_it(
    doc: dict[str, Any], spec_tree: specs.SpecTree
) -> None:
    idempotent = {t.http_path for t in spec_tree.default_tools() if t.policy.get("idempotency")}
    assert idempotent, "the repository specs have a tool with policy.idempotency"
    for name, op in _operations(doc):
        headers = _header_params(doc, op)
        assert {"X-Run-Id", "X-Trace-Id", "traceparent"} <= headers, name
        assert ("Idempotency-Key" in headers) == (name.split(" ", 1)[1] in idempotent), name
    key = doc["components"]["parameters"]["IdempotencyKey"]["schema"]
    assert (key["minLength"], key["maxLength"]) == (1, 255)


def test_every_response_documents_its_headers(doc: dict[str, Any], spec_tree: specs.SpecTree) -> None:
    idempotent = {t.http_path for t in spec_tree.default_tools() if t.policy.get("idempotency")}
    saw_429 = False
    for name, op in _operations(doc):
        for status, response in op["responses"].items():
            headers = set(response["headers"])
            assert {"X-Run-Id", "X-Trace-Id", "X-Request-Duration-Ms"} <= headers, (name, status)
            assert ("Retry-After" in headers) == (status == "429"), (name, status)
            saw_429 |= status == "429"
            assert ("Idempotent-Replayed" in headers) == (name.split(" ", 1)[1] in idempotent), (name, status)
            assert "Deprecation" not in headers, "no repository tool is deprecated"
    assert saw_429, "a rate-limited service documents its 429"


def test_security_is_what_openapi_means_by_it(doc: dict[str, Any], spec_tree: specs.SpecTree) -> None:
    """Public operations say `security: []`; the others need the bearer scheme, which as an `http` scheme
    carries no scopes (OpenAPI gives scopes to OAuth2 and OpenID Connect only): they are beside it."""
    assert doc["components"]["securitySchemes"] == {"bearerAuth": openapi_bearer(doc)}
    assert doc["servers"] == [{"url": "/", "description": "The server this document is read from."}]
    by_id = {t.operation_id: t for t in spec_tree.default_tools()}
    by_id |= {r.operation_id: r for svc in spec_tree.services for r in svc.resources}
    public = 0
    for name, op in _operations(doc):
        spec = by_id.get(op["operationId"])
        if spec is not None and spec.rules.public:
            assert op["security"] == [] and openapi.SCOPES not in op, name
            public += 1
        else:
            assert op["security"] == [{"bearerAuth": []}], name
            assert op.get(openapi.SCOPES, []) == list(spec.rules.scopes if spec else []), name
    assert public >= 2, "yana's healthz and version are public"
    assert any(op.get(openapi.SCOPES) for _, op in _operations(doc))


def openapi_bearer(doc: dict[str, Any]) -> dict[str, Any]:
    scheme = doc["components"]["securitySchemes"]["bearerAuth"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    return scheme


def test_every_reference_names_a_component_that_is_used(doc: dict[str, Any]) -> None:
    """A `$ref` names a whole component (`#/components/<kind>/<Name>`), never a place inside one
    (generators drop what they cannot name: the Operation schema, when it pointed into ErrorBody), and
    every component is reached from some operation."""
    refs = set(openapi._refs(doc))
    for ref in refs:
        kind, name = ref.removeprefix("#/components/").split("/")
        assert ref.count("/") == 3 and name in doc["components"][kind], ref
    assert doc["components"]["schemas"]["Operation"]["properties"]["error"] == {
        "$ref": "#/components/schemas/ErrorDetail"
    }
    for kind in ("schemas", "parameters", "examples", "headers"):
        for name in doc["components"][kind]:
            assert f"#/components/{kind}/{name}" in refs, f"unused {kind}/{name}"


def test_a_deprecated_tool_documents_deprecation_and_sunset() -> None:
    doc = json.loads((GOLDEN / "deprecation" / "expected" / "generated" / "openapi.json").read_text(encoding="utf-8"))
    ops = dict(_operations(doc))
    old = next(op for name, op in ops.items() if "old_search" in name)
    for status, response in old["responses"].items():
        assert {"Deprecation", "Sunset"} <= set(response["headers"]), status
    new = next(op for name, op in ops.items() if "new_search" in name)
    assert not any("Deprecation" in r["headers"] for r in new["responses"].values())


def _check_headers(doc: dict[str, Any], documented: dict[str, Any], got: httpx.Headers) -> None:
    for name, ref in documented.items():
        header = _deref(doc, ref)
        if name.lower() not in got:
            assert not header.get("required"), f"{name} is documented as required but missing"
            continue
        jsonschema.validate(got[name], header["schema"])


@pytest.mark.slow
def test_live_headers_follow_the_document(live_server: LiveServer) -> None:
    """A replayed idempotent call, an echoed run id and trace id (from traceparent) and the duration,
    each as the document describes them."""
    doc = httpx.get(f"{live_server.url}/schema/openapi.json").json()
    image = base64.b64encode((REPO / "data" / "yana" / "images" / "label_0001.png").read_bytes()).decode()
    body = {"image": image, "brand_name": "獺祭"}
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    headers = {"Idempotency-Key": "k-openapi-1", "X-Run-Id": "run-1", "traceparent": f"00-{trace}-00f067aa0ba902b7-01"}
    with httpx.Client(base_url=live_server.url, timeout=30) as http:
        first = http.post("/v1/ingest", json=body, headers=headers)
        again = http.post("/v1/ingest", json=body, headers=headers)
        clash = http.post("/v1/ingest", json={**body, "brand_name": "別"}, headers=headers)
    documented = doc["paths"]["/v1/ingest"]["post"]["responses"]
    assert first.status_code == again.status_code == 200, first.text
    assert "idempotent-replayed" not in first.headers and again.headers["Idempotent-Replayed"] == "true"
    assert first.headers["X-Run-Id"] == "run-1" and first.headers["X-Trace-Id"] == trace
    assert clash.status_code == 409 and clash.json()["error"]["code"] == "CONFLICT"
    for response in (first, again, clash):
        _check_headers(doc, documented[str(response.status_code)]["headers"], response.headers)


def _resolve_all(doc: dict[str, Any], node: Any, seen: tuple[str, ...] = ()) -> Any:
    """The schema with every components ref replaced by its target (siblings kept)."""
    if isinstance(node, list):
        return [_resolve_all(doc, v, seen) for v in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        assert ref not in seen, f"recursive {ref}"
        target = _resolve_all(doc, _deref(doc, node), (*seen, ref))
        return {**target, **{k: _resolve_all(doc, v, seen) for k, v in node.items() if k != "$ref"}}
    return {k: _resolve_all(doc, v, seen) for k, v in node.items()}


def test_schemas_are_named_components_that_resolve_to_the_spec_schemas(
    doc: dict[str, Any], spec_tree: specs.SpecTree
) -> None:
    for tool in spec_tree.default_tools():
        op = doc["paths"][tool.http_path][tool.http_method.lower()]
        body = op["requestBody"]["content"]["application/json"]["schema"]
        out = op["responses"]["200"]["content"]["application/json"]["schema"]
        assert body == {"$ref": f"#/components/schemas/{naming.input_model(tool.name)}"}
        assert out == {"$ref": f"#/components/schemas/{naming.output_model(tool.name)}"}
        assert _resolve_all(doc, body) == tool.input_schema, tool.name
        assert _resolve_all(doc, out) == tool.output_schema, tool.name
    # JSON bodies are refs (forms keep their own inline schema); a shared type is one component, used by ref
    for _, op in _operations(doc):
        bodies = [op.get("requestBody", {}).get("content", {}).get("application/json")]
        bodies += [r["content"].get("application/json") for r in op["responses"].values()]
        assert all(set(b["schema"]) == {"$ref"} for b in bodies if b and b["schema"]), op["operationId"]
    assert json.dumps(doc["components"]["schemas"]).count('"#/components/schemas/AttendanceRule"') >= 2


def test_error_examples_show_the_catalogue_codes_of_their_status(
    doc: dict[str, Any], spec_tree: specs.SpecTree
) -> None:
    body = _component_validator(doc, "ErrorBody")
    for name, op in _operations(doc):
        for status, response in op["responses"].items():
            if status in ("200", "202"):  # success: the result, or a task's operation
                continue
            examples = response["content"]["application/json"]["examples"]
            assert examples, (name, status)
            for code, example in examples.items():
                value = _deref(doc, example)["value"]
                assert value["error"]["code"] == code and spec_tree.errors[code].status == int(status), (name, code)
                body.validate(value)
    spec_error = doc["paths"]["/v1/stays/summarize_stays"]["post"]["responses"]["400"]["content"]
    assert "unknown granularity" in spec_error["application/json"]["examples"]["BAD_REQUEST"]["summary"]


def test_success_examples_come_from_the_spec_and_match_the_output_schema(
    doc: dict[str, Any], spec_tree: specs.SpecTree
) -> None:
    """Every spec success example is in the document: as a response example when it is a whole result
    (what linters check against the schema), else in the response's description, its left-out fields
    named. A partial one is completed only with the volatile fields its test ignores (run_id, ...)."""
    with_examples = partial = 0
    for tool in spec_tree.default_tools():
        response = doc["paths"][tool.http_path][tool.http_method.lower()]["responses"]["200"]
        examples = response["content"]["application/json"].get("examples", {})
        wanted = [ex for ex in tool.examples if ex.error is None and ex.output is not None]
        assert set(examples) <= {ex.name for ex in wanted}, tool.name
        output = _component_validator(doc, naming.output_model(tool.name))
        for ex in wanted:
            if ex.match == "exact":
                assert examples[ex.name]["value"] == ex.output, (tool.name, ex.name)
            if ex.name in examples:
                value = examples[ex.name]["value"]
                output.validate(value)
                filled = {k: v for k, v in value.items() if k not in ex.output}
                assert set(filled) <= VOLATILE and {**value, **ex.output} == value, (tool.name, ex.name)
            else:
                assert ex.match == "subset" and f"**{ex.name}**" in response["description"], (tool.name, ex.name)
                assert not output.is_valid(ex.output), (tool.name, ex.name)
                partial += 1
        with_examples += bool(examples)
    assert with_examples >= 5, "attendance, stays, analytics' drop_materialized: whole examples"
    export = doc["paths"]["/v1/analytics/export"]["post"]["responses"]["200"]["description"]
    assert "**five_minutes_of_one_run**" in export and "`handle`" in export and "`expires_at`" in export
    assert partial >= 1


def test_every_example_in_the_document_validates_against_its_schema(doc: dict[str, Any]) -> None:
    """What Redocly's no-invalid-media-type-examples and Spectral's oas3-valid-media-example check, here
    without npm: each example of a JSON body (request or response, inline or a component) is valid."""
    checked = 0
    for name, op in _operations(doc):
        media = list(op.get("requestBody", {}).get("content", {}).items())
        media += [item for response in op["responses"].values() for item in response.get("content", {}).items()]
        for ctype, content in media:
            if "examples" not in content:
                continue
            validator = _validator_in(doc, content["schema"])
            for example_name, example in content["examples"].items():
                errors = list(validator.iter_errors(_deref(doc, example)["value"]))
                assert not errors, (name, ctype, example_name, [e.message for e in errors[:3]])
                checked += 1
    assert checked > 100


def _validator_in(doc: dict[str, Any], schema: dict[str, Any]) -> Any:
    """A validator of `schema`, its `#/components/...` refs resolved in `doc`."""
    resource = referencing.Resource.from_contents(doc, default_specification=referencing.jsonschema.DRAFT202012)
    registry: referencing.Registry[Any] = referencing.Registry().with_resource("urn:openapi", resource)
    root = {"$ref": "urn:openapi#" + schema["$ref"].removeprefix("#")} if "$ref" in schema else schema
    return jsonschema.Draft202012Validator(root, registry=registry)


def _component_validator(doc: dict[str, Any], name: str) -> Any:
    return _validator_in(doc, {"$ref": f"#/components/schemas/{name}"})


ISSUER = "https://login.example.org/realms/kumitate"


@pytest.mark.anyio
async def test_the_served_document_adds_the_identity_provider_and_the_public_url(
    tmp_path: Path, seeded_data_dir: Path
) -> None:
    """Served with an issuer, every operation that needs a token also takes the provider's, with its
    scopes on an openIdConnect scheme (the scheme that carries them); the public URL is the server.
    Without either, the served bytes are generated/openapi.json's."""
    generated = (REPO / "generated" / "openapi.json").read_bytes()
    async with serve_in_process(tmp_path / "plain", seeded_data_dir) as plain:
        assert (await plain.http.get("/schema/openapi.json")).content == generated
    env = {"KUMITATE_OAUTH_ISSUER": ISSUER + "/", "KUMITATE_OAUTH_AUDIENCE": "kumitate"}
    env["KUMITATE_PUBLIC_URL"] = "https://tools.example.org/"
    async with serve_in_process(tmp_path / "oidc", seeded_data_dir, **env) as app:
        served = (await app.http.get("/schema/openapi.json")).json()
    doc = json.loads(generated)
    assert served["servers"] == [{"url": "https://tools.example.org", "description": "KUMITATE_PUBLIC_URL"}]
    schemes = served["components"]["securitySchemes"]
    assert schemes["bearerAuth"] == doc["components"]["securitySchemes"]["bearerAuth"]
    oidc = schemes[discovery.OPENAPI_OIDC]
    assert (oidc["type"], oidc["openIdConnectUrl"]) == ("openIdConnect", f"{ISSUER}/.well-known/openid-configuration")
    with_scopes = 0
    for (name, op), (_, generated_op) in zip(_operations(served), _operations(doc), strict=True):
        if generated_op["security"] == []:
            assert op["security"] == [], name  # public stays public
            continue
        scopes = generated_op.get(openapi.SCOPES, [])
        assert op["security"] == [{"bearerAuth": []}, {discovery.OPENAPI_OIDC: scopes}], name
        with_scopes += bool(scopes)
    assert with_scopes > 10
    assert served["paths"].keys() == doc["paths"].keys()


def test_served_openapi_leaves_a_document_without_configuration_as_it_is() -> None:
    doc = {"servers": [{"url": "/"}], "paths": {"/x": {"get": {"security": [{"bearerAuth": []}]}}}}
    assert discovery.served_openapi(doc, None, None) is doc
    assert discovery.served_openapi(doc, "  ", None) is doc
    only_url = discovery.served_openapi(doc, None, "https://h")
    assert only_url["servers"][0]["url"] == "https://h" and only_url["paths"] == doc["paths"]
    assert doc["servers"] == [{"url": "/"}]  # the input is not modified


def test_the_linter_configs_are_a_new_projects_and_fail_on_any_unlisted_warning(tmp_path: Path) -> None:
    """This repository allows exactly what a new project allows (`kumitate init` writes the same files),
    and a finding not listed there fails `make lint-openapi`: Redocly's strict set makes its warnings
    errors, Spectral fails from warnings up; a listed one is a warning (Redocly) or info (Spectral)."""
    for name, default in openapi_lint.DEFAULT_CONFIGS.items():
        assert (REPO / name).read_text(encoding="utf-8") == default.read_text(encoding="utf-8"), name
    assert openapi_lint.configs_of(tmp_path) == openapi_lint.DEFAULT_CONFIGS
    redocly = yaml.safe_load((REPO / openapi_lint.REDOCLY_CONFIG).read_text(encoding="utf-8"))
    spectral = yaml.safe_load((REPO / openapi_lint.SPECTRAL_CONFIG).read_text(encoding="utf-8"))
    assert redocly["extends"] == ["recommended-strict"] and set(redocly["rules"].values()) == {"warn"}
    assert spectral["extends"] == ["spectral:oas"] and set(spectral["rules"].values()) == {"info"}
    commands = openapi_lint.commands(tmp_path, tmp_path / "openapi.json", openapi_lint.configs_of(REPO))
    assert "--fail-severity=warn" in commands["spectral"]
    assert str(REPO / openapi_lint.REDOCLY_CONFIG) in commands["redocly"]
