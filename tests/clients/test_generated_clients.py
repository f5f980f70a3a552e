"""The generated typed clients against a real server, on every backend.

HTTP (sync and async httpx), MCP over streamable HTTP and MCP over stdio each call a tool and
get the generated output model back; a catalogue error raises its generated class; a 429 is
retried after the server's Retry-After; the idempotency key of one call stays the same on
every attempt, so the retry replays instead of running the tool twice.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from generated import errors
from generated.household import models as household_models
from generated.household.client import AsyncHouseholdClient, HouseholdClient
from generated.stays import models as stays_models
from generated.stays.client import AsyncStaysClient, StaysClient
from generated.yana.client import AsyncYanaClient, YanaClient
from kumitate.client import AsyncClient, HttpBackend, RetryPolicy
from tests.conftest import REPO, LiveServer, server_env, start_server, stop_server

pytestmark = pytest.mark.slow

STAYS = stays_models.SummarizeStaysInput.model_validate(
    {
        "granularity": "admin",
        "stays": [
            {
                "ref": "a",
                "code": "13101",
                "name": "千代田区",
                "start_ts": "2024-05-01T09:00:00+09:00",
                "end_ts": "2024-05-01T11:00:00+09:00",
            }
        ],
    }
)


def _check_stays(out: stays_models.SummarizeStaysOutput) -> None:
    assert isinstance(out, stays_models.SummarizeStaysOutput)
    assert out.summary == "千代田区に2時間滞在"


def test_sync_http(live_server: LiveServer) -> None:
    with StaysClient.http(live_server.url) as client:
        _check_stays(client.summarize_stays(STAYS))
        with pytest.raises(errors.BadRequestError) as err:
            client.summarize_stays({"stays": "not a list"})
    assert err.value.code == "BAD_REQUEST" and err.value.status == 400
    assert err.value.run_id


def test_sync_mcp_and_stdio(live_server: LiveServer, tmp_path: Path) -> None:
    """The blocking client over MCP: the async backend on a loop of its own, no loop of the caller's."""
    for client in (
        StaysClient.mcp(live_server.url),
        StaysClient.stdio(env=server_env(tmp_path / "var"), cwd=str(REPO)),
    ):
        with client:
            _check_stays(client.summarize_stays(STAYS))
            with pytest.raises(errors.BadRequestError):
                client.summarize_stays({"stays": "not a list"})


def _async_clients(live_server: LiveServer, tmp_path: Path, cls: type[AsyncClient]) -> dict[str, AsyncClient]:
    return {
        "http": cls.http(live_server.url),
        "mcp": cls.mcp(live_server.url),
        "stdio": cls.stdio(env=server_env(tmp_path / "var"), cwd=str(REPO)),
    }


@pytest.mark.anyio
async def test_async_backends_return_models_and_raise_generated_errors(live_server: LiveServer, tmp_path: Path) -> None:
    for name, client in _async_clients(live_server, tmp_path, AsyncStaysClient).items():
        async with client:
            assert isinstance(client, AsyncStaysClient)
            _check_stays(await client.summarize_stays(STAYS, run_id=f"client-{name}"))
            with pytest.raises(errors.BadRequestError, match="stays") as err:
                await client.summarize_stays({"stays": "not a list"}, run_id=f"client-{name}")
            assert err.value.run_id == f"client-{name}"


@pytest.mark.anyio
async def test_household_tools_and_resources_on_every_backend(live_server: LiveServer, tmp_path: Path) -> None:
    seen = {}
    for name, client in _async_clients(live_server, tmp_path, AsyncHouseholdClient).items():
        async with client:
            assert isinstance(client, AsyncHouseholdClient)
            month = await client.get_monthly_household(household_models.GetMonthlyHouseholdInput(year=2025, month=6))
            assert isinstance(month, household_models.GetMonthlyHouseholdOutput)
            months = await client.read_available_months()
            assert isinstance(months, household_models.AvailableMonthsResource)
            with pytest.raises(errors.DataNotFoundError):
                await client.get_monthly_household({"year": 2030, "month": 1})
            with pytest.raises(errors.ChartNotFoundError):
                await client.read_chart("0" * 32)
            trend = await client.get_category_trend(
                {"category": "食費", "start_month": "2025-06", "end_month": "2025-07", "output_format": "image"}
            )
            assert trend.chart is not None
            assert (await client.read_chart(trend.chart.chart_id)).startswith(b"\x89PNG")
            seen[name] = (month.total_expense, month.transaction_count)
    assert seen["http"] == seen["mcp"] == seen["stdio"] == (295266, 65)
    with HouseholdClient.http(live_server.url) as sync:
        assert sync.read_available_months() == months


# -- retries against a server of their own: a rate-limit bucket no other test shares ----------

