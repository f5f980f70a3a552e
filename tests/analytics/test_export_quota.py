"""Byte quotas: one export, and one principal's live exports on disk (issue 20)."""

from __future__ import annotations

from pathlib import Path

import pytest

from handlers.analytics.core.service import AnalyticsService
from kumitate.context import Principal
from kumitate.errors import ToolError

from .conftest import FakeClock, make_service

ALICE = Principal("alice", frozenset({"analytics"}))
BOB = Principal("bob", frozenset({"analytics"}))
# ~2 KB per row, up to 1M rows: gigabytes if nothing stopped the COPY while it writes.
HUGE = "SELECT i, repeat('x', 2000) AS pad FROM range(10000000) r(i)"
SMALL = "SELECT * FROM splits"  # a few KB as CSV


def test_an_export_stops_at_its_byte_limit(small_db_template: Path, tmp_path: Path, clock: FakeClock) -> None:
    svc = make_service(small_db_template, tmp_path, clock, export_max_bytes=1_000_000, query_timeout_s=20)
    try:
        with pytest.raises(ToolError) as info:
            svc.export({"query": HUGE, "format": "csv", "max_rows": 1_000_000}, principal=ALICE)
        # Stopped while writing (a full 2 GB write would run into the deadline: QUERY_TIMEOUT).
        assert info.value.code == "EXPORT_QUOTA_EXCEEDED"
        assert info.value.details["scope"] == "export"
        assert "1.0 MB" in info.value.message
        assert not list(svc.exports.directory.iterdir())
        assert svc.exports.usage("alice") == 0
        # Under the limit is fine.
        assert svc.export({"query": SMALL, "format": "csv"}, principal=ALICE)["rows"] > 0
    finally:
        svc.close()


def test_a_principal_has_a_quota_on_disk(small_db_template: Path, tmp_path: Path, clock: FakeClock) -> None:
    svc = make_service(small_db_template, tmp_path, clock)
    try:
        one = svc.export({"query": SMALL, "format": "csv"}, principal=ALICE)
        size = svc.exports.usage("alice")
        assert abs(size - one["size_mb"] * 1_000_000) <= 500
    finally:
        svc.close()
    svc = make_service(small_db_template, tmp_path / "b", clock, principal_export_bytes=int(size * 2.5))
    try:
        svc.export({"query": SMALL, "format": "csv"}, principal=ALICE)
        svc.export({"query": SMALL, "format": "csv"}, principal=ALICE)
        with pytest.raises(ToolError) as info:
            svc.export({"query": SMALL, "format": "csv"}, principal=ALICE)
        assert info.value.code == "EXPORT_QUOTA_EXCEEDED"
        assert info.value.details["scope"] == "principal"
        assert info.value.details["used_bytes"] == 2 * size
        assert len(list(svc.exports.directory.glob("*.csv"))) == 2
        # Another principal has its own quota.
        assert svc.export({"query": SMALL, "format": "csv"}, principal=BOB)["rows"] > 0
        # Expired exports no longer count.
        clock.advance(svc.limits.export_ttl_s + 1)
        assert svc.exports.usage("alice") == 0
        assert svc.export({"query": SMALL, "format": "csv"}, principal=ALICE)["rows"] > 0
    finally:
        svc.close()


def test_the_limits_are_published(service: AnalyticsService) -> None:
    limits = service.schema()["limits"]
    assert limits["export_max_bytes"] == 100_000_000
    assert limits["principal_export_bytes"] == 500_000_000
