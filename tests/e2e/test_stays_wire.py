"""summarize_stays' bad-input table on the wire: HTTP and MCP give the same catalogued outcome.

Per-record problems come back inside a successful result with the valid records;
request-level problems are a BAD_REQUEST error body, identical on both transports.
In process: HTTP through httpx.ASGITransport, MCP in memory on the same app's runtime (MCP
streamable HTTP over a socket is covered by test_examples_all_transports).
"""

from __future__ import annotations

from typing import Any

import pytest
from fastmcp import Client

from kumitate.client import mcp_result_body
from kumitate.serving.admission import Admission
from kumitate.transports.mcp import build_server
from tests.conftest import REPO, InProcessApp

pytestmark = pytest.mark.anyio

GOOD = {
    "ref": "ok-1",
    "code": "13101",
    "name": "千代田区",
    "start_ts": "2024-05-01T09:00:00+09:00",
    "end_ts": "2024-05-01T10:30:00+09:00",
}
GOOD_RESULT = {"ref": "ok-1", "code": "13101", "name": "千代田区", "duration_sec": 5400}

RECORD_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("missing_code", {"name": "中央区"}, "MISSING_CODE"),
    ("empty_code", {"code": "", "name": "中央区"}, "MISSING_CODE"),
    ("ref_129_chars", {"ref": "r" * 129, "code": "13102", "name": "中央区"}, "INVALID_REF"),
    ("ref_control_chars", {"ref": "bad\u0007ref", "code": "13102", "name": "中央区"}, "INVALID_REF"),
    ("bad_timestamp", {"code": "13102", "name": "中央区", "start_ts": "yesterday"}, "INVALID_INPUT"),
    ("date_only_timestamp", {"code": "13102", "name": "中央区", "start_ts": "2024-05-01"}, "INVALID_INPUT"),
    (
        "end_before_start",
        {"code": "13102", "name": "中央区", "start_ts": "2024-05-01T12:00:00Z", "end_ts": "2024-05-01T11:00:00Z"},
        "INVALID_INPUT",
    ),
    ("code_wrong_type", {"code": 13102, "name": "中央区"}, "MISSING_CODE"),
    ("name_wrong_type", {"code": "13102", "name": ["中央区"]}, "INVALID_INPUT"),
    ("unknown_field", {"code": "13102", "name": "中央区", "lat": 35.6}, "INVALID_INPUT"),
]

REQUEST_CASES: list[tuple[str, Any]] = [
    ("stays_not_array", {"stays": {"code": "1"}}),
    ("stays_missing", {"granularity": "admin"}),
    ("bad_granularity", {"stays": [], "granularity": "city"}),
    ("bad_mode", {"stays": [], "mode": "random"}),
    ("unknown_top_level_field", {"stays": [], "verbose": True}),
    ("body_not_object", [GOOD]),
    ("record_not_object", {"stays": [GOOD, "13102"]}),
]


async def _both(app: InProcessApp, arguments: Any) -> list[tuple[str, bool, Any]]:
    response = await app.http.post("/v1/stays/summarize_stays", json=arguments)
    http_result = ("http", response.status_code == 200, response.json())
    if response.status_code != 200:
        assert response.status_code == 400
    if not isinstance(arguments, dict):  # MCP arguments are an object by protocol; the client refuses others
        return [http_result, http_result]
    async with Client(build_server(app.runtime, ["stays"])) as mcp:
        result = await mcp.call_tool("summarize_stays", arguments, raise_on_error=False)
    return [http_result, ("mcp", not result.is_error, mcp_result_body(result))]


@pytest.mark.parametrize(("case", "record", "reason"), RECORD_CASES, ids=[c[0] for c in RECORD_CASES])
async def test_bad_record_is_reported_and_the_rest_survives(
    in_process_app: InProcessApp, case: str, record: Any, reason: str
) -> None:
    for transport, ok, body in await _both(in_process_app, {"stays": [GOOD, record, GOOD]}):
        assert ok, (transport, body)
        assert [e["reason"] for e in body["errors"]] == [reason], (transport, body["errors"])
        assert body["errors"][0]["index"] == 1
        valid = [r for r in body["results"] if r.get("ref") == "ok-1"]
        assert valid == [GOOD_RESULT, GOOD_RESULT], transport
        if reason == "INVALID_REF":  # the record is kept, its ref dropped (and never echoed)
            assert any(r["code"] == "13102" and "ref" not in r for r in body["results"])
            assert "bad\u0007ref" not in str(body) and "r" * 129 not in str(body)


