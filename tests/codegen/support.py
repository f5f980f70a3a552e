"""Helpers for the codegen tests: build throw-away spec trees from the fixtures.

A tree is always assembled as `<dir>/specs/` (so problem files and generated headers read
`specs/...`) with the repository's real meta-schemas copied into `specs/_meta`: the
fixtures never carry their own copy of the meta-schemas.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
from pathlib import Path

import yaml

from codegen.__main__ import main as codegen_main

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
BASE = FIXTURES / "specs" / "base"
NEGATIVE = FIXTURES / "specs" / "negative"
GOLDEN = FIXTURES / "golden"
META = REPO / "specs" / "_meta"

EXPECT_FILE = "expect.yaml"
"""Each negative case directory holds expect.yaml next to the files it overlays."""


def copy_meta(specs_dir: Path) -> None:
    """Copy the repository's meta-schemas into `specs_dir/_meta`."""
    shutil.copytree(META, specs_dir / "_meta", dirs_exist_ok=True)


def overlay(src: Path, specs_dir: Path) -> None:
    """Write every file under `src` into `specs_dir` at the same relative path (expect.yaml excluded)."""
    for path in sorted(src.rglob("*")):
        if path.is_file() and path.relative_to(src).as_posix() != EXPECT_FILE:
            target = specs_dir / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


def make_tree(dest: Path, source: Path = BASE, *overlays: Path) -> Path:
    """Assemble `dest/specs` from `source`, the meta-schemas and the overlays; return the specs dir."""
    specs_dir = dest / "specs"
    shutil.copytree(source, specs_dir)
    copy_meta(specs_dir)
    for extra in overlays:
        overlay(extra, specs_dir)
    return specs_dir


def negative_cases() -> list[tuple[str, str, Path]]:
    """(rule, case, directory) for every negative fixture, sorted."""
    cases = []
    for rule_dir in sorted(p for p in NEGATIVE.iterdir() if p.is_dir()):
        for case_dir in sorted(p for p in rule_dir.iterdir() if p.is_dir()):
            cases.append((rule_dir.name, case_dir.name, case_dir))
    return cases


def read_expect(case_dir: Path) -> dict:
    return yaml.safe_load((case_dir / EXPECT_FILE).read_text(encoding="utf-8"))


def run_codegen(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """`python -m codegen ARGS` (its `main`) in this process, with its exit status, stdout and stderr;
    --specs (and --out unless --lint) are required. In process, codegen's imports are paid once per
    test process, not once per run (~1 s each); `make test` runs the command itself (its drift check)."""
    argv = [str(a) for a in args]
    assert "--specs" in argv, "never run codegen against the repository's own specs/ from the tests"
    assert "--out" in argv or "--lint" in argv, "never let codegen write the repository's own generated/"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = codegen_main(argv)
    return subprocess.CompletedProcess(["python", "-m", "codegen", *argv], status, out.getvalue(), err.getvalue())
