"""The worked examples run end to end and report their token savings."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "analytics"


@pytest.mark.parametrize(
    "script", ["interval_analysis", "anomaly_drilldown", "multi_activity_comparison", "pace_histogram"]
)
def test_example_runs_and_saves_tokens(script: str) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{script}.py")], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    saved = re.search(r"saved: ([\d.]+)% of the tokens", done.stdout)
    assert saved is not None, done.stdout
    assert float(saved.group(1)) >= 70  # the seed's acceptance bar
