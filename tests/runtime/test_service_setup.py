"""ServiceSetup (issue 19.4): what a service's `create(setup)` is given. `open` gives one service its
own database and cache and `close` releases them; a runtime's setup is closed by the runtime only;
`read` builds the service's own settings from the runtime's variables, a bad value naming the
service and the variable in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from kumitate import cli
from kumitate.cache import MemoryCache
from kumitate.service import ServiceSetup, Stores
from kumitate.settings import ServiceSettings, Settings, SettingsError, var
from kumitate.storage import open_database


class DemoSettings(ServiceSettings):
    limit: int = var("DEMO_LIMIT", 10, "how many at most", ge=1)
    label: str | None = var("DEMO_LABEL", None, "what to call it")


def settings(tmp_path: Path, **env: str) -> Settings:
    return Settings.from_env({"KUMITATE_DATA_DIR": str(tmp_path / "var"), **env})


def test_open_gives_one_service_storage_that_close_releases(tmp_path: Path) -> None:
    setup = ServiceSetup.open("demo", settings(tmp_path))
    with setup.database.read() as conn:
        assert conn.execute(text("SELECT 1")).scalar() == 1
    setup.cache.set("k", b"v", ttl_s=60)
    assert setup.cache.get("k") == b"v" and isinstance(setup.cache, MemoryCache)
    assert setup.data_dir == tmp_path / "var" / "demo" and setup.data_dir.is_dir()
    assert setup.sample_dir == setup.settings.sample_dir / "demo"
    assert setup.database.engine.pool.checkedin() == 1  # the connection went back to the pool
    setup.close()
    assert setup.database.engine.pool.checkedin() == 0  # the pool is disposed
    setup.close()  # twice is harmless


def test_a_runtimes_setup_leaves_the_shared_storage_open(tmp_path: Path) -> None:
    """The runtime hands every service the same database; a service's close() must not close it."""
    runtime_settings = settings(tmp_path)
    database = open_database(runtime_settings.data_dir, runtime_settings)
    try:
        setup = ServiceSetup("demo", runtime_settings, Stores(runtime_settings, database, MemoryCache()))
        with setup.database.read() as conn:
            conn.execute(text("SELECT 1"))
        setup.close()
        assert database.engine.pool.checkedin() == 1
    finally:
        database.close()


def test_read_builds_the_services_settings_from_the_runtimes_variables(tmp_path: Path) -> None:
    setup = ServiceSetup.open("demo", settings(tmp_path, DEMO_LIMIT="3", DEMO_LABEL=""))
    try:
        demo = setup.read(DemoSettings)
        assert (demo.limit, demo.label) == (3, None)  # empty is unset
    finally:
        setup.close()


def test_a_bad_value_names_the_service_and_the_variable(tmp_path: Path) -> None:
    setup = ServiceSetup.open("demo", settings(tmp_path, DEMO_LIMIT="0"))
    try:
        with pytest.raises(SettingsError) as caught:
            setup.read(DemoSettings)
    finally:
        setup.close()
    assert str(caught.value) == "service 'demo': DEMO_LIMIT: Input should be greater than or equal to 1"


def test_the_command_line_prints_a_bad_service_setting_as_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runtime_settings = settings(tmp_path, DEMO_LIMIT="many")

    def build() -> None:
        setup = ServiceSetup.open("demo", runtime_settings)
        try:
            setup.read(DemoSettings)
        finally:
            setup.close()

    with pytest.raises(SystemExit) as exited:
        cli._start(runtime_settings, build)
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert (
        err.startswith("kumitate: service 'demo': DEMO_LIMIT: Input should be a valid integer")
        and "Traceback" not in err
    )
