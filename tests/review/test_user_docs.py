"""The user-facing docs (README.md and docs/*.md) speak to a reader, not of the project's own history:
no issue, stop or round numbers, no "seed 000"-style brief numbers. docs/BENCHMARKS.md is left out on
purpose: its dated sections are a record of what was measured when."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import REPO

HISTORY = re.compile(r"\b(?:issues? \d+|stops? \d+|rounds? \d+|seeds? 0\d\d|milestones? \d+)\b", re.I)
RECORDS = {"BENCHMARKS.md"}


def user_pages() -> list[Path]:
    """README.md and every page under docs/ but the records."""
    docs = sorted(p for p in (REPO / "docs").glob("*.md") if p.name not in RECORDS)
    return [REPO / "README.md", *docs]


def test_no_project_history_words_in_user_docs() -> None:
    found = [
        f"{page.relative_to(REPO)}:{number}: {match.group(0)}"
        for page in user_pages()
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        for match in HISTORY.finditer(line)
    ]
    assert found == [], "\n".join(found)


def test_the_pattern_finds_history_and_leaves_fuzz_seeds_alone() -> None:
    words = ["(issue 35)", "stop 41's run", "round 4", "seed 001", "milestone 3"]
    assert all(HISTORY.search(text) for text in words)
    assert not HISTORY.search("(seed 20261122, 0 restarts) `day1-stop2` --seed 7 round trip")


def test_the_readme_starts_with_the_quick_start() -> None:
    """The first section a reader meets is the five-minute quick start, and it installs, scaffolds,
    tests, serves and calls over both transports."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## (.+)$", readme, re.M)
    assert sections[0] == "Your own tool server in five minutes"
    quick = readme.split("\n## ", 2)[1]
    for step in (
        "pip install -e",
        "pip wheel --no-deps",
        "@ git+https://",
        "kumitate init",
        "kumitate new service",
        "make test",
        "make serve",
        "curl -s",
        "--transport mcp",
    ):
        assert step in quick, step
    assert len(readme.splitlines()) <= 220, "README stays short: the rest lives under docs/"
