"""Where the docs quote the code (a signature, a default), they say what the code says."""

from __future__ import annotations

import importlib
import inspect

import pytest

from kumitate.settings import MAX_BODY_BYTES
from tests.conftest import REPO

SPEC_FORMAT = (REPO / "docs/spec-format.md").read_text(encoding="utf-8")
SERVICES = sorted(p.parent.name for p in (REPO / "specs").glob("*/service.yaml"))


def test_the_app_wide_body_cap() -> None:
    assert f"app-wide {MAX_BODY_BYTES // 2**20} MiB" in SPEC_FORMAT


@pytest.mark.parametrize("service", SERVICES)
def test_the_handlers_create_signature(service: str) -> None:
    (name, parameter), *_ = inspect.signature(importlib.import_module(f"handlers.{service}").create).parameters.items()
    annotation = parameter.annotation if isinstance(parameter.annotation, str) else parameter.annotation.__name__
    assert f"`create({name}: kumitate.service.{annotation})`" in SPEC_FORMAT