TOKEN = "t-clients"


@pytest.fixture(scope="module")
def yana_server(tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("clients")
    tokens = json.dumps({TOKEN: {"principal": "clients", "scopes": ["*"]}})
    server = start_server(root / "var", root / "server.log", seeded=seeded_data_dir, KUMITATE_TOKENS=tokens)
    yield server
    stop_server(server)


INGEST = {"uri": "file:data/yana/images/label_0001.png", "brand_name": "獺祭"}


def _recording_client(url: str, sent: list[httpx.Request], retry: RetryPolicy) -> YanaClient:
    http = httpx.Client(base_url=url, event_hooks={"request": [sent.append]}, timeout=30)
    return YanaClient(HttpBackend(url, token=TOKEN, client=http), retry=retry)


def _first_limited_call(client: YanaClient, sent: list[httpx.Request]) -> tuple[Any, list[httpx.Request]]:
    """Ingest back to back until a call meets the rate limit (burst 50): that call's outcome
    (its result, or the error it raised) and the requests it sent."""
    for _ in range(80):
        start = len(sent)
        try:
            out: Any = client.ingest(INGEST)
        except errors.RateLimitedError as exc:
            return exc, sent[start:]
        if len(sent) - start > 1:
            return out, sent[start:]
    raise AssertionError("the rate limit never answered 429")


def test_rate_limited_call_is_retried_after_retry_after_with_the_same_idempotency_key(
    yana_server: LiveServer,
) -> None:
    sent: list[httpx.Request] = []
    waits: list[float] = []
    with _recording_client(yana_server.url, sent, RetryPolicy(attempts=3, max_wait_s=5)) as client:
        real_sleep = client.sleep
        client.sleep = lambda s: (waits.append(s), real_sleep(s))[1]  # type: ignore[func-returns-value]
        out, attempts = _first_limited_call(client, sent)
    assert out.id == "label_0001" and out.dedup is True
    assert len(attempts) == len(waits) + 1 and waits == [1.0] * len(waits)  # Retry-After: 1 (s, rounded up)
    keys = {r.headers.get("idempotency-key") for r in attempts}
    assert len(keys) == 1 and None not in keys
    assert attempts[0].headers["authorization"] == f"Bearer {TOKEN}"


def test_a_wait_longer_than_the_bound_raises_instead(yana_server: LiveServer) -> None:
    sent: list[httpx.Request] = []
    with _recording_client(yana_server.url, sent, RetryPolicy(max_wait_s=0.1)) as client:
        error, attempts = _first_limited_call(client, sent)
    assert isinstance(error, errors.RateLimitedError) and len(attempts) == 1
    assert error.retryable and error.retry_after_s == 1.0


def test_fresh_key_per_call_and_caller_key_used(yana_server: LiveServer) -> None:
    sent: list[httpx.Request] = []
    keys: list[set[str | None]] = []  # the keys each call sent (one call may send several attempts)
    with _recording_client(yana_server.url, sent, RetryPolicy(attempts=5, max_wait_s=5)) as client:
        for call in (
            lambda: client.search({"query_text": "獺祭"}),
            lambda: client.ingest(INGEST),
            lambda: client.ingest(INGEST),
            lambda: client.ingest(INGEST, idempotency_key="my-key-1"),
        ):
            start = len(sent)
            call()
            keys.append({r.headers.get("idempotency-key") for r in sent[start:]})
    assert keys[0] == {None}  # search declares no idempotency
    assert len(keys[1]) == len(keys[2]) == 1 and keys[1] != keys[2] and None not in keys[1] | keys[2]
    assert keys[3] == {"my-key-1"}


def test_unauthorized_and_unreachable_are_typed(yana_server: LiveServer) -> None:
    with YanaClient.http(yana_server.url, token="wrong") as client, pytest.raises(errors.UnauthorizedError):
        client.search({"query_text": "x"})
    quick = RetryPolicy(attempts=2, base_delay_s=0.01)
    with YanaClient.http("http://127.0.0.1:9", retry=quick) as client, pytest.raises(errors.ServiceUnavailableError):
        client.search({"query_text": "x"})


@pytest.mark.anyio
async def test_rate_limited_over_mcp_waits_the_error_bodys_retry_after(yana_server: LiveServer) -> None:
    """MCP has no headers: the wait comes from the error body's retry_after_ms."""
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        await anyio.sleep(seconds)

    async with AsyncYanaClient.mcp(yana_server.url, token=TOKEN, retry=RetryPolicy(attempts=5, max_wait_s=5)) as client:
        client.sleep = sleep
        for _ in range(80):
            out = await client.ingest(INGEST)
            assert out.id == "label_0001"
            if waits:
                break
    assert waits and all(0 < w <= 1.0 for w in waits)
