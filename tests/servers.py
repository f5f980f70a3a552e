"""Skipping (or, in CI, failing) tests whose real servers cannot be started here."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def unavailable(reason: str) -> NoReturn:
    """Skip with the reason; with KUMITATE_CLUSTER_REQUIRED=1 (CI installs the packages) fail instead."""
    if os.environ.get("KUMITATE_CLUSTER_REQUIRED") == "1":
        pytest.fail(f"required here (KUMITATE_CLUSTER_REQUIRED=1) but {reason}")
    pytest.skip(reason)
