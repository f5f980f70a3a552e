"""Build the spec trees of the review corpus (tests/fixtures/review).

Each case is `<case>/{base,head}/` overlays on `_common/` (errors.yaml + the `demo` service) and
`<case>/expected.yaml` (why, exit, findings: [{rule, severity, subject}], optional
remove_from_head / remove_from_base). The repository's specs/_meta is copied in at test time.
"""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path
from typing import Any

from codegen.refs import parse_yaml

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "fixtures" / "review"
COMMON = CORPUS / "_common"
META = REPO / "specs" / "_meta"

CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "expected.yaml").is_file())


@cache
def expected(case: str) -> dict[str, Any]:
    """The case's expected.yaml (read once: every test of a case and test_every_rule_has_a_case read it)."""
    doc = parse_yaml((CORPUS / case / "expected.yaml").read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def build(dest: Path, overlay: Path | None = None, remove: list[str] | tuple[str, ...] = ()) -> Path:
    """dest/specs = _common + overlay - removed paths + specs/_meta; returns dest (which holds specs/)."""
    specs_dir = dest / "specs"
    shutil.copytree(COMMON, specs_dir)
    shutil.copytree(META, specs_dir / "_meta")
    if overlay is not None and overlay.is_dir():
        for path in sorted(overlay.rglob("*")):
            if path.is_file():
                target = specs_dir / path.relative_to(overlay)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
    for rel in remove:
        target = specs_dir / rel
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()
    return dest


def build_case(case: str, tmp: Path) -> tuple[Path, Path]:
    exp = expected(case)
    base = build(tmp / "base", CORPUS / case / "base", exp.get("remove_from_base", []))
    head = build(tmp / "head", CORPUS / case / "head", exp.get("remove_from_head", []))
    return base, head
