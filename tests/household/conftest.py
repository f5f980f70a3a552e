"""Fixtures: small hand-written MoneyForward-style exports and a fresh household service per test."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from sqlalchemy import Row, text

from generated.household.bindings import SERVICE
from handlers.household import HouseholdHandlers, create
from kumitate.context import CallContext, bound
from kumitate.intake import Intake
from kumitate.service import ServiceSetup
from kumitate.settings import Settings
from tests.servers import fresh_pg_database

HEADER = ["計算対象", "日付", "内容", "金額（円）", "保有金融機関", "大項目", "中項目", "メモ", "振替", "ID"]


def row(
    day: str,
    amount: int,
    major: str,
    minor: str,
    *,
    content: str = "店",
    target: int = 1,
    transfer: int = 0,
    rid: str = "",
) -> list[str]:
    return [str(target), day, content, str(amount), "現金", major, minor, "", str(transfer), rid]


def write_export(
    directory: Path, name: str, rows: list[list[str]], *, header: list[str] | None = None, encoding: str = "cp932"
) -> Path:
    buf = io.StringIO()
    writer = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    writer.writerow(header or HEADER)
    writer.writerows(rows)
    path = directory / f"収入・支出詳細_{name}.csv"
    path.write_bytes(buf.getvalue().encode(encoding))
    return path


FOOD = {  # 食費 per month, hand-picked for the trend tests (15 months with data, 2024-01..2025-03)
    "2024-01": 10000,
    "2024-02": 12000,
    "2024-03": 9000,
    "2024-04": 11000,
    "2024-05": 10000,
    "2024-06": 8000,
    "2024-07": 12000,
    "2024-08": 10000,
    "2024-09": 9000,
    "2024-10": 11000,
    "2024-11": 10000,
    "2024-12": 13000,
    "2025-01": 15000,
    "2025-02": 9000,
    "2025-03": 0,
}


def trend_rows() -> dict[str, list[list[str]]]:
    """One export per month: 食費 split in two rows, 住宅 50,000 (to 2025-02), 交通費 500, plus rows that must not count."""
    files: dict[str, list[list[str]]] = {}
    for month, food in FOOD.items():
        rows = [row(f"{month.replace('-', '/')}/05", 200000, "収入", "給与")]
        if food:
            rows.append(row(f"{month.replace('-', '/')}/10", -(food - 1000), "食費", "食料品"))
            rows.append(row(f"{month.replace('-', '/')}/20", -1000, "食費", "外食"))
        if month <= "2025-02":
            rows.append(row(f"{month.replace('-', '/')}/27", -50000, "住宅", "家賃・地代"))
        rows.append(row(f"{month.replace('-', '/')}/15", -500, "交通費", "電車"))
        rows.append(row(f"{month.replace('-', '/')}/11", -30000, "現金・カード", "カード引き落とし", transfer=1))
        rows.append(row(f"{month.replace('-', '/')}/12", -7777, "食費", "食料品", target=0))
        files[month] = rows
    return files


def call_context(tool: str = "test", **fields: Any) -> CallContext:
    """A call as the pipeline makes one: the service's routes, the address served (for chart URLs)."""
    return SERVICE.direct_call(tool, **fields)


@pytest.fixture
def ctx() -> CallContext:
    return call_context()


TOOLS = {tool.name: tool for tool in SERVICE.tools}
INTAKE = Intake()


class WireCalls:
    """The service as the pipeline drives it: a tool takes JSON data (checked and turned into its generated
    input model by the pipeline's own intake: schema-invalid data is BAD_REQUEST) and answers JSON data (its
    output model dumped as the pipeline dumps it), so that the tests assert what goes on the wire.
    Everything else (`core`) is the service's own."""

    def __init__(self, handlers: HouseholdHandlers) -> None:
        self.handlers = handlers

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.handlers, name)
        tool = TOOLS.get(name)
        if tool is None and not name.startswith("read_"):
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            if tool is not None:
                data, ctx = args
                args = (INTAKE.prepare(tool, data), ctx)
            call_ctx = next(a for a in (*args, *kwargs.values()) if isinstance(a, CallContext))
            with bound(call_ctx):  # the current call, as the pipeline sets it (for url_for, progress)
                result = method(*args, **kwargs)
            return wire(result) if isinstance(result, BaseModel) else result

        return call


