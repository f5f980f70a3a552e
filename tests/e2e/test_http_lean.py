"""The lean HTTP path (kumitate/transports/http/lean.py) answers byte for byte what the Litestar route answers.

Each request is sent twice to the same in-process app, once with the lean path on and once with it
off (Litestar's route then answers, as with KUMITATE_HTTP_LEAN=0), with fixed correlation ids:
status, every response header (names, values, order; all but the measured duration) and body must
be equal. The requests cover what the lean path takes (a call, an input error, bad JSON, an empty
body, an idempotent replay, a caller without a token or without the scope) and what it hands on
(an unknown tool, another method or content type, a query string, a task asked for, a body over the
cap, a compressed body), so an answer changed on one path only fails here.
"""

from __future__ import annotations

import asyncio
import gc
import json
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from codegen.examples import all_examples
from codegen.specs import SpecTree
from kumitate.transports.edge.asgi import ARRIVED_KEY
from kumitate.transports.http.lean import FLUSHED_ABOVE, LeanHTTP
from tests.conftest import K_OF_N_RULE, InProcessApp, serve_in_process
from tests.heap_faults import PAGES, glibc_only, second_block_faults

pytestmark = pytest.mark.anyio

STAYS = {
    "granularity": "admin",
    "stays": [{"ref": "a", "code": "13101", "name": "千代田区", "start_ts": "2024-05-01T09:00:00+09:00"}],
}
RULE = K_OF_N_RULE
TOKENS = {
    "t-all": {"principal": "ops", "scopes": ["stays", "yana", "household", "attendance", "analytics"]},
    "t-other": {"principal": "other", "scopes": ["attendance"]},
}
SUMMARIZE = "/v1/stays/summarize_stays"
JSON_TYPE = {"Content-Type": "application/json"}

CASES: dict[str, tuple[str, str, Any, dict[str, str]]] = {
    # (method, path, body (bytes as sent, or a JSON value), headers over the defaults)
    "call": ("POST", SUMMARIZE, STAYS, {}),
    "charset": ("POST", SUMMARIZE, STAYS, {"Content-Type": "application/json; charset=utf-8"}),
    "input error": ("POST", SUMMARIZE, {"stays": 5}, {}),
    "extra field": ("POST", SUMMARIZE, {**STAYS, "nope": 1}, {}),
    "bad json": ("POST", SUMMARIZE, b'{"stays": [', {}),
    "not an object": ("POST", SUMMARIZE, [1, 2], {}),
    "empty body": ("POST", SUMMARIZE, b"", {}),
    "blank body": ("POST", SUMMARIZE, b"  \n", {}),
    "unknown tool": ("POST", "/v1/stays/nope", STAYS, {}),
    "trailing slash": ("POST", SUMMARIZE + "/", STAYS, {}),
    "get": ("GET", SUMMARIZE, b"", {}),
    "query string": ("POST", SUMMARIZE + "?x=1", STAYS, {}),
    "form": ("POST", SUMMARIZE, b"a=1", {"Content-Type": "application/x-www-form-urlencoded"}),
    "no content type": ("POST", SUMMARIZE, STAYS, {"Content-Type": ""}),
    "text": ("POST", SUMMARIZE, b"{}", {"Content-Type": "text/plain"}),
    "compressed": ("POST", SUMMARIZE, STAYS, {"Content-Encoding": "gzip"}),
    "prefer": ("POST", SUMMARIZE, STAYS, {"Prefer": "respond-async"}),
    "header twice": ("POST", SUMMARIZE, STAYS, {"X-Dup": "a", "x-dup": "b"}),
    "read-only other service": ("POST", "/v1/household/get_duplicate_stats", {}, {}),
}


def _headers(extra: dict[str, str]) -> list[tuple[str, str]]:
    headers = JSON_TYPE | {"X-Run-Id": "run-lean-1", "X-Trace-Id": "0af7651916cd43dd8448eb211c80319c"}
    base = [(k, v) for k, v in headers.items() if k.lower() not in {e.lower() for e in extra}]
    return base + [(k, v) for k, v in extra.items() if v]


