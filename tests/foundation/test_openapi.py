"""generated/openapi.json documents every header the HTTP wire uses, and the live server keeps to it."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import jsonschema
import pytest

from codegen import openapi, specs
from tests.conftest import REPO, LiveServer

GOLDEN = REPO / "tests" / "fixtures" / "golden"


def _doc() -> dict[str, Any]:
    return openapi.build(specs.load(REPO / "specs"))


def _deref(doc: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return node
    out: Any = doc
    for part in ref.removeprefix("#/").split("/"):
        out = out[part]
    assert isinstance(out, dict)
    return out


def _operations(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(f"{m.upper()} {p}", op) for p, item in doc["paths"].items() for m, op in item.items()]


def _header_params(doc: dict[str, Any], op: dict[str, Any]) -> set[str]:
    params = [_deref(doc, p) for p in op.get("parameters", [])]
    return {p["name"] for p in params if p["in"] == "header"}


def test_every_operation_reads_the_correlation_headers_and_idempotency_key_where_the_policy_has_it() -> None:
    doc = _doc()
    tree = specs.load(REPO / "specs")
    idempotent = {t.http_path for t in tree.all_tools() if t.policy.get("idempotency")}
    assert idempotent, "the repository specs have a tool with policy.idempotency"
    for name, op in _operations(doc):
        headers = _header_params(doc, op)
        assert {"X-Run-Id", "X-Trace-Id", "traceparent"} <= headers, name
        assert ("Idempotency-Key" in headers) == (name.split(" ", 1)[1] in idempotent), name
    key = doc["components"]["parameters"]["IdempotencyKey"]["schema"]
    assert (key["minLength"], key["maxLength"]) == (1, 255)


def test_every_response_documents_its_headers() -> None:
    doc = _doc()
    tree = specs.load(REPO / "specs")
    idempotent = {t.http_path for t in tree.all_tools() if t.policy.get("idempotency")}
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
