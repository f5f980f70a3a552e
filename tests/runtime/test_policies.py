"""Policies on the pipeline with real components: auth, rate limit, idempotency, output guard, deprecation."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from kumitate.context import Principal, commit_gate
from kumitate.errors import ToolError
from kumitate.pipeline import CallRequest, Pipeline, Policies
from kumitate.policies import guard
from kumitate.policies.auth import Authenticator, exposure_warning
from kumitate.policies.deprecation import Deprecation
from kumitate.policies.idempotency_store import IdempotencyStore
from kumitate.policies.ratelimit import RateLimiter
from kumitate.settings import Settings
from kumitate.storage import open_database
from tests.runtime.test_pipeline import OUTPUT, Handlers, binding, make_pipeline, pipeline_with

pytestmark = pytest.mark.anyio

TOKENS = '{"t-reader": {"principal": "alice", "scopes": ["demo:read"]}, "t-none": {"principal": "bob", "scopes": []}}'


def auth_pipeline() -> Pipeline:
    pipeline, _ = make_pipeline(policies=Policies(auth=Authenticator.from_env({"KUMITATE_TOKENS": TOKENS})))
    return pipeline


@pytest.mark.parametrize(
    ("authorization", "status", "code"),
    [
        (None, 401, "UNAUTHORIZED"),
        ("Bearer wrong", 401, "UNAUTHORIZED"),
        ("Basic t-reader", 401, "UNAUTHORIZED"),
        ("Bearer t-none", 403, "FORBIDDEN"),
        ("Bearer t-reader", 200, "OK"),
        ("bearer t-reader", 200, "OK"),
    ],
)
async def test_auth_and_scopes(authorization: str | None, status: int, code: str) -> None:
    tool = binding("echo", scopes=["demo:read"])
    outcome = await auth_pipeline().call_tool(
        tool, {"n": 1}, CallRequest("http", ids=("r", "t"), authorization=authorization)
    )
    assert (outcome.status, outcome.code) == (status, code)
    if status != 200:
        assert "t-reader" not in str(outcome.body) and "wrong" not in str(outcome.body)


async def test_public_tools_and_local_principal() -> None:
    pipeline = auth_pipeline()
    public = await pipeline.call_tool(binding("echo", public=True), {"n": 1}, CallRequest("http", ids=("r", "t")))
    local = await pipeline.call_tool(
        binding("echo", scopes=["demo:write"]), {"n": 1}, CallRequest("mcp", ids=("r", "t"), local=True)
    )
    assert public.ok and local.ok


def test_dev_token_only_when_enabled() -> None:
    assert Authenticator.from_env({}).lookup("dev-token") is None
    assert not Authenticator.from_env({}).enabled
    dev = Authenticator.from_env({"KUMITATE_ALLOW_DEV_TOKEN": "1"}).lookup("dev-token")
    assert dev == Principal("dev", frozenset({"*"}))


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "example.org"])
def test_serving_beyond_loopback_with_auth_off_is_announced(host: str) -> None:
    warning = exposure_warning(host, auth_enabled=False)
    assert warning is not None and host in warning and "KUMITATE_TOKENS" in warning


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_or_auth_on_is_quiet(host: str) -> None:
    assert exposure_warning(host, auth_enabled=False) is None
    assert exposure_warning("0.0.0.0", auth_enabled=True) is None


def test_tokens_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.yaml"
    path.write_text("s3cret:\n  principal: carol\n  scopes: [stays:read]\n", encoding="utf-8")
    assert Authenticator.from_env({"KUMITATE_TOKENS_FILE": str(path)}).lookup("s3cret") == Principal(
        "carol", frozenset({"stays:read"})
    )


def test_token_bucket_refills_at_the_declared_rate() -> None:
    now = [0.0]
    limiter = RateLimiter(clock=lambda: now[0])
    for _ in range(50):
        limiter.take(("t", "p"), rps=5, burst=50)
    with pytest.raises(Exception) as exc:
        limiter.take(("t", "p"), rps=5, burst=50)
    assert exc.value.code == "RATE_LIMITED"  # type: ignore[attr-defined]
    assert exc.value.details["retry_after_ms"] == 200  # type: ignore[attr-defined]
    limiter.take(("t", "other"), rps=5, burst=50)  # another principal has its own bucket
    now[0] = 1.0
    accepted = 0
    for _ in range(10):
        try:
            limiter.take(("t", "p"), rps=5, burst=50)
            accepted += 1
        except Exception:
            pass
    assert accepted == 5


async def test_rate_limited_outcome_has_retry_after() -> None:
    pipeline, _ = make_pipeline()
    tool = binding("echo", rate_limit={"rps": 1, "burst": 1})
    request = CallRequest("http", ids=("r", "t"), client="10.0.0.1")
    assert (await pipeline.call_tool(tool, {"n": 1}, request)).ok
    limited = await pipeline.call_tool(tool, {"n": 1}, request)
    assert (limited.status, limited.code) == (429, "RATE_LIMITED")
    assert limited.body["error"]["retry_after_ms"] > 0
    assert limited.body["error"]["retryable"] is True
    assert int(limited.headers["Retry-After"]) >= 1


async def test_rate_limiter_under_concurrency_accepts_exactly_the_burst() -> None:
    pipeline, _ = make_pipeline()
    tool = binding("echo", rate_limit={"rps": 0.001, "burst": 20})
    request = CallRequest("http", ids=("r", "t"), client="10.0.0.2")
    outcomes = await asyncio.gather(*(pipeline.call_tool(tool, {"n": 1}, request) for _ in range(100)))
    assert sum(o.ok for o in outcomes) == 20


def idem_pipeline(path: Path, auth: Authenticator | None = None, **store: Any) -> tuple[Pipeline, Handlers]:
    idempotency = IdempotencyStore(open_database(path.parent), **store)
    return make_pipeline(
        policies=Policies(auth, idempotency=idempotency) if auth else Policies(idempotency=idempotency)
    )


async def test_idempotent_replay_conflict_and_restart(tmp_path: Path) -> None:
    tool = binding("echo", idempotency=True)
    pipeline, handlers = idem_pipeline(tmp_path / "idem.sqlite3")
    first = await pipeline.call_tool(tool, {"n": 1}, CallRequest("http", ids=("r1", "t"), idempotency_key="k1"))
    again = await pipeline.call_tool(tool, {"n": 1}, CallRequest("mcp", ids=("r2", "t"), idempotency_key="k1"))
    assert first.ok and again.ok and again.replayed and not first.replayed
    assert again.body == first.body and again.headers["Idempotent-Replayed"] == "true"
    conflict = await pipeline.call_tool(tool, {"n": 2}, CallRequest("http", ids=("r3", "t"), idempotency_key="k1"))
    assert (conflict.status, conflict.code) == (409, "CONFLICT")
    assert handlers.calls == 1
    pipeline.policies.idempotency.close()  # type: ignore[union-attr]

    restarted, handlers2 = idem_pipeline(tmp_path / "idem.sqlite3")
    replay = await restarted.call_tool(tool, {"n": 1}, CallRequest("http", ids=("r4", "t"), idempotency_key="k1"))
    assert replay.replayed and replay.body == first.body and handlers2.calls == 0


async def test_a_response_the_store_cannot_keep_is_still_returned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tool = binding("echo", idempotency=True)
    pipeline, handlers = idem_pipeline(tmp_path / "idem.sqlite3")
    store = pipeline.policies.idempotency
    assert store is not None
    with store._db.transaction() as conn:  # storing a response now fails, as on a full disk
        conn.exec_driver_sql(
            "CREATE TRIGGER full BEFORE UPDATE ON idempotency BEGIN SELECT RAISE(FAIL, 'disk full'); END"
        )
    first = await pipeline.call_tool(tool, {"n": 4}, CallRequest("http", ids=("r1", "t"), idempotency_key="k"))
    assert first.ok and first.body == {"n": 4} and not first.replayed
    retry = await pipeline.call_tool(tool, {"n": 4}, CallRequest("http", ids=("r2", "t"), idempotency_key="k"))
    assert retry.ok and not retry.replayed and handlers.calls == 2
    failures = [r for r in caplog.records if r.getMessage() == "idempotency_store_failed"]
    assert len(failures) == 2 and all(r.fields == {"tool": tool.key, "error": "IntegrityError"} for r in failures)


async def test_concurrent_requests_with_one_key_execute_once(tmp_path: Path) -> None:
    # the 19 duplicates wait for the first call however long a loaded machine makes it (the 0.5 s bound
    # that turns a longer wait into IN_PROGRESS is tests/storage/test_idempotency_store.py's)
    pipeline, handlers = idem_pipeline(tmp_path / "idem.sqlite3", wait_s=30)
    tool = binding("echo", idempotency=True)
    outcomes = await asyncio.gather(
        *(
            pipeline.call_tool(tool, {"n": 9}, CallRequest("http", ids=("r", "t"), idempotency_key="same"))
            for _ in range(20)
        )
    )
    assert handlers.calls == 1
    assert all(o.ok and o.body == {"n": 9} for o in outcomes)
    assert sum(o.replayed for o in outcomes) == 19


async def test_keys_are_per_principal(tmp_path: Path) -> None:
    pipeline, handlers = idem_pipeline(tmp_path / "idem.sqlite3", Authenticator.from_env({"KUMITATE_TOKENS": TOKENS}))
    tool = binding("echo", idempotency=True)
    for token in ("t-reader", "t-none"):
        await pipeline.call_tool(
            tool, {"n": 1}, CallRequest("http", ids=("r", "t"), idempotency_key="k", authorization=f"Bearer {token}")
        )
    assert handlers.calls == 2


def test_output_guard_fails_or_trims() -> None:
    body = {"rows": list(range(1000)), "note": "x"}
    with pytest.raises(Exception) as exc:
        guard.enforce(body, 200, "fail", "demo")
    assert exc.value.code == "OUTPUT_TOO_LARGE" and "narrow" in exc.value.message  # type: ignore[attr-defined]
    trimmed, warning = guard.enforce(body, 200, "trim", "demo")
    assert guard.size_of(trimmed) <= 200 and trimmed["rows"] == list(range(len(trimmed["rows"])))
    assert warning == "output_trimmed_to_200_bytes"
    assert guard.enforce({"a": 1}, 200, "fail", "demo") == ({"a": 1}, None)


async def test_output_guard_in_the_pipeline() -> None:
    pipeline, _ = make_pipeline()
    tool = dataclasses.replace(binding("echo", max_output_bytes=64), output_schema=OUTPUT)
    assert (await pipeline.call_tool(tool, {"n": 1}, CallRequest("http", ids=("r", "t")))).ok
    big = dataclasses.replace(binding("echo", max_output_bytes=64, on_oversize="fail"))
    pipeline.handlers["demo"].echo = lambda input, ctx: {"n": 10**70}  # type: ignore[attr-defined]
    outcome = await pipeline.call_tool(big, {"n": 1}, CallRequest("http", ids=("r", "t")))
    assert (outcome.status, outcome.code) == (413, "OUTPUT_TOO_LARGE")


async def test_deprecation_headers_and_warning() -> None:
    pipeline, _ = make_pipeline()
    tool = dataclasses.replace(
        binding("echo"), deprecated=Deprecation("2026-01-01", sunset="2026-12-31", replacement="echo2")
    )
    outcome = await pipeline.call_tool(tool, {"n": 1}, CallRequest("http", ids=("r", "t")))
    assert outcome.headers["Deprecation"] == "@1767225600"
    assert outcome.headers["Sunset"] == "Thu, 31 Dec 2026 00:00:00 GMT"
    assert any("echo2" in w for w in outcome.warnings)


def sqlite_counter(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    con.execute("CREATE TABLE IF NOT EXISTS saved (n INTEGER)")
    return con


def saved(path: Path) -> list[int]:
    with closing(sqlite3.connect(path)) as con:
        return [n for (n,) in con.execute("SELECT n FROM saved ORDER BY n")]


class Writer(Handlers):
    """Writes one SQLite row per call through the commit gate, with sleeps around the commit."""

    def __init__(self, path: Path, before: float, during: float = 0.0, after: float = 0.0) -> None:
        self.path, self.before, self.during, self.after = path, before, during, after

    def echo(self, input: Any, ctx: Any) -> dict[str, Any]:
        con = sqlite_counter(self.path)
        con.execute("BEGIN IMMEDIATE")
        con.execute("INSERT INTO saved VALUES (?)", (input.n,))
        time.sleep(self.before)
        try:
            with commit_gate():
                time.sleep(self.during)
                con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        finally:
            con.close()
        time.sleep(self.after)
        return {"n": input.n}


async def run_writer(tmp_path: Path, writer: Writer, timeout_ms: int = 100, cap: int | None = None) -> Any:
    pipeline = pipeline_with(writer, Policies(max_timeout_ms=cap))
    tool = binding("echo", timeout_ms=timeout_ms)
    outcome = await pipeline.call_tool(tool, {"n": 1}, CallRequest("http", ids=("r", "t")))
    await asyncio.sleep(writer.before + writer.during + writer.after + 0.2)  # let the worker thread finish
    return outcome


async def test_timeout_before_the_commit_saves_nothing(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    outcome = await run_writer(tmp_path, Writer(db, before=0.4))
    assert outcome.code == "REQUEST_TIMEOUT" and outcome.status == 408 and outcome.retryable
    assert saved(db) == []


async def test_a_commit_under_way_at_the_deadline_completes_and_is_reported(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    outcome = await run_writer(tmp_path, Writer(db, before=0.0, during=0.4))
    assert (outcome.code, outcome.body["n"]) == ("OK", 1)
    assert saved(db) == [1]


async def test_after_a_commit_the_call_cannot_time_out(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    outcome = await run_writer(tmp_path, Writer(db, before=0.0, after=0.4))
    assert outcome.code == "OK"
    assert saved(db) == [1]


async def test_operator_cap_shortens_a_declared_deadline(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    capped = await run_writer(tmp_path, Writer(db, before=0.3), timeout_ms=5000, cap=100)
    assert capped.code == "REQUEST_TIMEOUT" and "100 ms" in capped.body["error"]["message"]
    uncapped = await run_writer(tmp_path, Writer(db, before=0.3), timeout_ms=5000)
    assert uncapped.code == "OK"
    assert saved(db) == [1]


def test_commit_gate_outside_a_call_is_a_no_op() -> None:
    with commit_gate():
        pass


async def test_the_body_is_read_only_after_the_caller_is_admitted() -> None:
    """Auth and rate limit come before the arguments are read: an HTTP caller without a valid
    token gets 401 (never a 400/415 about a body it was not entitled to send), and an HTTP
    body is not parsed for it at all."""
    pipeline = auth_pipeline()
    reads: list[str] = []

    async def read() -> Any:
        reads.append("read")
        return {"n": 1}

    tool = binding("echo", scopes=["demo:read"], rate_limit={"rps": 0.001, "burst": 1})
    for authorization, code in [(None, "UNAUTHORIZED"), ("Bearer t-none", "FORBIDDEN")]:
        outcome = await pipeline.call_tool(tool, None, CallRequest("http", authorization=authorization), read=read)
        assert outcome.code == code and reads == []
    ok = CallRequest("http", authorization="Bearer t-reader")
    assert (await pipeline.call_tool(tool, None, ok, read=read)).code == "OK" and reads == ["read"]
    limited = await pipeline.call_tool(tool, None, ok, read=read)
    assert limited.code == "RATE_LIMITED" and reads == ["read"]


async def test_unauthorized_names_the_bearer_scheme() -> None:
    outcome = await auth_pipeline().call_tool(binding("echo"), {"n": 1}, CallRequest("http"))
    assert outcome.status == 401 and outcome.headers["WWW-Authenticate"].startswith("Bearer")
    forbidden = await auth_pipeline().call_tool(
        binding("echo", scopes=["demo:write"]), {"n": 1}, CallRequest("http", authorization="Bearer t-reader")
    )
    assert forbidden.status == 403  # RFC 6750 section 3.1: the challenge names the scope to ask for
    assert (
        forbidden.headers["WWW-Authenticate"]
        == 'Bearer realm="kumitate", error="insufficient_scope", scope="demo:write"'
    )
    refused = await auth_pipeline().call_tool(binding("echo"), {"n": 1}, CallRequest("http", authorization="Bearer x"))
    assert 'error="invalid_token"' in refused.headers["WWW-Authenticate"]
    assert "error=" not in outcome.headers["WWW-Authenticate"]  # no token sent: no error code (section 3.1)


@pytest.mark.parametrize(
    "text",
    [
        "s3cret-token: {principal: carol, scopes: [a]\nother: x",  # unclosed flow mapping
        "s3cret-token:\n  principal: carol\n   scopes: [a]: [b]\n",  # bad indentation
        '{"s3cret-token": {"principal": "carol",}',  # JSON syntax error (YAML error too)
    ],
)
def test_a_malformed_tokens_file_never_shows_a_token(tmp_path: Path, text: str) -> None:
    path = tmp_path / "tokens.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError) as exc:
        Authenticator.from_env({"KUMITATE_TOKENS_FILE": str(path)})
    assert "s3cret" not in str(exc.value) and str(path) in str(exc.value)
    assert exc.value.__context__ is None or exc.value.__suppress_context__  # no parser error chained in


def test_malformed_token_env_and_entries_are_refused_without_the_token() -> None:
    with pytest.raises(ValueError, match="KUMITATE_TOKENS: not valid JSON") as bad_json:
        Authenticator.from_env({"KUMITATE_TOKENS": '{"s3cret": {"principal": "p"'})
    assert "s3cret" not in str(bad_json.value)
    with pytest.raises(ValueError, match="scopes") as bad_scopes:
        Authenticator.from_env({"KUMITATE_TOKENS": '{"s3cret": {"principal": "p", "scopes": "stays"}}'})
    assert "s3cret" not in str(bad_scopes.value)
    with pytest.raises(ValueError, match="principal"):
        Authenticator.from_env({"KUMITATE_TOKENS": '{"s3cret": {"principal": ""}}'})


def test_eviction_never_forgets_a_drained_bucket(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pruning the bucket table must judge each bucket by its own rate: dropping a drained
    bucket of a slow tool would hand its principal a fresh burst."""
    from kumitate.policies import ratelimit

    monkeypatch.setattr(ratelimit, "MAX_BUCKETS", 10)
    now = [0.0]
    limiter = RateLimiter(clock=lambda: now[0])
    limiter.take(("slow", "p"), rps=0.001, burst=1)
    now[0] = 1.0
    for i in range(20):  # a fast tool's buckets, refilled within 10 ms: these may go
        limiter.take(("fast", f"addr:{i}"), rps=100, burst=1)
        now[0] += 0.1
    assert len(limiter) <= 10
    with pytest.raises(ToolError) as exc:
        limiter.take(("slow", "p"), rps=0.001, burst=1)
    assert exc.value.code == "RATE_LIMITED"


