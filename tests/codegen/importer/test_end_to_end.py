"""`kumitate init`, then `kumitate import openapi` (stubs and a facade), then what a team runs next: the
project's generator drift check and lint, and, for a facade, the served tools answering as the API did."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import shutil
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qsl

import httpx
import pytest
from fastmcp import Client

from codegen.__main__ import main as codegen_main
from codegen.testing import serve
from kumitate import cli
from tests.codegen.importer.conftest import DATA, http_server


def kumitate(project: Path, *argv: str) -> tuple[int, str]:
    """`kumitate <argv>` in `project`, in this process; (exit status, stdout and stderr)."""
    out = io.StringIO()
    saved = os.environ.pop("KUMITATE_PROJECT", None)
    try:
        with contextlib.chdir(project), contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            status = cli.main(list(argv))
    finally:
        if saved is not None:
            os.environ["KUMITATE_PROJECT"] = saved
    return status, out.getvalue()


@pytest.fixture(scope="module")
def initialised(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What `kumitate init` writes, once for this module."""
    root = tmp_path_factory.mktemp("init")
    status, said = kumitate(root, "init", str(root / "my_api"))
    assert status == 0, said
    return root / "my_api"


@pytest.fixture
def project(initialised: Path, tmp_path: Path) -> Path:
    """A copy of the initialised project for one test."""
    return Path(shutil.copytree(initialised, tmp_path / "my_api", symlinks=True))


def test_an_imported_api_passes_the_projects_generator_and_lint(project: Path) -> None:
    status, said = kumitate(project, "import", "openapi", str(DATA / "petstore30/openapi.yaml"), "--service", "pets")
    assert status == 0, said
    assert "imported 6 operation(s) of Pet Store (OpenAPI 3.0.3) as service 'pets'" in said
    assert "details: specs/pets/IMPORT-REPORT.md" in said
    forward = ("--forward", "https://library.example.org/api", "--base-path", "/library")
    status, said = kumitate(
        project, "import", "openapi", str(DATA / "library31.json"), "--service", "library", *forward
    )
    assert status == 0, said
    assert (project / "generated/pets/models.py").is_file() and (project / "generated/library/bindings.py").is_file()
    with contextlib.chdir(project), contextlib.redirect_stdout(io.StringIO()) as out:
        assert codegen_main(["--lint"]) == 0, out.getvalue()
        assert codegen_main(["--check"]) == 0, out.getvalue()
    status, said = kumitate(project, "import", "openapi", str(DATA / "remote.yaml"), "--service", "remote")
    assert status == 2 and said.startswith("kumitate import openapi: ") and "remote $ref" in said