ENGINES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def engine_url(request: pytest.FixtureRequest, name: str) -> str:
    """'' (the embedded SQLite file) or the URL of a fresh PostgreSQL database `name`, as `request.param` says."""
    if request.param == "sqlite":
        return ""
    return fresh_pg_database(request.getfixturevalue("postgres_url"), name)


@pytest.fixture(params=ENGINES)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """'' (the embedded SQLite file under tmp_path/var) or a fresh PostgreSQL database per test."""
    return engine_url(request, tmp_path.name)


def open_service(setup: ServiceSetup) -> WireCalls:
    """The service as the runtime builds it: `create(setup)` over the setup's database and cache."""
    return WireCalls(create(setup))


def wire(model: BaseModel) -> dict[str, Any]:
    """An output model as the pipeline sends it (steps/invoke.py's dump)."""
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


def startup_report(svc: WireCalls) -> dict[str, Any]:
    """The import the service ran at its start, as import_household_data answers it on the wire."""
    report: BaseModel = svc.core.startup_report
    return wire(report)


def service_env(var: Path, samples: Path, **env: str) -> dict[str, str]:
    """The variables of a service with its state under `var` and its bundled samples in `samples`/household."""
    (samples / "household").mkdir(parents=True, exist_ok=True)
    return {"KUMITATE_DATA_DIR": str(var), "KUMITATE_SAMPLE_DIR": str(samples), **env}


def open_setup(root: Path, database_url: str, data_dir: Path | None = None, **env: str) -> ServiceSetup:
    """The setup of a service with its state under `root`, on `database_url`, reading `data_dir` (HOUSEHOLD_DATA_DIR)."""
    full_env = service_env(root / "var", root / "samples", KUMITATE_DATABASE_URL=database_url, **env)
    if data_dir is not None:
        full_env["HOUSEHOLD_DATA_DIR"] = str(data_dir)
    return ServiceSetup.open("household", Settings.from_env(full_env))


@pytest.fixture
def make_service(tmp_path: Path, database_url: str) -> Iterator[Callable[..., Any]]:
    """A service over an empty sample dir plus `data_dir` (HOUSEHOLD_DATA_DIR), state under tmp_path, on the
    engine of `database_url` (every service made in one test shares that database, as a restart would)."""
    setups: list[ServiceSetup] = []

    def _make(data_dir: Path | None = None, **env: str) -> Any:
        setups.append(open_setup(tmp_path, database_url, data_dir, **env))
        return open_service(setups[-1])

    yield _make
    for setup in setups:
        setup.close()


def sql(svc: Any, statement: str, **params: Any) -> list[Row[Any]]:
    """Run one SQL statement on the service's database, committed; the rows when it returns any."""
    with svc.core.store.database.engine.begin() as conn:
        result = conn.execute(text(statement), params)
        return list(result.all()) if result.returns_rows else []


def is_sqlite(svc: Any) -> bool:
    return svc.core.store.dialect == "sqlite"


def trend_exports(root: Path) -> Path:
    """`root`/exports with the 15-month fixture (trend_rows), one export file per month."""
    data = root / "exports"
    data.mkdir()
    for month, rows in trend_rows().items():
        write_export(data, f"{month}-01_{month}-28", rows)
    return data


@pytest.fixture
def trend_service(tmp_path: Path, make_service: Callable[..., Any]) -> Any:
    return make_service(trend_exports(tmp_path))


@pytest.fixture(scope="module", params=ENGINES)
def reading_trend_service(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """`trend_service` shared by the tests of a module that only read it (one per engine): starting a service
    (its database, the import of the fixture's exports) was most of such a test's time."""
    root = tmp_path_factory.mktemp("trends")
    module = request.module.__name__.rsplit(".", 1)[-1]
    setup = open_setup(root, engine_url(request, f"{module}_{os.getpid()}"), trend_exports(root))
    yield open_service(setup)
    setup.close()