async def test_an_async_handler_committing_in_a_thread_at_the_deadline_is_reported(tmp_path: Path) -> None:
    """The commit gate holds for async handlers too: one whose commit (in a thread that
    cancellation cannot stop) is under way at the deadline gets its result sent, not a
    REQUEST_TIMEOUT that would claim nothing was saved."""
    db = tmp_path / "w.db"
    writer = Writer(db, before=0.0, during=0.4)

    class AsyncWriter(Handlers):
        async def echo(self, input: Any, ctx: Any) -> dict[str, Any]:
            return await asyncio.to_thread(writer.echo, input, ctx)

    pipeline = pipeline_with(AsyncWriter())
    outcome = await pipeline.call_tool(binding("echo", timeout_ms=100), {"n": 1}, CallRequest("http"))
    assert (outcome.code, saved(db)) == ("OK", [1])


async def test_an_async_handler_timed_out_before_its_commit_is_cancelled(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    steps: list[str] = []

    class AsyncWriter(Handlers):
        async def echo(self, input: Any, ctx: Any) -> dict[str, Any]:
            con = sqlite_counter(db)
            try:
                con.execute("BEGIN IMMEDIATE")
                con.execute("INSERT INTO saved VALUES (?)", (input.n,))
                await asyncio.sleep(0.5)
                steps.append("commit")
                with commit_gate():
                    con.execute("COMMIT")
            finally:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                con.close()
            return {"n": input.n}

    pipeline = pipeline_with(AsyncWriter())
    outcome = await pipeline.call_tool(binding("echo", timeout_ms=50), {"n": 1}, CallRequest("http"))
    await asyncio.sleep(0.6)
    assert outcome.code == "REQUEST_TIMEOUT" and steps == [] and saved(db) == []


def test_mcp_calls_over_the_network_never_run_as_the_local_principal() -> None:
    """The local principal (every scope) is for stdio and in-memory sessions. A call that came
    through the network ASGI layer without an HTTP request attached is treated as a caller
    with no token, not as local."""
    from kumitate.transports.edge.routing import SERVED_OVER_NETWORK
    from kumitate.transports.mcp import current_request

    assert current_request().local is True  # no request context: stdio / in-memory
    token = SERVED_OVER_NETWORK.set(True)
    try:
        request = current_request()
    finally:
        SERVED_OVER_NETWORK.reset(token)
    assert request.local is False and request.authorization is None


async def test_a_trimmed_body_with_its_warning_still_fits_the_limit() -> None:
    """When the trim warning goes into the body's own `warnings`, the body that is sent, warning
    included, stays within max_output_bytes."""
    schema = {
        "type": "object",
        "properties": {"rows": {"type": "array", "items": {"type": "integer"}}, "warnings": {"type": "array"}},
    }
    pipeline, _ = make_pipeline()
    pipeline.handlers["demo"].echo = lambda input, ctx: {"rows": list(range(1000)), "warnings": []}  # type: ignore[attr-defined]
    tool = dataclasses.replace(binding("echo", max_output_bytes=200, on_oversize="trim"), output_schema=schema)
    outcome = await pipeline.call_tool(tool, {"n": 1}, CallRequest("http"))
    assert outcome.ok and outcome.body["warnings"] == ["output_trimmed_to_200_bytes"]
    assert 0 < len(outcome.body["rows"]) < 1000 and guard.size_of(outcome.body) <= 200


async def test_sync_handlers_run_together_beyond_the_default_pool() -> None:
    """asyncio's default pool is six threads on a 2-CPU machine; twelve calls must all be running at once."""
    pipeline, handlers = make_pipeline()
    together = threading.Barrier(12, timeout=10)

    def echo(input: Any, ctx: Any) -> dict[str, Any]:
        together.wait()
        return {"n": input.n}

    handlers.echo = echo  # type: ignore[method-assign]
    tool = binding("echo")
    outcomes = await asyncio.gather(
        *(pipeline.call_tool(tool, {"n": i}, CallRequest("http", ids=(f"r{i}", "t"))) for i in range(12))
    )
    assert [o.code for o in outcomes] == ["OK"] * 12
    pipeline.close()


async def test_a_call_with_an_idempotency_key_still_times_out_at_its_deadline(tmp_path: Path) -> None:
    """The key's claim is the store's bookkeeping, not the call's commit: it must not hold the
    deadline off (it did: a keyed call ran to its end, however long). The timed-out key is free again."""
    pipeline, _ = idem_pipeline(tmp_path / "idem.sqlite3")
    tool = binding("slow", idempotency=True, timeout_ms=300)
    request = CallRequest("http", ids=("r", "t"), idempotency_key="k")
    started = time.monotonic()
    outcome = await pipeline.call_tool(tool, {"n": 1}, request)
    assert (outcome.status, outcome.code) == (408, "REQUEST_TIMEOUT")
    assert time.monotonic() - started < 2.0
    store = pipeline.policies.idempotency
    assert store is not None
    with store._db.read() as conn:
        assert conn.exec_driver_sql("SELECT COUNT(*) FROM idempotency").scalar() == 0


def test_policies_from_settings_carry_every_setting_they_apply(tmp_path: Path) -> None:
    """One place turns the settings into the policies: the runtime gives only what settings cannot make
    (the limiter, the idempotency store)."""
    settings = Settings.from_env(
        {
            "KUMITATE_DATA_DIR": str(tmp_path),
            "KUMITATE_PUBLIC_URL": "https://tools.example/",
            "KUMITATE_TOKENS": TOKENS,
            "KUMITATE_AUTH_FAILURES": "1/3",
            "KUMITATE_MAX_TIMEOUT_MS": "5000",
            "KUMITATE_WORKER_THREADS": "4",
            "KUMITATE_SERVICE_WORKER_THREADS": "demo=2",
            "KUMITATE_BULKHEAD_WAIT_MS": "250",
            "KUMITATE_MAX_IN_FLIGHT": "7",
            "KUMITATE_ADMISSION_WAIT_MS": "30",
            "KUMITATE_ADMISSION_QUEUE_MS": "0",
            "KUMITATE_COMMIT_GRACE_MS": "1500",
            "KUMITATE_OFF_LOOP_BYTES": "1024",
        }
    )
    limiter = RateLimiter()
    policies = Policies.from_settings(settings, ["demo", "other"], limiter)
    assert policies.limiter is limiter and policies.idempotency is None and policies.auth.enabled
    assert policies.auth_guard is not None and (policies.auth_guard.rate, policies.auth_guard.burst) == (1.0, 3)
    assert (policies.public_url, policies.served_url) == ("https://tools.example", "https://tools.example")
    assert (policies.worker_threads, policies.service_threads) == (4, {"demo": 2, "other": 4})
    assert policies.in_flight == {"demo": 7, "other": 7}
    waits = (policies.bulkhead_wait_s, policies.admission_wait_s, policies.admission_queue_s, policies.commit_grace_s)
    assert waits == (0.25, 0.03, 0.0, 1.5)
    assert (policies.max_timeout_ms, policies.off_loop_bytes) == (5000, 1024)
    pipeline, _ = make_pipeline(policies=policies)
    assert (pipeline.bulkheads["demo"].limit, pipeline.admissions["demo"].limit) == (2, 7)
