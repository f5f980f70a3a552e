"""The attendance service runs outside a source checkout: its schemas come from generated/, not specs/."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = """
from handlers.attendance.validate import rule_problems
from handlers.attendance.core.llm import output_schema
rule = {"version": "1.0", "type": "K_OF_N", "invitee_scope": {"include_invitee_keys": ["u:1", "u:2"]},
        "rule": {"k": 3, "n": 2}, "finalize_policy": {"mode": "EARLIEST_VALID"}}
print(rule_problems(rule))
print(sorted(output_schema()["$defs"])[:3])
"""


def test_validation_and_the_llm_schema_need_no_specs_directory(tmp_path: Path) -> None:
    for package in ("handlers", "generated", "kumitate"):
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=tmp_path, capture_output=True, text=True, env={"PYTHONPATH": str(tmp_path)}
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert not (tmp_path / "specs").exists()
    assert "rule.k (3) is larger than rule.n (2)" in done.stdout
    assert "ParseAttendanceIntentOutput" in done.stdout
