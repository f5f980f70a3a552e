"""household on a real cluster (issue 17 item 7): PostgreSQL, Redis, two instances behind nginx.

(d) a chart rendered through one instance is served by the other (the chart cache is shared through Redis);
(e) imports from both instances at once, with duplicate searches and reads in between, lose no row and store
none twice: the table's rows, counted and checksummed, are exactly the rows of the export files.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from deploy.cluster import REPO, Cluster
from handlers.household.core.csvfile import read_tuples
from handlers.household.core.importer import find_files, source_id
from kumitate.storage import engine as engines
from tests.household.conftest import row, write_export

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.anyio]

ROWS = (
    "source_file, row_number, date, amount, description, category_major, category_minor, account, memo, "
    "is_target, is_transfer, external_id"
)


def instances(cluster: Cluster) -> list[str]:
    return [f"http://127.0.0.1:{port}" for port in cluster.ports.instances]


async def test_a_chart_rendered_by_one_instance_is_served_by_the_other(cluster: Cluster) -> None:
    one, other = instances(cluster)
    async with httpx.AsyncClient(timeout=120) as http:
        for render, serve, kind in ((one, other, "pie"), (other, one, "bar")):
            body = {"year": 2024, "month": 5, "output_format": "image", "graph_type": kind}
            made = await http.post(f"{render}/v1/household/get_monthly_household", json=body)
            assert made.status_code == 200, made.text
            chart = made.json()["chart"]
            assert chart["url"].startswith(cluster.url)  # the public URL is the load balancer's
            served = await http.get(f"{serve}/api/charts/{chart['chart_id']}")
            assert served.status_code == 200, served.text
            assert served.headers["content-type"] == "image/png" and served.content.startswith(b"\x89PNG")
            assert hashlib.sha256(served.content).hexdigest()[:32] == chart["chart_id"]
            through = await http.get(chart["url"])  # and through the balancer, whichever instance it picks
            assert through.status_code == 200 and through.content == served.content


def month_rows(year: int, month: int, count: int) -> list[list[str]]:
    """`count` purchases of one month, every other one with an exporter's ID (both identities are exercised)."""
    return [
        row(
            f"{year}/{month:02d}/{n % 28 + 1:02d}",
            -(100 + n),
            "食費",
            "食料品",
            content=f"店{n}",
            rid=f"c{year}{month:02d}-{n}" if n % 2 else "",
        )
        for n in range(count)
    ]


def expected_rows(exports: Path) -> list[tuple[Any, ...]]:
    """Every row of every export file both instances read (the bundled samples and the shared folder)."""
    sample_dir = REPO / "data" / "household"
    out: list[tuple[Any, ...]] = []
    for path in find_files([sample_dir, exports]):
        rows, errors = read_tuples(path)
        assert not errors, errors
        out += [(source_id(path, sample_dir), *r) for r in rows]
    return sorted(out)


def stored_rows(database_url: str) -> tuple[list[tuple[Any, ...]], int, int]:
    """(transactions as rows, duplicate checks, distinct pairs among them), straight from PostgreSQL."""
    engine = create_engine(engines.database_url(database_url, Path(".")))
    try:
        with engine.connect() as conn:
            rows = sorted(tuple(r) for r in conn.execute(text(f"SELECT {ROWS} FROM household_transactions")))
            checks, pairs = conn.execute(
                text(
                    "SELECT COUNT(*), COUNT(DISTINCT (transaction_id_1, transaction_id_2)) "
                    "FROM household_duplicate_checks"
                )
            ).one()
    finally:
        engine.dispose()
    return rows, int(checks), int(pairs)


def checksum(rows: list[tuple[Any, ...]]) -> str:
    return hashlib.sha256(repr(rows).encode()).hexdigest()


async def test_imports_from_both_instances_at_once_lose_no_row_and_store_none_twice(cluster: Cluster) -> None:
    exports = cluster.dir / "household-exports"
    one, other = instances(cluster)
    async with httpx.AsyncClient(timeout=300) as http:

        async def call(base: str, tool: str, body: dict[str, Any]) -> httpx.Response:
            return await http.post(f"{base}/v1/household/{tool}", json=body)

        for rnd in range(3):
            for month in (2 * rnd + 1, 2 * rnd + 2):
                write_export(exports, f"2040-{month:02d}-01_2040-{month:02d}-28", month_rows(2040, month, 120))
            if rnd == 2:  # a re-export of the first month: a new row on top, one amount edited
                first = month_rows(2040, 1, 120)
                first[3][3] = "-9999"
                write_export(exports, "2040-01-01_2040-01-28", [row("2040/01/28", -1, "食費", "外食"), *first])
            calls = [call(base, "import_household_data", {}) for base in (one, other, one, other, cluster.url)]
            calls += [call(base, "detect_duplicates", {"date_tolerance_days": 1}) for base in (one, other)]
            calls += [call(base, "get_monthly_household", {"year": 2024, "month": 5}) for base in (one, other)]
            responses = await asyncio.gather(*calls)
            assert [r.status_code for r in responses] == [200] * len(calls), [r.text for r in responses]
            imported = sum(r.json()["total_imported"] for r in responses[:5])
            assert imported == (241 if rnd == 2 else 240)  # each new row stored by exactly one of the imports
        last = await call(cluster.url, "import_household_data", {})
        assert last.json()["total_imported"] == 0
        detected = (await call(one, "detect_duplicates", {"date_tolerance_days": 1})).json()

    rows, checks, pairs = stored_rows(cluster.database_url)
    expected = expected_rows(exports)
    assert (len(rows), checksum(rows)) == (len(expected), checksum(expected))
    assert last.json()["total_transactions"] == len(expected)
    assert checks == pairs == detected["stored_candidates"] and detected["new_candidates"] == 0