@contextmanager
def _lean(app: InProcessApp, on: bool) -> Iterator[LeanHTTP]:
    lean = app.app.lean
    assert isinstance(lean, LeanHTTP), "the lean HTTP path is in front of Litestar (KUMITATE_HTTP_LEAN on)"
    lean.enabled = on
    try:
        yield lean
    finally:
        lean.enabled = True


Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


async def _send(app: InProcessApp, method: str, path: str, body: Any, extra: dict[str, str]) -> Answer:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    reply = await app.http.request(method, path, content=content, headers=_headers(extra))
    headers = [(k, v) for k, v in reply.headers.raw if k.lower() != b"x-request-duration-ms"]
    return reply.status_code, headers, reply.content


async def _both(app: InProcessApp, method: str, path: str, body: Any, extra: dict[str, str]) -> list[Answer]:
    answers = []
    for on in (True, False):
        with _lean(app, on):
            answers.append(await _send(app, method, path, body, extra))
    return answers


@pytest.mark.parametrize("case", list(CASES))
async def test_lean_answers_as_litestar(in_process_app: InProcessApp, case: str) -> None:
    lean, litestar = await _both(in_process_app, *CASES[case])
    assert lean == litestar


async def test_a_large_answer_is_the_same_bytes(in_process_app: InProcessApp) -> None:
    """An answer over FLUSHED_ABOVE leaves as its body and then an empty last part: still Litestar's bytes."""
    stay = {"code": "13101", "name": "千代田区", "start_ts": "2024-05-01T09:00:00+09:00"}
    body = {"stays": [{**stay, "ref": f"r{i}", "end_ts": "2024-05-01T10:00:00+09:00"} for i in range(20_000)]}
    lean, litestar = await _both(in_process_app, "POST", SUMMARIZE, body, {})
    assert lean[0] == 200 and len(lean[2]) > FLUSHED_ABOVE
    assert lean == litestar


async def test_idempotent_replay(in_process_app: InProcessApp) -> None:
    """A replay (Idempotent-Replayed, the first answer's body) and a key reused with another body."""
    key = {"Idempotency-Key": "lean-replay-1"}
    body = {"thread_id": "lean-thread", "rule": RULE}
    first = await _send(in_process_app, "POST", "/v1/attendance/save_attendance_rule", body, key)
    assert first[0] == 200, first[2]
    lean, litestar = await _both(in_process_app, "POST", "/v1/attendance/save_attendance_rule", body, key)
    assert lean == litestar
    assert (b"idempotent-replayed", b"true") in [(k.lower(), v) for k, v in lean[1]]
    reused = {"thread_id": "lean-thread-2", "rule": RULE}
    lean, litestar = await _both(in_process_app, "POST", "/v1/attendance/save_attendance_rule", reused, key)
    assert lean == litestar
    assert lean[0] >= 400


async def test_lean_path_serves_the_call(in_process_app: InProcessApp) -> None:
    """The lean path really answers (Litestar is never entered) and hands on what it does not take."""
    outer = in_process_app.app
    litestar = outer.app
    entered: list[str] = []

    async def spy(scope: Any, receive: Any, send: Any) -> None:
        entered.append(scope["path"])
        await litestar(scope, receive, send)

    outer.app = spy
    try:
        reply = await in_process_app.http.post(SUMMARIZE, json=STAYS)
        assert reply.status_code == 200 and entered == []
        assert float(reply.headers["x-request-duration-ms"]) > 0
        await _send(in_process_app, *CASES["form"][:3], CASES["form"][3])
        assert entered == [SUMMARIZE]
    finally:
        outer.app = litestar


async def test_overload_is_shed_before_the_body(in_process_app: InProcessApp) -> None:
    """At the service's admission bound the lean path answers 503 + Retry-After at once (no wait)."""
    admission = in_process_app.runtime.pipeline.admissions["stays"]
    taken = admission.limit - admission.in_flight
    admission.in_flight += taken
    try:
        status, headers, body = await _send(in_process_app, "POST", SUMMARIZE, STAYS, {})
    finally:
        admission.in_flight -= taken
    assert status == 503
    assert (b"retry-after", b"1") in headers
    error = json.loads(body)["error"]
    assert error["code"] == "SERVICE_UNAVAILABLE" and "waited 0 ms" in error["message"]
    assert (await _send(in_process_app, "POST", SUMMARIZE, STAYS, {}))[0] == 200


