"""Fixtures for yana: a shared read-only service (loaded once) and fresh ones for tests that write."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # fake_upstream, helpers (any pytest import mode)

from handlers.yana import YanaHandlers, create
from kumitate.context import CallContext
from kumitate.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def make_settings(tmp: Path) -> Settings:
    return Settings(data_dir=tmp, sample_dir=REPO / "data", public_base_url="http://127.0.0.1:8000")


def ctx(tool: str = "test") -> CallContext:
    return CallContext(service="yana", tool=tool, transport="test", run_id="run-test", trace_id="trace-test")


@pytest.fixture(scope="session")
def yana(tmp_path_factory: pytest.TempPathFactory) -> YanaHandlers:
    """Template mode, bundled data only. Tests using it must not write."""
    return create(make_settings(tmp_path_factory.mktemp("yana_shared")), env={})


@pytest.fixture(scope="session")
def seeded_db(yana: YanaHandlers) -> Path:
    """The loaded bundled DB; copying it saves each fresh service the ~1 s first-start load."""
    return yana.kb.db_path


@pytest.fixture()
def make_fresh(tmp_path: Path, seeded_db: Path) -> Callable[..., YanaHandlers]:
    """Build a private service in tmp_path with the given environment."""

    def build(env: dict[str, str] | None = None) -> YanaHandlers:
        state = tmp_path / "yana"
        state.mkdir(parents=True, exist_ok=True)
        if not (state / "yana.db").exists():
            shutil.copyfile(seeded_db, state / "yana.db")
        return create(make_settings(tmp_path), env={"YANA_EXPOSE_LOGS": "1", **(env or {})})

    return build


@pytest.fixture()
def fresh(make_fresh: Callable[..., YanaHandlers]) -> YanaHandlers:
    """A private service in tmp_path (for ingest and anything that changes state)."""
    return make_fresh()
