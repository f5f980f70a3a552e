"""The worked examples run end to end and report their token savings."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "analytics"
SCRIPTS = ["interval_analysis", "anomaly_drilldown", "multi_activity_comparison", "pace_histogram"]

RUN_EACH = """
import contextlib, io, json, runpy, sys, traceback
sys.path.insert(0, sys.argv[1])  # what `python examples/analytics/<script>.py` puts first
results = {}
for script in sys.argv[2:]:
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(f"{sys.argv[1]}/{script}.py", run_name="__main__")
        results[script] = {"stdout": out.getvalue(), "error": None}
    except BaseException:
        results[script] = {"stdout": out.getvalue(), "error": traceback.format_exc()}
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, str | None]]:
    """Every example as its own `__main__`, one after the other in one fresh interpreter: polars,
    matplotlib, DuckDB and kumitate are imported once, not once per example (each example still
    opens its own service on its own copy of the sample data)."""
    done = subprocess.run(
        [sys.executable, "-c", RUN_EACH, str(EXAMPLES), *SCRIPTS], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results: dict[str, dict[str, str | None]] = json.loads(done.stdout.strip().splitlines()[-1])
    return results


@pytest.mark.parametrize("script", SCRIPTS)
def test_example_runs_and_saves_tokens(runs: dict[str, dict[str, str | None]], script: str) -> None:
    run = runs[script]
    assert run["error"] is None, run["error"]
    saved = re.search(r"saved: ([\d.]+)% of the tokens", run["stdout"] or "")
    assert saved is not None, run["stdout"]
    assert float(saved.group(1)) >= 70  # the seed's acceptance bar
