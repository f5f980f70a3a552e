"""Exports and views across instances and restarts (issue 17 item 5), on SQLite and PostgreSQL.

Each "instance" is an AnalyticsService with its own DuckDB file and its own database engine (as
separate processes have), sharing one export directory and one database.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from handlers.analytics.core.service import AnalyticsService, Limits
from kumitate.context import Principal
from kumitate.errors import ToolError

from .conftest import FakeClock, OwnedService, open_setup

ALICE = Principal("alice", frozenset({"analytics"}))
BOB = Principal("bob", frozenset({"analytics"}))
RUNS = "SELECT activity_id, distance_km FROM activities ORDER BY 1"


class Instances:
    """Start, restart and stop instances on one shared directory and database."""

    def __init__(self, template: Path, root: Path, url: str | None, clock: FakeClock) -> None:
        self.template, self.root, self.url, self.clock = template, root, url, clock
        self.shared = root / "shared-exports"
        self.running: list[AnalyticsService] = []

    def start(self, name: str, **limits: object) -> AnalyticsService:
        """An instance with its own DuckDB file and its own engine on the shared database."""
        service_dir = self.root / name
        service_dir.mkdir(parents=True, exist_ok=True)
        if not (service_dir / "activities.duckdb").exists():
            shutil.copy(self.template, service_dir / "activities.duckdb")
        setup = open_setup(self.root, KUMITATE_DATABASE_URL=self.url or "")
        service = OwnedService(
            setup,
            service_dir,
            limits=Limits(**limits),  # type: ignore[arg-type]
            clock=self.clock,
            export_dir=self.shared,
        )
        self.running.append(service)
        return service

    def stop(self, service: AnalyticsService) -> None:
        if service in self.running:
            self.running.remove(service)
            service.close()

    def stop_all(self) -> None:
        for service in list(self.running):
            self.stop(service)


@pytest.fixture
def instances(
    small_db_template: Path,
    tmp_path: Path,
    clock: FakeClock,
    database_url: str | None,
) -> Iterator[Instances]:
    running = Instances(small_db_template, tmp_path, database_url, clock)
    yield running
    running.stop_all()


def test_an_export_made_on_one_instance_is_served_by_the_other(instances: Instances, clock: FakeClock) -> None:
    one, two = instances.start("one"), instances.start("two")
    result = one.export({"query": RUNS, "format": "csv"}, principal=ALICE)
    data, mime = two.read_export(result["handle"], ALICE)
    assert mime == "text/csv" and data == one.read_export(result["handle"], ALICE)[0]
    assert data.decode().startswith("activity_id,distance_km")
    # Still bound to its creator on every instance.
    with pytest.raises(ToolError) as info:
        two.read_export(result["handle"], BOB)
    assert info.value.code == "EXPORT_NOT_FOUND"
    # The same TTL everywhere: expired on one is gone on both, and the files go.
    clock.advance(one.limits.export_ttl_s)
    for instance in (two, one):
        with pytest.raises(ToolError) as gone:
            instance.read_export(result["handle"], ALICE)
        assert gone.value.code == "EXPORT_NOT_FOUND"
    assert not list(instances.shared.glob(f"{result['handle']}*"))


def test_a_view_made_on_one_instance_is_used_and_dropped_on_the_other(instances: Instances, clock: FakeClock) -> None:
    one, two = instances.start("one"), instances.start("two")
    made = one.materialize({"name": "runs", "query": RUNS, "ttl_seconds": 120})
    assert made["view"] == "mat_runs"
    assert two.profile({"table_or_query": "mat_runs"})["row_count"] == made["rows"]
    assert two.export({"query": "SELECT count(*) AS n FROM mat_runs"})["rows"] == 1
    assert [v["view"] for v in two.schema()["materialized"]] == ["mat_runs"]
    # Replaced on the second instance: the first reads the new data.
    again = two.materialize({"name": "runs", "query": "SELECT 1 AS one"})
    assert again["replaced"] is True
    assert one.profile({"table_or_query": "mat_runs"})["columns"]["one"]["max"] == 1
    # Dropped on the first: gone on the second.
    assert one.drop_materialized({"view": "runs"}) == {"view": "mat_runs", "dropped": True}
    with pytest.raises(ToolError) as info:
        two.profile({"table_or_query": "mat_runs"})
    assert info.value.code == "NOT_FOUND"
    assert two.schema()["materialized"] == [] and not list((instances.shared / "views").iterdir())


def test_the_view_limit_and_ttl_hold_across_instances(instances: Instances, clock: FakeClock) -> None:
    one, two = instances.start("one", max_views=3), instances.start("two", max_views=3)
    for i, instance in enumerate((one, two, one)):
        instance.materialize({"name": f"v{i}", "query": f"SELECT {i} AS i", "ttl_seconds": 60 + i * 60})
        clock.advance(1)
    assert two.materialize({"name": "v3", "query": "SELECT 3 AS i"})["evicted"] == ["mat_v0"]
    assert [v["view"] for v in one.schema()["materialized"]] == ["mat_v1", "mat_v2", "mat_v3"]
    clock.advance(119)  # now +122 s: mat_v1 (made at +1 s, ttl 120 s) has expired, mat_v2 (+2 s, 180 s) not
    assert [v["view"] for v in two.schema()["materialized"]] == ["mat_v2", "mat_v3"]
    with pytest.raises(ToolError):
        one.profile({"table_or_query": "mat_v1"})


def test_exports_and_views_survive_a_restart(instances: Instances, clock: FakeClock) -> None:
    first = instances.start("one")
    handle = first.export({"query": RUNS}, principal=ALICE)["handle"]
    first.materialize({"name": "kept", "query": RUNS})
    before = first.profile({"table_or_query": "mat_kept"})
    instances.stop(first)

    again = instances.start("one")
    assert again.read_export(handle, ALICE)[0][:4] == b"PAR1"
    assert again.profile({"table_or_query": "mat_kept"}) == before
    assert [v["view"] for v in again.schema()["materialized"]] == ["mat_kept"]
    assert again.drop_materialized({"view": "kept"})["dropped"] is True


def test_a_principal_quota_holds_across_instances(instances: Instances, clock: FakeClock) -> None:
    """Bytes in flight on one instance count on the other: concurrent exports cannot overrun the quota."""
    probe = instances.start("probe")
    probe.export({"query": RUNS, "format": "csv"}, principal=BOB)
    size = probe.exports.usage("bob")
    instances.stop(probe)
    quota = int(size * 3.5)
    one = instances.start("one", principal_export_bytes=quota, export_max_bytes=int(size * 1.2))
    two = instances.start("two", principal_export_bytes=quota, export_max_bytes=int(size * 1.2))

    def export(i: int) -> str:
        try:
            (one, two)[i % 2].export({"query": RUNS, "format": "csv"}, principal=ALICE)
            return "ok"
        except ToolError as error:
            return error.code

    with ThreadPoolExecutor(max_workers=6) as pool:
        outcomes = list(pool.map(export, range(6)))
    assert set(outcomes) <= {"ok", "EXPORT_QUOTA_EXCEEDED"}
    assert 1 <= outcomes.count("ok") <= 3, outcomes
    assert one.exports.usage("alice") <= quota and two.exports.usage("alice") == one.exports.usage("alice")
