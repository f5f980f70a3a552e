"""Typed settings (issue 19.4): every runtime variable parsed once, errors name the variable, services
declare theirs the same way, and the app takes its settings instead of reading the environment."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

import kumitate.settings as settings_module
from kumitate.settings import ServiceSettings, Settings, var
from tests.conftest import REPO


def test_variables_are_typed_and_lists_are_comma_separated(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {
            "KUMITATE_DATA_DIR": str(tmp_path),
            "KUMITATE_ALLOWED_HOSTS": "a.example, b.example,",
            "KUMITATE_WORKER_THREADS": "8",
            "KUMITATE_MCP_STATELESS": "1",
            "KUMITATE_TOKENS": '{"s3cret": {"principal": "p"}}',
            "KUMITATE_MAX_TIMEOUT_MS": "",  # empty is unset
            "UNRELATED": "x",
        }
    )
    assert settings.data_dir == tmp_path and settings.sample_dir == REPO / "data"
    assert settings.allowed_hosts == ("a.example", "b.example")
    assert (settings.worker_threads, settings.mcp_stateless, settings.max_timeout_ms) == (8, True, None)
    assert "s3cret" not in repr(settings)  # secrets stay out of logs and tracebacks
    assert settings.env["UNRELATED"] == "x"  # what a service's own settings are read from


def test_the_command_line_wins_over_the_environment_and_sets_the_public_base_url() -> None:
    settings = Settings.from_env({"HOST": "0.0.0.0", "PORT": "1"}, host="::1", port=9000)
    assert (settings.host, settings.port, settings.public_base_url) == ("::1", 9000, "http://[::1]:9000")
    public = Settings.from_env({"KUMITATE_PUBLIC_URL": "https://tools.example.org/"})
    assert public.public_base_url == "https://tools.example.org"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("KUMITATE_WORKERS", "0"),
        ("KUMITATE_WORKER_THREADS", "many"),
        ("KUMITATE_DB_MIGRATE", "sometimes"),
        ("KUMITATE_LOG_FORMAT", "xml"),
        ("KUMITATE_OAUTH_LEEWAY_S", "-1"),
        ("PORT", "70000"),
    ],
)
def test_an_invalid_value_names_its_variable(name: str, value: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Settings.from_env({name: value})
    assert [error["loc"] for error in caught.value.errors()] == [(name,)]


def test_a_service_declares_its_own_settings_the_same_way() -> None:
    class DemoSettings(ServiceSettings):
        deadline_ms: int = var("DEMO_DEADLINE_MS", 8000, "how long the demo waits", ge=1)

    runtime_settings = Settings.from_env({"DEMO_DEADLINE_MS": "250"})
    assert DemoSettings.from_env(runtime_settings.env).deadline_ms == 250
    assert DemoSettings.variables() == [("DEMO_DEADLINE_MS", "`8000`", "how long the demo waits")]


def test_the_app_takes_its_settings_not_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A small body cap given in the settings applies although the environment says otherwise."""
    import asyncio

    from kumitate.app import create_app

    monkeypatch.setenv("KUMITATE_MAX_REQUEST_BYTES", str(64 * 1024 * 1024))
    settings = Settings.from_env({"KUMITATE_DATA_DIR": str(tmp_path), "KUMITATE_MAX_REQUEST_BYTES": "1000"})
    app = create_app(settings, ["attendance"])

    async def post() -> int:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            body = b'{"name": "' + b"x" * 5000 + b'"}'
            response = await client.post(
                "/v1/attendance/invitee_key", content=body, headers={"content-type": "application/json"}
            )
            return response.status_code

    try:
        assert asyncio.run(post()) == 413
    finally:
        app.runtime.close()


def test_settings_from_a_mapping_read_nothing_from_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test's dict (or a service's setup) is the whole environment: no gap is filled from os.environ."""
    monkeypatch.setenv("PORT", "1234")
    monkeypatch.setenv("KUMITATE_DATABASE_URL", "postgresql+psycopg://nobody@127.0.0.1:1/none")
    settings = Settings.from_env({})
    assert settings.port == 8000
    assert settings.database_url is None
    assert Settings.from_env().port == 1234


GROUPS = (
    settings_module.DeploySettings,
    settings_module.ServingSettings,
    settings_module.HttpEdgeSettings,
    settings_module.AuthSettings,
    settings_module.LimitSettings,
    settings_module.TaskSettings,
    settings_module.McpSettings,
    settings_module.ObservabilitySettings,
)


def test_settings_is_its_config_groups_each_variable_in_exactly_one() -> None:
    """`Settings` is made of the groups (kumitate/settings/): every variable is declared by exactly one,
    none besides, and the table (`Settings.variables()`) lists them group after group."""
    per_group = [[name for name, _, _ in group.variables()] for group in GROUPS]
    flat = [name for names in per_group for name in names]
    assert len(flat) == len(set(flat))
    assert [name for name, _, _ in Settings.variables()] == flat
    assert {"HOST", "KUMITATE_DATABASE_URL", "KUMITATE_HTTP_MAX_HEADERS", "KUMITATE_MCP_LEAN"} <= set(flat)


def test_a_config_group_reads_its_own_variables_alone(tmp_path: Path) -> None:
    """A part of the runtime that reads one concern can take its group: read alone, it validates the same."""
    edge = settings_module.HttpEdgeSettings.from_env(
        {"KUMITATE_HTTP_MAX_HEADERS": "50", "KUMITATE_ALLOWED_HOSTS": "a,b"}
    )
    assert (edge.http_max_headers, edge.allowed_hosts) == (50, ("a", "b"))
    limits = settings_module.LimitSettings.from_env({"KUMITATE_SERVICE_WORKER_THREADS": "stays=3"})
    assert (limits.threads_for("stays"), limits.threads_for("yana"), limits.in_flight_for("stays")) == (3, 16, 48)
    with pytest.raises(ValidationError, match="KUMITATE_SERVICE_WORKER_THREADS"):
        settings_module.LimitSettings.from_env({"KUMITATE_SERVICE_WORKER_THREADS": "stays=0"})
    serving = settings_module.ServingSettings.from_env({"KUMITATE_DATA_DIR": str(tmp_path), "HOST": "::1"})
    assert (serving.data_dir, serving.public_base_url) == (tmp_path, "http://[::1]:8000")
