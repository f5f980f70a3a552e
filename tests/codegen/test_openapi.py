"""generated/openapi.json documents every header the HTTP wire uses, and the live server keeps to it."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import jsonschema
import pytest

from codegen import naming, openapi, specs
from tests.conftest import REPO, LiveServer

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
        if op.get("security"):
            assert list(op["security"][0]) == ["bearerAuth"]
    assert saw_429, "a rate-limited service documents its 429"
    assert doc["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"


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
    body = _validator(doc["components"]["schemas"]["ErrorBody"])
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
    with_examples = 0
    for tool in spec_tree.default_tools():
        content = doc["paths"][tool.http_path][tool.http_method.lower()]["responses"]["200"]["content"]
        examples = content["application/json"].get("examples", {})
        wanted = [ex for ex in tool.examples if ex.error is None and ex.output is not None]
        assert sorted(examples) == sorted(ex.name for ex in wanted), tool.name
        output = _validator(tool.output_schema)
        for ex in wanted:
            assert examples[ex.name]["value"] == ex.output
            if ex.match == "exact":
                output.validate(ex.output)
        with_examples += bool(examples)
    assert with_examples >= len(spec_tree.default_tools()) // 2
