"""Fail closed on undeclared codes (issue 19): a handler raising a code its tool does not declare
answers INTERNAL with the catalogue's body on HTTP and MCP; its message and code never leak."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client
from litestar import Litestar

from generated.errors import ChartNotFoundError
from generated.stays.http import route_handlers
from kumitate.client import mcp_result_body
from kumitate.context import CallContext
from kumitate.errors import ToolError
from kumitate.observability import calllog
from kumitate.runtime import Runtime
from kumitate.settings import Settings
from kumitate.transports.mcp import build_server
from tests.conftest import REPO

pytestmark = pytest.mark.anyio

STAYS = {"stays": [{"code": "13101", "name": "千代田区"}]}
SECRET = "do-not-leak"


def misspelt(data: Any, ctx: CallContext) -> Any:
    raise ToolError(f"no such stay {SECRET}", code="NOT_FUOND")


def foreign(data: Any, ctx: CallContext) -> Any:
    raise ChartNotFoundError(f"no chart {SECRET}")  # a real code, but not one summarize_stays declares


@pytest.fixture(params=[misspelt, foreign])
def runtime(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Runtime]:
    calllog.configure()  # JSON lines on stderr, as a served app logs
    rt = Runtime(Settings(data_dir=tmp_path, sample_dir=REPO / "data", public_base_url="http://x"), ["stays"])
    rt.handlers["stays"].summarize_stays = request.param  # the handler misbehaves; everything else is real
    yield rt
    rt.close()


def assert_internal(body: dict[str, Any]) -> None:
    assert body["error"]["code"] == "INTERNAL"
    assert body["error"]["retryable"] is False
    assert SECRET not in json.dumps(body)
    assert "NOT_FUOND" not in json.dumps(body)
    assert body["error"]["message"] == f"internal error; quote run_id {body['run_id']}"


def assert_logged(stderr: str) -> None:
    lines = [json.loads(x) for x in stderr.splitlines() if '"undeclared_code"' in x]
    assert len(lines) == 1, stderr
    line = lines[0]
    assert line["tool"] == "summarize_stays"
    assert line["code"] in {"NOT_FUOND", "CHART_NOT_FOUND"}
    assert SECRET not in stderr


async def test_http_answers_internal(runtime: Runtime, capsys: pytest.CaptureFixture[str]) -> None:
    app = Litestar(route_handlers=route_handlers(runtime), logging_config=None)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
        response = await http.post("/v1/stays/summarize_stays", json=STAYS)
    assert response.status_code == 500
    assert_internal(response.json())
    assert_logged(capsys.readouterr().err)


async def test_mcp_answers_internal(runtime: Runtime, capsys: pytest.CaptureFixture[str]) -> None:
    async with Client(build_server(runtime)) as client:
        result = await client.call_tool("summarize_stays", STAYS, raise_on_error=False)
    assert result.is_error
    assert_internal(mcp_result_body(result) or {})
    assert_logged(capsys.readouterr().err)
