"""`make bench` adds each run to docs/BENCHMARKS.md and keeps what is there (it used to rewrite the file)."""

from __future__ import annotations

from pathlib import Path

from bench.__main__ import DOC, MARKER, record


def test_a_run_goes_below_the_marker_newest_first_and_the_rest_is_kept(tmp_path: Path) -> None:
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text(f"# Benchmarks\n\nintro\n\n{MARKER}\n\n## stop 41 analysis\n\nkept\n", encoding="utf-8")
    record(doc, "## run one\n\nfirst")
    record(doc, "## run two\n\nsecond")
    text = doc.read_text(encoding="utf-8")
    assert text.index("intro") < text.index(MARKER) < text.index("## run two") < text.index("## run one")
    assert text.index("## run one") < text.index("## stop 41 analysis")
    assert text.endswith("## stop 41 analysis\n\nkept\n")


def test_a_file_without_the_marker_keeps_its_text_and_gets_the_run_after_it(tmp_path: Path) -> None:
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text("# Benchmarks\n\nhand-written\n", encoding="utf-8")
    record(doc, "## run")
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("# Benchmarks\n\nhand-written\n") and text.endswith(f"{MARKER}\n\n## run\n")


def test_a_first_run_writes_the_header(tmp_path: Path) -> None:
    doc = tmp_path / "BENCHMARKS.md"
    record(doc, "## run")
    assert doc.read_text(encoding="utf-8").startswith("# Benchmarks\n")


def test_the_projects_file_has_the_marker() -> None:
    assert MARKER in DOC.read_text(encoding="utf-8")
