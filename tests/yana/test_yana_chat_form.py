"""Issue 35, item 1: /v1/chat keeps form compatibility (seed 001: 「JSON; Form互換も維持」).

A form cannot nest, so a form client sends the filter fields flat, as duo-talk's legacy form path
(`SpeakerAHttpProvider._call_legacy`) does: `category`/`region` beside user_text, use_rag ("true"/"false")
and top_k. They become `filters` (spec: `http.form_flatten: [filters]`); JSON bodies stay strict. The same
call over MCP, with `filters` nested as MCP arguments are, gives the same answer.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import pytest
from fastmcp import Client

from kumitate.client import mcp_result_body
from kumitate.transports.mcp import build_server
from tests.conftest import InProcessApp

pytestmark = pytest.mark.anyio

FORM = {"user_text": "小樽のお酒", "use_rag": "true", "top_k": "3", "category": "sake", "region": "小樽"}
"""The issue's body: user_text=小樽のお酒&use_rag=true&top_k=3&category=sake&region=小樽"""
ARGUMENTS = {"user_text": "小樽のお酒", "use_rag": True, "top_k": 3, "filters": {"category": "sake", "region": "小樽"}}
URLENCODED = {"Content-Type": "application/x-www-form-urlencoded"}


def _same_answer(body: dict[str, Any], other: dict[str, Any]) -> None:
    keys = ("reply", "hits", "llm", "rag_hit_count", "warnings")
    assert {k: body[k] for k in keys} == {k: other[k] for k in keys}


async def _over_mcp(app: InProcessApp, arguments: dict[str, Any]) -> dict[str, Any]:
    async with Client(build_server(app.runtime, ["yana"])) as client:
        result = await client.call_tool("chat", arguments)
    assert result.structured_content is not None
    return result.structured_content


async def test_the_issues_form_body_becomes_filters(in_process_app: InProcessApp) -> None:
    response = await in_process_app.http.post("/v1/chat", content=urlencode(FORM), headers=URLENCODED)
    assert response.status_code == 200, response.text
    body = response.json()
    assert 1 <= body["rag_hit_count"] <= 3 and body["hits"]
    assert all(h["category"] == "sake" and "小樽" in h["region"] for h in body["hits"]), body["hits"]
    as_json = await in_process_app.http.post("/v1/chat", json=ARGUMENTS)
    assert as_json.status_code == 200, as_json.text
    _same_answer(body, as_json.json())
    _same_answer(body, await _over_mcp(in_process_app, ARGUMENTS))


async def test_the_filters_narrow_what_an_unfiltered_form_finds(in_process_app: InProcessApp) -> None:
    """Without the flat fields the same text is not held to 小樽: the fields do reach the search."""
    juice = await in_process_app.http.post("/v1/chat", data={**FORM, "category": "juice"})
    assert juice.status_code == 200, juice.text
    assert all(h["category"] == "juice" for h in juice.json()["hits"])
    assert juice.json()["hits"] != (await in_process_app.http.post("/v1/chat", data=FORM)).json()["hits"]


async def test_multipart_and_brewery_too(in_process_app: InProcessApp) -> None:
    fields = {"user_text": "お酒", "top_k": "3", "brewery": "旭酒造"}
    multipart = {name: (None, value.encode()) for name, value in fields.items()}  # fields, no file: multipart
    response = await in_process_app.http.post("/v1/chat", files=multipart)
    assert response.request.headers["content-type"].startswith("multipart/form-data")
    assert response.status_code == 200, response.text
    hits = response.json()["hits"]
    assert hits and all(h["brewery"] == "旭酒造" for h in hits)
    mcp = await _over_mcp(in_process_app, {"user_text": "お酒", "top_k": 3, "filters": {"brewery": "旭酒造"}})
    assert mcp["hits"] == hits


async def test_json_stays_strict(in_process_app: InProcessApp) -> None:
    flat = {"user_text": "小樽のお酒", "use_rag": True, "top_k": 3, "category": "sake", "region": "小樽"}
    response = await in_process_app.http.post("/v1/chat", json=flat)
    assert response.status_code == 400 and response.json()["error"]["code"] == "BAD_REQUEST"
    assert "category" in response.json()["error"]["message"]
    async with Client(build_server(in_process_app.runtime, ["yana"])) as client:
        result = await client.call_tool("chat", flat, raise_on_error=False)
    assert result.is_error and result.structured_content is None
    assert mcp_result_body(result)["error"]["code"] == "BAD_REQUEST"


async def test_flat_fields_and_a_json_filters_field_together_are_refused(in_process_app: InProcessApp) -> None:
    both = {**FORM, "filters": json.dumps({"category": "juice"})}
    response = await in_process_app.http.post("/v1/chat", data=both)
    assert response.status_code == 400, response.text
    message = response.json()["error"]["message"]
    assert all(name in message for name in ("category", "region", "brewery", "not both")), message
    whole = {k: v for k, v in both.items() if k not in ("category", "region")}
    assert (await in_process_app.http.post("/v1/chat", data=whole)).status_code == 200


async def test_a_search_form_takes_the_same_flat_fields(in_process_app: InProcessApp) -> None:
    response = await in_process_app.http.post(
        "/v1/search", data={"query_text": "", "category": "sake", "region": "小樽"}
    )
    assert response.status_code == 200, response.text
    hits = response.json()["hits"]
    assert hits and all("小樽" in h["region"] for h in hits)


async def test_openapi_documents_the_form_shape(in_process_app: InProcessApp) -> None:
    document = (await in_process_app.http.get("/schema/openapi.json")).json()
    content = document["paths"]["/v1/chat"]["post"]["requestBody"]["content"]
    for media in ("application/x-www-form-urlencoded", "multipart/form-data"):
        form = content[media]["schema"]
        assert {"category", "region", "brewery", "filters"} <= set(form["properties"])
        assert {"required": ["category", "filters"]} in form["not"]["anyOf"]
    json_schema = json.dumps(content["application/json"]["schema"])
    assert "category" not in json_schema  # a $ref to ChatInput: filters nested, nothing flat
