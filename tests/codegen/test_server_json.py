"""generated/server.json and the server card (codegen/server_json.py): the MCP registry's schema
accepts the entry, what it says comes from the spec, and the server serves both at well-known paths."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from codegen import server_json
from codegen.specs import SpecTree
from kumitate.transports.published import SERVER_CARD, SERVER_JSON
from tests.conftest import serve_in_process

REPO = Path(__file__).resolve().parents[2]
VENDORED_SHA256 = "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0"


def _registry_errors(document: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft7Validator(server_json.schema(), format_checker=jsonschema.FormatChecker())
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]


def test_the_vendored_schema_is_the_registry_s_2025_12_11_one_unchanged() -> None:
    raw = server_json.SCHEMA_PATH.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == VENDORED_SHA256  # replace file, pin and SCHEMA_URL together
    assert server_json.schema()["$id"] == server_json.SCHEMA_URL


def test_the_generated_server_json_is_valid_for_the_registry_and_current(spec_tree: SpecTree) -> None:
    on_disk = (REPO / server_json.SERVER_JSON).read_text(encoding="utf-8")
    assert on_disk == server_json.render(spec_tree)[server_json.SERVER_JSON]  # also codegen --check's
    document = json.loads(on_disk)
    assert _registry_errors(document) == []
    assert document["$schema"] == server_json.SCHEMA_URL


def test_the_schema_check_can_fail(spec_tree: SpecTree) -> None:
    document, _ = server_json.build(spec_tree)
    document["description"] = "x" * 101
    document["remotes"][0]["url"] = "/mcp"
    errors = _registry_errors(document)
    assert any("description" in e for e in errors) and any("remotes" in e for e in errors)


def test_names_versions_transports_tools_and_scopes_come_from_the_spec(spec_tree: SpecTree) -> None:
    document, card = server_json.build(spec_tree)
    assert (document["name"], document["version"]) == ("local/kumitate", "0.1.0")  # pyproject's [project]
    package = document["packages"][0]
    assert package["transport"] == {"type": "stdio"}
    assert [a.get("value", a.get("name")) for a in package["packageArguments"]] == ["mcp", "--stdio"]
    paths = [r["url"].removeprefix("https://{host}") for r in document["remotes"]]
    services = [svc.name for svc in spec_tree.services]
    assert paths == ["/mcp", *(f"/mcp/{n}" for n in services), *(f"/mcp/{t.name}" for t in spec_tree.toolsets)]
    endpoints = {e["path"]: e for e in document["_meta"][server_json.PUBLISHER_META]["endpoints"]}
    for svc in spec_tree.services:
        assert endpoints[f"/mcp/{svc.name}"]["tools"] == [t.name for t in svc.tools]
        assert endpoints[f"/mcp/{svc.name}"]["scopes"] == sorted(svc.policy.get("scopes") or [])
    opt_in = {t.name for svc in spec_tree.services if svc.opt_in for t in svc.tools}
    assert opt_in and not opt_in & set(endpoints["/mcp"]["tools"])  # /mcp serves no opt-in service
    assert {t["name"] for t in card["tools"]} == {t.name for t in spec_tree.all_tools()}
    assert card["name"] == document["name"] and card["registry"]["server_json"] == SERVER_JSON


@pytest.mark.anyio
async def test_both_documents_are_served_at_their_well_known_paths(tmp_path: Path) -> None:
    async with serve_in_process(tmp_path / "data") as app:
        for path, name in ((SERVER_JSON, server_json.SERVER_JSON), (SERVER_CARD, server_json.SERVER_CARD)):
            answer = await app.http.get(path)
            assert answer.status_code == 200, (path, answer.text)
            assert answer.headers["content-type"].startswith("application/json")
            assert answer.json() == json.loads((REPO / name).read_text(encoding="utf-8"))