@pytest.mark.parametrize(("case", "arguments"), REQUEST_CASES, ids=[c[0] for c in REQUEST_CASES])
async def test_bad_request_gets_the_same_error_body_on_both_transports(
    in_process_app: InProcessApp, case: str, arguments: Any
) -> None:
    results = await _both(in_process_app, arguments)
    for transport, ok, body in results:
        assert not ok, transport
        assert set(body) == {"error", "run_id", "trace_id"}
        assert body["error"]["code"] == "BAD_REQUEST"
        assert body["error"]["retryable"] is False
        assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert results[0][2]["error"] == results[1][2]["error"]


async def test_missing_timestamp_gives_null_duration(in_process_app: InProcessApp) -> None:
    for transport, ok, body in await _both(in_process_app, {"stays": [{"code": "13104", "name": "新宿区"}]}):
        assert ok, transport
        assert body["results"] == [{"code": "13104", "name": "新宿区", "duration_sec": None}]


async def test_100k_records_come_back_on_http(in_process_app: InProcessApp) -> None:
    records = [{**GOOD, "ref": f"r{i}"} for i in range(100_000)]
    records[50_000] = {"code": "", "name": "x"}
    http = in_process_app.http
    response = await http.post("/v1/stays/summarize_stays", json={"stays": records})
    body = response.json()
    assert response.status_code == 200
    assert len(body["results"]) == 99_999
    assert [(e["index"], e["reason"]) for e in body["errors"]] == [(50_000, "MISSING_CODE")]


async def test_100001_records_are_refused(in_process_app: InProcessApp) -> None:
    http = in_process_app.http
    response = await http.post("/v1/stays/summarize_stays", json={"stays": [{"code": "1", "name": "a"}] * 100_001})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "BAD_REQUEST"


async def test_http_errors_outside_tools_use_the_envelope(in_process_app: InProcessApp) -> None:
    http = in_process_app.http
    cases = [
        (await http.get("/v1/nope"), 404, "NOT_FOUND"),
        (await http.get("/v1/stays/summarize_stays"), 405, "METHOD_NOT_ALLOWED"),
        (
            await http.post(
                "/v1/stays/summarize_stays", content=b"{bad json", headers={"content-type": "application/json"}
            ),
            400,
            "BAD_REQUEST",
        ),
        (
            await http.post("/v1/stays/summarize_stays", content=b"", headers={"content-type": "application/json"}),
            400,
            "BAD_REQUEST",
        ),
        (
            await http.post("/v1/stays/summarize_stays", content=b"stays=1", headers={"content-type": "text/plain"}),
            415,
            "UNSUPPORTED_MEDIA_TYPE",
        ),
    ]
    for response, status, code in cases:
        assert response.status_code == status
        assert response.json()["error"]["code"] == code
        assert response.headers["x-run-id"] == response.json()["run_id"]
        assert float(response.headers["x-request-duration-ms"]) >= 0
    assert "POST" in cases[1][0].headers["allow"]
    echoed = await http.post(
        "/v1/stays/summarize_stays",
        json={"stays": []},
        headers={"X-Run-Id": "run-42", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
    )
    assert echoed.headers["x-run-id"] == "run-42"
    assert echoed.headers["x-trace-id"] == "4bf92f3577b34da6a3ce929d0e0e4736"


async def test_openapi_is_served_verbatim(in_process_app: InProcessApp) -> None:
    http = in_process_app.http
    served = (await http.get("/schema/openapi.json")).content
    docs = await http.get("/schema")
    assert served == (REPO / "generated" / "openapi.json").read_bytes()
    assert docs.status_code == 200 and "openapi.json" in docs.text


ONE_STAY = {"stays": [{"code": "13101", "name": "千代田区"}]}


async def test_over_http_the_refusal_is_a_503_with_retry_after_and_health_is_never_shed(
    in_process_app: InProcessApp,
) -> None:
    admissions = in_process_app.runtime.pipeline.admissions
    saved = admissions["stays"]
    admissions["stays"] = Admission("stays", 0, 0.0)  # a service with no slot left
    try:
        http = in_process_app.http
        refused = await http.post("/v1/stays/summarize_stays", json=ONE_STAY)
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
        assert refused.json()["error"]["code"] == "SERVICE_UNAVAILABLE" and refused.headers["x-run-id"]
        assert (await http.get("/healthz")).status_code == 200
        assert (await http.get("/readyz")).status_code == 200
        assert (await http.post("/v1/attendance/invitee_key", json={"kind": "email", "value": "a@b.jp"})).is_success
    finally:
        admissions["stays"] = saved
    assert (await http.post("/v1/stays/summarize_stays", json=ONE_STAY)).status_code == 200