@pytest.fixture(scope="module")
async def authed_app(tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path) -> AsyncIterator[InProcessApp]:
    async with serve_in_process(
        tmp_path_factory.mktemp("lean-auth") / "var", seeded_data_dir, KUMITATE_TOKENS=json.dumps(TOKENS)
    ) as served:
        yield served


@pytest.mark.parametrize("authorization", ["Bearer t-all", "Bearer t-other", "Bearer wrong", "", "Basic abc"], ids=str)
async def test_auth_answers_as_litestar(authed_app: InProcessApp, authorization: str) -> None:
    lean, litestar = await _both(authed_app, "POST", SUMMARIZE, STAYS, {"Authorization": authorization})
    assert lean == litestar


TIMINGS = re.compile(rb'("(?:elapsed_ms|uptime_s)":)[0-9.]+')
"""A duration a result reports (yana's `elapsed_ms`)."""


def _untimed(answer: Answer) -> Answer:
    """The answer with the durations a result reports zeroed (and so its length unsaid)."""
    status, headers, raw = answer
    if not TIMINGS.search(raw):
        return answer
    return status, [(k, v) for k, v in headers if k != b"content-length"], TIMINGS.sub(rb"\g<1>0", raw)


@pytest.mark.slow  # every read-only example; the cases above cover each kind of request
async def test_read_only_examples_answer_as_litestar(in_process_app: InProcessApp, spec_tree: SpecTree) -> None:
    differ = []
    for tool, example in all_examples(spec_tree):
        if not tool.annotations.read_only_hint or not isinstance(example.input, dict):
            continue
        lean, litestar = await _both(in_process_app, tool.http_method, tool.http_path, example.input, {})
        lean, litestar = [_untimed(answer) for answer in (lean, litestar)]
        if lean != litestar:
            differ.append(f"{tool.name}:{example.name}")
    assert differ == []


async def test_a_call_that_queued_too_long_is_shed(in_process_app: InProcessApp) -> None:
    """KUMITATE_ADMISSION_QUEUE_MS: a call whose headers arrived (protocol.py stamps the scope) longer
    ago than that is answered 503 + Retry-After before it runs; a fresh one runs."""
    outer = in_process_app.app
    queue_s = in_process_app.runtime.pipeline.admissions["stays"].queue_s
    assert queue_s > 0

    def arrived(ago_s: float) -> httpx.AsyncClient:
        async def stamped(scope: Any, receive: Any, send: Any) -> None:
            scope[ARRIVED_KEY] = asyncio.get_running_loop().time() - ago_s
            await outer(scope, receive, send)

        return httpx.AsyncClient(transport=httpx.ASGITransport(app=stamped), base_url=in_process_app.url)

    async with arrived(queue_s + 1) as late, arrived(0) as fresh:
        shed = await late.post(SUMMARIZE, json=STAYS)
        served = await fresh.post(SUMMARIZE, json=STAYS)
    assert shed.status_code == 503 and shed.headers["retry-after"] == "1"
    assert shed.json()["error"]["code"] == "SERVICE_UNAVAILABLE" and "queue" in shed.json()["error"]["message"]
    assert served.status_code == 200


async def test_what_start_up_built_is_frozen_while_the_app_runs(in_process_app: InProcessApp) -> None:
    """A full collection would otherwise walk the ~140k objects of the frameworks, schemas and models and
    pause every call in flight (kumitate/app.py: HTTP p99, issue 32)."""
    assert gc.get_freeze_count() > 50_000


@glibc_only
async def test_a_running_app_keeps_freed_memory_for_the_next_large_call(in_process_app: InProcessApp) -> None:
    """A 16 MiB body freed by one call is reused by the next, not faulted in again page by page
    (kumitate/serving/heap.py; tests/runtime/test_heap.py shows glibc's defaults do fault it in)."""
    assert second_block_faults() < PAGES // 10
