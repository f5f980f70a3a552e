"""kumitate.client without a server: error mapping, the retry bound, idempotency keys."""

from __future__ import annotations

import httpx
import pytest

from generated import errors
from generated.household.client import CONFIRM_DUPLICATE, HouseholdClient
from generated.stays.client import SUMMARIZE_STAYS
from kumitate.client import Reply, RetryPolicy, error_from
from kumitate.client.replies import no_answer


def test_a_catalogue_body_raises_its_generated_class_with_details() -> None:
    body = {
        "error": {"code": "RATE_LIMITED", "message": "slow", "retryable": True, "retry_after_ms": 250},
        "run_id": "r1",
        "trace_id": "t1",
    }
    exc = error_from(Reply(ok=False, body=body), errors.ERRORS)
    assert type(exc) is errors.RateLimitedError and exc.message == "slow"
    assert exc.details == {"retry_after_ms": 250} and exc.retry_after_s == 0.25
    assert (exc.run_id, exc.trace_id) == ("r1", "t1")
    header_wins = error_from(Reply(ok=False, body=body, status=429, retry_after_s=1.0), errors.ERRORS)
    assert header_wins.retry_after_s == 1.0


def test_a_body_without_the_catalogue_envelope_gets_a_code_from_its_status() -> None:
    """A proxy's 502 page or a bare 429 still raises a generated class, retryable where it should be."""
    bad_gateway = error_from(Reply(ok=False, body=None, status=502), errors.ERRORS)
    assert isinstance(bad_gateway, errors.ServiceUnavailableError) and bad_gateway.retryable
    limited = error_from(Reply(ok=False, body="slow down", status=429, retry_after_s=3.0), errors.ERRORS)
    assert isinstance(limited, errors.RateLimitedError) and limited.retry_after_s == 3.0
    teapot = error_from(Reply(ok=False, body={}, status=418), errors.ERRORS)
    assert isinstance(teapot, errors.BadRequestError) and not teapot.retryable
    too_large = error_from(Reply(ok=False, body="<html>413</html>", status=413), errors.ERRORS)
    assert isinstance(too_large, errors.PayloadTooLargeError) and not too_large.retryable


def test_retry_waits_what_the_server_asked_within_the_bound() -> None:
    """The client retries a retryable error only, waiting the backoff or the server's Retry-After when
    longer; no attempt left, or a wait over max_wait_s, raises the error instead."""
    policy = RetryPolicy(attempts=3, base_delay_s=0.5, jitter=0.0, max_wait_s=2)
    client = HouseholdClient.http("http://127.0.0.1:9", retry=policy)

    def failed(retryable: bool, after: float | None) -> Reply:
        body = {"error": {"code": "SERVICE_UNAVAILABLE", "message": "x", "retryable": retryable}}
        return Reply(ok=False, body=body, retry_after_s=after)

    assert client._wait_or_raise(failed(True, 1.5), 1) == 1.5
    assert client._wait_or_raise(failed(True, None), 1) == 0.5
    assert client._wait_or_raise(failed(True, None), 2) == 1.0
    assert client._wait_or_raise(failed(True, 0.25), 2) == 1.0  # the backoff when it is longer
    for reply, attempt in ((failed(True, 1.0), 3), (failed(True, 5.0), 1), (failed(False, 1.0), 1)):
        # attempts used up; longer than the bound; not retryable
        with pytest.raises(errors.ServiceUnavailableError):
            client._wait_or_raise(reply, attempt)
    client.close()


def test_the_default_policy_tries_three_times_after_half_a_second_then_one() -> None:
    client = HouseholdClient.http("http://127.0.0.1:9")
    assert client.retry.attempts == 3
    waits = [client.retry.wait(n) for n in (1, 2, 3)]
    assert waits == [0.5, 1.0, None]
    assert client.retry.wait(1, asked_s=30.0) == 30.0 and client.retry.wait(1, asked_s=31.0) is None
    client.close()


def test_idempotency_keys_are_fresh_per_call_and_only_where_the_policy_declares_them() -> None:
    """Reuse across one call's retries runs against a real server (test_generated_clients.py)."""
    client = HouseholdClient.http("http://127.0.0.1:9")
    first, second = (client._prepare(CONFIRM_DUPLICATE, {}, {}) for _ in range(2))
    assert first.idempotency_key and second.idempotency_key and first.idempotency_key != second.idempotency_key
    assert client._prepare(CONFIRM_DUPLICATE, {}, {"idempotency_key": "mine"}).idempotency_key == "mine"
    assert client._prepare(SUMMARIZE_STAYS, {}, {}).idempotency_key is None
    client.close()


def test_a_lost_answer_is_retried_only_under_an_idempotency_key() -> None:
    """A read time-out may have run the tool: a repeat is safe only where the key replays it."""
    client = HouseholdClient.http("http://127.0.0.1:9")
    for op, retried in ((CONFIRM_DUPLICATE, True), (SUMMARIZE_STAYS, False)):
        call = client._prepare(op, {}, {})
        lost = error_from(no_answer(httpx.ReadTimeout("slow"), call, sent=True), errors.ERRORS)
        assert isinstance(lost, errors.RequestTimeoutError) and lost.retryable is retried
        refused = error_from(no_answer(httpx.ConnectError("refused"), call, sent=False), errors.ERRORS)
        assert isinstance(refused, errors.ServiceUnavailableError) and refused.retryable
    client.close()
