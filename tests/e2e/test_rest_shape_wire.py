"""A REST-shaped service served for real (issue 47): tests/fixtures/rest_project generated into a copy,
served by uvicorn, every tool called over HTTP as its spec spreads it (path, query, header, body, 201 with
Location, 204) and over MCP with the one flat input, the same data both ways."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client

from kumitate.client import mcp_result_body
from tests.conftest import REPO, LiveServer, server_env, start_server, stop_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
FIXTURE = REPO / "tests/fixtures/rest_project"
SATO = {"isbn": "9784101001012", "borrower": "Sato"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("rest") / "project"
    shutil.copytree(FIXTURE, root)
    env = server_env(root / "var", KUMITATE_PROJECT=str(root))
    done = subprocess.run([sys.executable, "-m", "codegen"], cwd=root, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    server = start_server(root / "var", root / "server.log", cwd=root, KUMITATE_PROJECT=str(root))
    yield server
    stop_server(server)


@pytest.fixture
async def http(server: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=f"{server.url}/v1/library", timeout=30) as client:
        yield client


async def test_a_create_answers_201_with_its_address_in_location(http: httpx.AsyncClient) -> None:
    response = await http.post("/loans", json=SATO, headers={"X-Branch": "east"})
    assert response.status_code == 201
    location = response.headers["location"]
    loan = response.json()
    assert location == f"/v1/library/loans/{loan['loan_id']}" and "location" not in loan
    assert loan["branch"] == "east"  # from the header
    fetched = await http.get(location.removeprefix("/v1/library"))
    assert fetched.status_code == 200 and fetched.json() == loan


async def test_query_keys_repeat_for_a_list_and_the_body_is_one_property(http: httpx.AsyncClient) -> None:
    first = (await http.post("/loans", json={"isbn": "9784000000001", "borrower": "Ito"})).json()
    second = (await http.post("/loans", json={"isbn": "9784000000002", "borrower": "Ito"})).json()
    listed = await http.get("/loans", params=[("isbn", "9784000000001"), ("isbn", "9784000000002"), ("limit", "1")])
    assert listed.status_code == 200 and listed.json() == [first]  # the body is the list itself
    both = await http.get("/loans", params={"borrower": "Ito"})
    assert both.json() == [first, second]
    renewed = await http.put(f"/loans/{second['loan_id']}", json={"days": 30})
    assert renewed.status_code == 200 and renewed.json() == {**second, "days": 30}


async def test_a_delete_answers_204_without_a_body_then_not_found(http: httpx.AsyncClient) -> None:
    loan = (await http.post("/loans", json=SATO)).json()
    gone = await http.delete(f"/loans/{loan['loan_id']}")
    assert gone.status_code == 204 and gone.content == b""
    again = await http.delete(f"/loans/{loan['loan_id']}")
    assert again.status_code == 404 and again.json()["error"]["code"] == "NOT_FOUND"


async def test_a_custom_method_shares_its_segment_with_the_resource(http: httpx.AsyncClient) -> None:
    """`GET /loans/{loan_id}:due` beside `GET`, `PUT` and `DELETE /loans/{loan_id}`: Litestar files them
    all at one segment slot (and kept only the last), and each request reaches the tool whose method and
    path it is, its variable read without the `:due`."""
    loan = (await http.post("/loans", json={**SATO, "days": 21})).json()
    due = await http.get(f"/loans/{loan['loan_id']}:due")
    assert due.status_code == 200 and due.json() == {"loan_id": loan["loan_id"], "days": 21}
    fetched = await http.get(f"/loans/{loan['loan_id']}")
    assert fetched.status_code == 200 and fetched.json() == loan
    missing = await http.get("/loans/loan-999:due")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND"
    renewed = await http.put(f"/loans/{loan['loan_id']}", json={"days": 30})  # the resource's other methods
    assert renewed.status_code == 200 and renewed.json()["days"] == 30


async def test_a_path_variable_holds_an_encoded_slash_within_its_segment(http: httpx.AsyncClient) -> None:
    """`%2F` is a `/` inside the one segment of `{loan_id}` (an OpenAPI path parameter, percent-encoded):
    the request reaches get_loan, which reads the id as sent (the handler's NOT_FOUND names it), where
    the server's decoded path has three segments and matched no route."""
    missing = await http.get("/loans/shelf%2F7%2520")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND"
    assert "no loan 'shelf/7%20'" in missing.json()["error"]["message"]
    due = await http.get("/loans/shelf%2F7:due")
    assert "no loan 'shelf/7'" in due.json()["error"]["message"]


async def test_bad_parameters_are_catalogued_errors_that_name_them(http: httpx.AsyncClient) -> None:
    wrong_type = await http.get("/loans", params={"limit": "many"})
    assert wrong_type.status_code == 400
    assert wrong_type.json()["error"]["code"] == "BAD_REQUEST" and "/limit" in wrong_type.json()["error"]["message"]
    out_of_range = await http.get("/loans", params={"limit": "0"})
    assert out_of_range.status_code == 400 and "/limit" in out_of_range.json()["error"]["message"]
    # a property that travels as a header is not taken from the body as well
    twice = await http.post("/loans", json={**SATO, "branch": "west"})
    assert twice.status_code == 400 and "header 'X-Branch'" in twice.json()["error"]["message"]
    not_object = await http.post("/loans", json=[SATO])
    assert not_object.status_code == 400 and not_object.json()["error"]["code"] == "BAD_REQUEST"


async def test_mcp_takes_the_flat_input_and_answers_the_whole_output(server: LiveServer) -> None:
    async with Client(f"{server.url}/mcp") as client:
        tools = {tool.name: tool for tool in await client.list_tools()}
        assert set(tools["list_loans"].inputSchema["properties"]) == {"borrower", "isbn", "limit", "branch"}
        created = await client.call_tool("create_loan", {**SATO, "branch": "north"}, raise_on_error=False)
        loan = mcp_result_body(created)
        assert not created.is_error and loan["location"] == f"/v1/library/loans/{loan['loan_id']}"
        listed = await client.call_tool("list_loans", {"branch": "north"}, raise_on_error=False)
        assert mcp_result_body(listed) == {"loans": [{k: v for k, v in loan.items() if k != "location"}]}
        returned = await client.call_tool("return_loan", {"loan_id": loan["loan_id"]}, raise_on_error=False)
        assert not returned.is_error and mcp_result_body(returned) == {}


async def test_the_served_document_describes_the_shape(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        document = (await client.get("/schema/openapi.json")).json()
    listing = document["paths"]["/v1/library/loans"]["get"]
    named = {(p["in"], p["name"]) for p in listing["parameters"] if "name" in p}
    assert {("query", "borrower"), ("query", "isbn"), ("query", "limit"), ("header", "X-Branch")} <= named
    assert "requestBody" not in listing
    created = document["paths"]["/v1/library/loans"]["post"]["responses"]["201"]
    assert created["headers"]["Location"]["required"] is True
    # a link into a shaped target fills its path parameter, not a body it does not have
    assert created["links"]["GetLoan"]["parameters"] == {"path.loan_id": "$response.body#/loan_id"}
    assert "requestBody" not in created["links"]["GetLoan"]
    assert "location" not in created["content"]["application/json"]["schema"]["properties"]
    deleted = document["paths"]["/v1/library/loans/{loan_id}"]["delete"]["responses"]["204"]
    assert "content" not in deleted


def _in_project(server: LiveServer, script: str) -> dict[str, Any]:
    """What `script` prints (JSON) run in the served project, its generated package imported (the
    repository's own `generated` would shadow it in this process), given the server's URL."""
    root = Path(server.log).parent
    env = server_env(root / "var-script", KUMITATE_PROJECT=str(root))
    done = subprocess.run([sys.executable, "-c", script, server.url], cwd=root, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


FORWARD_SCRIPT = """
import json, sys, time
from pathlib import Path
from kumitate.project import Project
Project.at(Path.cwd()).activate()
from generated.errors import CATALOGUE
from generated.library.bindings import SERVICE
from kumitate.context import CallContext
from kumitate.errors import ToolError
from kumitate.forward import Upstream

def ctx(deadline_s=10.0):
    return CallContext("library", "t", "direct", "r", "t", deadline=time.monotonic() + deadline_s, credentials="Bearer abc")

def outcome(upstream, tool, data, **kw):
    try:
        return upstream.call(ctx(**kw), tool, data)
    except ToolError as exc:
        return {"error": exc.code}

up = Upstream(sys.argv[1], SERVICE, CATALOGUE)
created = outcome(up, "create_loan", {"isbn": "9784999999999", "borrower": "Facade", "branch": "west"})
out = {
    "created": created,
    "listed": outcome(up, "list_loans", {"borrower": "Facade", "branch": "west"}),
    "renewed": outcome(up, "renew_loan", {"loan_id": created["loan_id"], "renewal": {"days": 3}}),
    "returned": outcome(up, "return_loan", {"loan_id": created["loan_id"]}),
    "missing": outcome(up, "get_loan", {"loan_id": created["loan_id"]}),
    "no_time": outcome(up, "get_loan", {"loan_id": "x"}, deadline_s=0.1),
    "down": outcome(Upstream("http://127.0.0.1:9", SERVICE, CATALOGUE), "get_loan", {"loan_id": "x"}),
}
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

class OffSchema(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"loan_id": 5, "secret": "kept out"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

wrong = HTTPServer(("127.0.0.1", 0), OffSchema)
threading.Thread(target=wrong.serve_forever, daemon=True).start()
try:
    Upstream(f"http://127.0.0.1:{wrong.server_port}", SERVICE, CATALOGUE).call(ctx(), "get_loan", {"loan_id": "x"})
except ToolError as exc:
    out["off_schema"] = {"error": exc.code, "message": str(exc)}
print(json.dumps(out))
"""


def test_a_facade_forwards_the_flat_input_as_the_apis_own_request(server: LiveServer) -> None:
    """kumitate.forward over the served fixture: the same shape read the other way round (the flat input
    as path, query, header and body; 201's Location, a bare list and a 204 read back into the output)."""
    out = _in_project(server, FORWARD_SCRIPT)
    created = out["created"]
    assert created["borrower"] == "Facade" and created["branch"] == "west"
    assert created["location"] == f"/v1/library/loans/{created['loan_id']}"  # from the Location header
    listed = {k: v for k, v in created.items() if k != "location"}
    assert out["listed"] == {"loans": [listed]}
    assert out["renewed"] == {**listed, "days": 3}
    assert out["returned"] == {}
    assert out["missing"] == {"error": "NOT_FOUND"}  # the API's 404, as the tool's declared code
    assert out["no_time"] == {"error": "UPSTREAM_TIMEOUT"}
    assert out["down"] == {"error": "UPSTREAM_ERROR"}
    # an answer that breaks the API's own document is the API's fault (502), not the tool's (INTERNAL)
    assert out["off_schema"]["error"] == "UPSTREAM_ERROR"
    assert out["off_schema"]["message"].startswith("the upstream API answered what its document does not allow (at ")


CLIENT_SCRIPT = """
import asyncio, json, sys
from pathlib import Path
from kumitate.project import Project
project = Project.at(Path.cwd())
project.activate()
from codegen.specs import load
from codegen.testing import examples_over_http
from generated.library.client import LibraryClient
from kumitate.errors import ToolError

client = LibraryClient.http(sys.argv[1])
created = client.create_loan({"isbn": "9784888888888", "borrower": "Typed", "branch": "south"})
listed = client.list_loans({"branch": "south"})
returned = client.return_loan({"loan_id": created.loan_id})
try:
    client.get_loan({"loan_id": created.loan_id})
    missing = None
except ToolError as exc:
    missing = exc.code
failures = asyncio.run(examples_over_http(load(project.specs), sys.argv[1]))
print(json.dumps({
    "created": created.model_dump(exclude_none=True),
    "listed": listed.model_dump(exclude_none=True),
    "returned": returned.model_dump(exclude_none=True),
    "missing": missing,
    "failures": failures,
}))
"""


def test_the_typed_client_and_the_examples_speak_the_shape(server: LiveServer) -> None:
    """The generated client and the example runner send what the route reads and read back the flat output."""
    out = _in_project(server, CLIENT_SCRIPT)
    created = out["created"]
    assert created["location"] == f"/v1/library/loans/{created['loan_id']}" and created["branch"] == "south"
    assert out["listed"] == {"loans": [{k: v for k, v in created.items() if k != "location"}]}
    assert out["returned"] == {} and out["missing"] == "NOT_FOUND"
    assert out["failures"] == []
