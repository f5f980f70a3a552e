"""X-Run-Id: echoed as received when printable and short, else replaced and the replacement said (issue 14)."""

from __future__ import annotations

import pytest

from kumitate.observability import correlation


@pytest.mark.parametrize("value", ["duo-run-1", "4f0c6c1e-2b7a-4d0e-9d8a-0b6c3f2f9a11", "run 42 (turn 3)", "a" * 128])
def test_printable_short_run_ids_are_echoed_as_received(value: str) -> None:
    assert correlation.from_headers({"x-run-id": value})[0] == value
    assert not correlation.run_id_replaced({"x-run-id": value})


@pytest.mark.parametrize("value", ["a" * 129, " padded", "tab\there", "名前", "nul\x00", "line\nbreak"])
def test_other_run_ids_are_replaced_and_the_replacement_is_flagged(value: str) -> None:
    run_id, _ = correlation.from_headers({"x-run-id": value})
    assert run_id != value and correlation.clean(run_id) == run_id  # a fresh, safe id
    assert correlation.run_id_replaced({"x-run-id": value})


def test_missing_or_empty_run_id_is_generated_not_replaced() -> None:
    for headers in ({}, {"x-run-id": ""}):
        assert correlation.from_headers(headers)[0]
        assert not correlation.run_id_replaced(headers)
