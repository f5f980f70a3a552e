"""yana's settings (issue 19 item 4): every variable declared, typed and bounded in YanaSettings, read once
from the setup's environment, and nowhere else in handlers/yana."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO, ctx
from pydantic import ValidationError

from handlers.yana import YanaHandlers
from handlers.yana.settings import YanaSettings
from kumitate.errors import ToolError

VARIABLES = {
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_MODEL",
    "YANA_DEDUP_PHASH",
    "YANA_EXPOSE_LOGS",
    "YANA_UPLOADS_DIR",
    "YANA_INGEST_ALLOW_DIRS",
    "YANA_INGEST_URL_ALLOW",
    "YANA_INGEST_FETCH_TIMEOUT_MS",
    "YANA_LLM_DEADLINE_MS",
    "YANA_LLM_BREAKER_FAILURES",
    "YANA_LLM_BREAKER_COOLDOWN_S",
    "YANA_LLM_RESERVE_MS",
}
ENV_READ = re.compile(r"os\.environ|getenv|env\.get\(|settings\.env\b|from_env\(")


def test_every_variable_is_declared_and_described() -> None:
    rows = {name: what for name, _, what in YanaSettings.variables()}
    assert set(rows) == VARIABLES
    assert all(rows.values())


def test_defaults() -> None:
    settings = YanaSettings.from_env({})
    assert (settings.dedup_phash, settings.expose_logs, settings.llm_deadline_ms) == (4, False, 8000)
    assert (settings.ingest_allow_dirs, settings.ingest_url_allow, settings.uploads_dir) == ((), (), None)
    assert settings.openai_api_key is None


def test_values_are_parsed_and_the_key_stays_secret() -> None:
    settings = YanaSettings.from_env(
        {
            "YANA_INGEST_ALLOW_DIRS": f"/srv/a{os.pathsep} {os.pathsep}/srv/b",
            "YANA_INGEST_URL_ALLOW": "img.example.com, *.example.org,",
            "OPENAI_API_KEY": "sk-very-secret",
            "YANA_EXPOSE_LOGS": "1",
            "YANA_DEDUP_PHASH": "",  # empty is unset
        }
    )
    assert settings.ingest_allow_dirs == (Path("/srv/a"), Path("/srv/b"))
    assert settings.ingest_url_allow == ("img.example.com", "*.example.org")
    assert settings.expose_logs is True and settings.dedup_phash == 4
    assert "sk-very-secret" not in repr(settings) and "sk-very-secret" not in str(settings.model_dump())


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("YANA_DEDUP_PHASH", "lots"),
        ("YANA_DEDUP_PHASH", "65"),
        ("YANA_LLM_DEADLINE_MS", "0"),
        ("YANA_LLM_BREAKER_FAILURES", "0"),
        ("YANA_LLM_RESERVE_MS", "-1"),
        ("YANA_INGEST_FETCH_TIMEOUT_MS", "soon"),
        ("YANA_EXPOSE_LOGS", "yes"),  # the runtime serves logs://today only for exactly 1
        ("YANA_EXPOSE_LOGS", " 1"),
    ],
)
def test_a_bad_value_is_refused_naming_the_variable(name: str, value: str) -> None:
    with pytest.raises(ValidationError) as err:
        YanaSettings.from_env({name: value})
    assert name in str(err.value)


def test_the_service_reads_the_setups_environment_not_the_process(
    make_fresh: Callable[..., YanaHandlers], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("YANA_EXPOSE_LOGS", "1")
    yana = make_fresh({"YANA_EXPOSE_LOGS": "0", "YANA_DEDUP_PHASH": "9"})
    with pytest.raises(ToolError) as err:
        yana.read_logs_today(ctx())
    assert err.value.code == "NOT_FOUND"
    assert yana.phash_threshold == 9


def test_no_module_but_the_settings_reads_the_environment() -> None:
    """The server side reads its environment through settings.py only; the client (handlers/yana/client/, the
    duo-talk Speaker provider) runs in its caller's process and reads that process's own variables."""
    client = REPO / "handlers" / "yana" / "client"
    readers = [
        str(path.relative_to(REPO))
        for path in sorted((REPO / "handlers" / "yana").rglob("*.py"))
        if path.name != "settings.py"
        and not path.is_relative_to(client)
        and ENV_READ.search(path.read_text(encoding="utf-8"))
    ]
    assert readers == []
