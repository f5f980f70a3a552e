"""The import proof's harness on one real document of the corpus (make import-proof runs all 24): a facade
of the Redocly museum API, served for real in front of Prism, passes every step; and the harness is no
rubber stamp: a facade that forwards to the wrong paths is caught by the stub, and a breaking change
proof.yaml does not explain fails the differ step."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from codegen import import_proof
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


def test_the_generating_stub_answers_no_write_only_property_even_behind_a_ref(tmp_path: Path) -> None:
    """Prism strips `writeOnly` properties from the answer schema it starts from only, not behind a `$ref`
    (memos' `User.password` in `GetCurrentUserResponse`): the stub's answers name a copy without them,
    while the request that sends the password is judged by the original schema."""
    user = {
        "type": "object",
        "required": ["name", "password"],
        "properties": {"name": {"type": "string"}, "password": {"type": "string", "writeOnly": True}},
    }
    document = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/me": {"get": {"responses": {"200": _answer({"$ref": "#/components/schemas/Me"})}}},
            "/users": {
                "post": {
                    "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/User"}}}},
                    "responses": {"200": _answer({"$ref": "#/components/schemas/User"})},
                }
            },
        },
        "components": {
            "schemas": {
                "User": user,
                "Me": {"type": "object", "properties": {"user": {"$ref": "#/components/schemas/User"}}},
                "Plain": {"type": "object", "properties": {"id": {"type": "string"}}},
            }
        },
    }
    entry = tmp_path / "openapi.json"
    entry.write_text(json.dumps(document), encoding="utf-8")
    import_proof.stub_document(entry, tmp_path / "stub.json", dynamic=True)
    stub = json.loads((tmp_path / "stub.json").read_text(encoding="utf-8"))
    schemas = stub["components"]["schemas"]
    assert schemas["User"] == user and "Plain__readable" not in schemas
    assert schemas["User__readable"] == {
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string"}},
    }
    assert schemas["Me__readable"]["properties"]["user"] == {"$ref": "#/components/schemas/User__readable"}
    me = stub["paths"]["/me"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert me == {"$ref": "#/components/schemas/Me__readable"}
    post = stub["paths"]["/users"]["post"]
    assert post["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/User"}
    import_proof.stub_document(entry, tmp_path / "static.json")
    assert json.loads((tmp_path / "static.json").read_text(encoding="utf-8"))["components"] == document["components"]


def _answer(schema: dict[str, object]) -> dict[str, object]:
    return {"description": "ok", "content": {"application/json": {"schema": schema}}}
