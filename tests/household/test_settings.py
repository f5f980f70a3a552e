"""HouseholdSettings: every variable household reads, typed and checked when the service is built."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from handlers.household import create
from handlers.household.settings import MAX_STORED_CANDIDATES, HouseholdSettings
from kumitate.service import ServiceSetup
from kumitate.settings import Settings, SettingsError

from .conftest import service_env


def test_defaults() -> None:
    settings = HouseholdSettings.from_env({})
    assert settings.data_dirs == ()
    assert settings.include_samples is False
    assert settings.chart_ttl_seconds == 3600.0
    assert settings.max_candidates == MAX_STORED_CANDIDATES


def test_data_dir_is_a_pathsep_list(tmp_path: Path) -> None:
    value = os.pathsep.join([str(tmp_path / "a"), " ", "~/exports"])
    settings = HouseholdSettings.from_env({"HOUSEHOLD_DATA_DIR": value})
    assert settings.data_dirs == (tmp_path / "a", Path.home() / "exports")


def test_the_samples_are_imported_only_without_a_data_dir_or_when_asked_for(tmp_path: Path) -> None:
    samples, mine = tmp_path / "samples", tmp_path / "mine"
    assert HouseholdSettings.from_env({}).sources(samples) == [samples]
    assert HouseholdSettings.from_env({"HOUSEHOLD_DATA_DIR": str(mine)}).sources(samples) == [mine]
    both = HouseholdSettings.from_env({"HOUSEHOLD_DATA_DIR": str(mine), "HOUSEHOLD_INCLUDE_SAMPLES": "yes"})
    assert both.sources(samples) == [samples, mine]


@pytest.mark.parametrize(
    "name,value",
    [
        ("HOUSEHOLD_MAX_CANDIDATES", "0"),
        ("HOUSEHOLD_MAX_CANDIDATES", "many"),
        ("HOUSEHOLD_CHART_TTL_SECONDS", "0"),
        ("HOUSEHOLD_INCLUDE_SAMPLES", "perhaps"),
    ],
)
def test_a_bad_value_stops_the_service_naming_the_variable(tmp_path: Path, name: str, value: str) -> None:
    env = service_env(tmp_path / "var", tmp_path / "samples", **{name: value})
    setup = ServiceSetup.open("household", Settings.from_env(env))
    try:
        with pytest.raises(SettingsError, match=f"service .household.: {name}"):
            create(setup)
    finally:
        setup.close()


def test_every_variable_is_declared() -> None:
    """The README table is generated from the declarations: each has a name and a description."""
    names = [name for name, _, what in HouseholdSettings.variables() if what]
    assert names == [
        "HOUSEHOLD_DATA_DIR",
        "HOUSEHOLD_INCLUDE_SAMPLES",
        "HOUSEHOLD_CHART_TTL_SECONDS",
        "HOUSEHOLD_MAX_CANDIDATES",
    ]