class _JsonApi(BaseHTTPRequestHandler):
    """An API the facade fronts: it answers JSON, and says nothing on stderr."""

    def _answer(self, status: int, body: object = None, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        for name, value in {**(headers or {}), "Content-Length": str(len(data))}.items():
            self.send_header(name, value)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


class _PetStore(_JsonApi):
    """The API the facade fronts: a few answers of the crafted pet store, and what it was asked."""

    asked: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        """GET /api/pets/{id}: the pet, or 404 for pet 404."""
        self.asked.append(f"GET {self.path}")
        pet = self.path.rsplit("/", 1)[-1]
        self._answer(404, {"message": "no"}) if pet == "404" else self._answer(200, {"id": int(pet), "name": "Rex"})

    def do_POST(self) -> None:
        """POST /api/pets: 201 with a Location."""
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.asked.append(f"POST {self.path} {body}")
        self._answer(201, {"id": 7, "name": body["name"]}, {"Location": "/pets/7"})

    def do_DELETE(self) -> None:
        """DELETE /api/pets/{id}: 204."""
        self.asked.append(f"DELETE {self.path}")
        self._answer(204)


@pytest.fixture
def upstream() -> Iterator[str]:
    """The pet store API, served on a free port; its base URL."""
    with http_server(_PetStore, "/api") as url:
        yield url


@pytest.mark.slow
def test_a_facade_answers_over_http_as_the_api_did(project: Path, upstream: str, tmp_path: Path) -> None:
    """Imported with --forward, the service serves the API's own routes: the same paths, statuses and
    Location header, each call sent on to the API; a documented 404 is the catalogue's NOT_FOUND."""
    status, said = kumitate(
        project, "import", "openapi", str(DATA / "petstore30/openapi.yaml"), "--service", "pets", "--forward", upstream
    )
    assert status == 0, said
    _PetStore.asked.clear()
    with serve(project, tmp_path / "var") as server, httpx.Client(base_url=server.url, timeout=30) as http:
        got = http.get("/pets/3")
        assert (got.status_code, got.json()) == (200, {"id": 3, "name": "Rex"})
        created = http.post("/pets", json={"name": "Tama"})
        assert (created.status_code, created.headers["location"], created.json()) == (
            201,
            "/pets/7",
            {"id": 7, "name": "Tama"},
        )
        assert http.delete("/pets/3").status_code == 204
        missing = http.get("/pets/404")
        assert (missing.status_code, missing.json()["error"]["code"]) == (404, "NOT_FOUND")
    assert _PetStore.asked == [
        "GET /api/pets/3",
        "POST /api/pets {'name': 'Tama'}",
        "DELETE /api/pets/3",
        "GET /api/pets/404",
    ]


class _Mailer(_JsonApi):
    """A form-only API reading `to` and `metadata` in deepObject style: answers with the form it was sent."""

    def do_GET(self) -> None:
        """GET /api/letters: the query string as it came."""
        self._answer(200, {"received": self.path.partition("?")[2]})

    def do_POST(self) -> None:
        """POST /api/letters: the letter, its `received` field the urlencoded body as it came."""
        form = self.rfile.read(int(self.headers["Content-Length"])).decode()
        self._answer(200, {"id": "ltr_1", "received": f"{self.headers['Content-Type']} {form}"})


@pytest.mark.slow
def test_a_facade_reads_and_sends_deep_object_form_fields(project: Path, tmp_path: Path) -> None:
    """The API's `deepObject` form fields are the tool's `http.form_deep_objects`: the facade reads
    `to[name]=...` into the object, documents the style, and sends the API the style it reads, whether the
    call came as a form or over MCP; the object as one field and by its fields at once is refused. A
    deepObject query parameter (`date_created[gt]=...`) is read and sent on the same way."""
    with http_server(_Mailer, "/api") as upstream:
        status, said = kumitate(
            project, "import", "openapi", str(DATA / "mailer.yaml"), "--service", "mailer", "--forward", upstream
        )
        assert status == 0, said
        assert (
            "form_deep_objects:\n  - to\n  - metadata"
            in (project / "specs/mailer/tools/letter_create.yaml").read_text()
        )
        form = "application/x-www-form-urlencoded"
        with serve(project, tmp_path / "var") as server, httpx.Client(base_url=server.url, timeout=30) as http:
            sent = http.post(
                "/letters",
                content=b"to%5Bname%5D=Harry&to%5Bfloor%5D=3&description=hi&metadata%5Bcampaign%5D=winter",
                headers={"Content-Type": form},
            )
            assert sent.status_code == 200, sent.text
            kind, _, received = sent.json()["received"].partition(" ")
            expected = [
                ("description", "hi"),
                ("metadata[campaign]", "winter"),
                ("to[floor]", "3"),
                ("to[name]", "Harry"),
            ]
            assert (kind, sorted(parse_qsl(received))) == (form, expected)
            over_mcp = asyncio.run(
                _call_over_mcp(server.url, {"to": {"name": "Harry", "floor": 3}, "description": "hi"})
            )
            assert sorted(parse_qsl(over_mcp["received"].partition(" ")[2])) == [
                ("description", "hi"),
                ("to[floor]", "3"),
                ("to[name]", "Harry"),
            ]
            by_id = http.post("/letters", data={"to": "adr_123"})
            assert by_id.json()["received"] == f"{form} to=adr_123"
            both = http.post("/letters", content=b"to=adr_123&to%5Bname%5D=Harry", headers={"Content-Type": form})
            assert (both.status_code, both.json()["error"]["code"]) == (400, "BAD_REQUEST")
            wrong = http.post("/letters", content=b"to%5Bfloor%5D=high", headers={"Content-Type": form})
            assert (wrong.status_code, wrong.json()["error"]["code"]) == (400, "BAD_REQUEST")
            document = http.get("/schema/openapi.json").json()
            encoding = document["paths"]["/letters"]["post"]["requestBody"]["content"][form]["encoding"]
            assert encoding == {n: {"style": "deepObject", "explode": True} for n in ("to", "metadata")}
            listed = http.get("/letters", params={"date_created[gt]": "2024-01-01", "limit": "5"})
            assert listed.status_code == 200, listed.text
            assert sorted(parse_qsl(listed.json()["received"])) == [("date_created[gt]", "2024-01-01"), ("limit", "5")]
            bad_date = http.get("/letters", params={"date_created[gt]": "soon"})
            assert (bad_date.status_code, bad_date.json()["error"]["code"]) == (400, "BAD_REQUEST")
            (parameter,) = [
                p for p in document["paths"]["/letters"]["get"]["parameters"] if p.get("name") == "date_created"
            ]
            assert (parameter["in"], parameter["style"], parameter["explode"]) == ("query", "deepObject", True)


async def _call_over_mcp(url: str, arguments: dict[str, Any]) -> Any:
    async with Client(f"{url}/mcp") as client:
        result = await client.call_tool("letter_create", arguments)
    return result.structured_content
