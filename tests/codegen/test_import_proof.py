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
    with import_proof.prism(stub, tmp_path / "prism.log") as url:
        answers = [httpx.get(f"{url}/country", timeout=10) for _ in range(2)]
    assert [answer.json() for answer in answers] == ["NOWHERE", "NOWHERE"]
    assert "\\u2019" in answers[0].headers["sl-violations"]


def test_the_generating_stub_makes_up_a_url_where_the_document_asks_one(tmp_path: Path) -> None:
    """Prism asserts `format: url` but its generator makes up lorem text for it: the generating stub's copy
    asks faker's URLs there; the static stub's copy is the document's."""
    entry = import_proof.CORPUS / "readme-api/readme.json"
    import_proof.stub_document(entry, tmp_path / "dynamic.json", dynamic=True)
    import_proof.stub_document(entry, tmp_path / "static.json")
    dynamic = (tmp_path / "dynamic.json").read_text()
    assert dynamic.count('"format": "url"') == dynamic.count('"x-faker": "internet.url"') > 0
    assert "x-faker" not in (tmp_path / "static.json").read_text()


def test_the_stub_answers_an_operation_that_documents_no_answer(tmp_path: Path) -> None:
    """Prism answers 500 where an operation has no `responses` (and the facade's breaker opens): the stub's
    copy gives each such operation a bodiless 200, what the import reads it as answering."""
    entry = import_proof.CORPUS / "readme-parameters-style/parameters-style.json"
    import_proof.stub_document(entry, tmp_path / "stub.json")
    paths = json.loads((tmp_path / "stub.json").read_text())["paths"]
    operations = [op for item in paths.values() for op in item.values() if isinstance(op, dict)]
    assert operations and all(list(op["responses"]) == ["200"] for op in operations)
