"""`kumitate diff`: the golden corpus (one case per rule), renames, exceptions, exit codes, git refs."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from kumitate.review import RULES, cli, report
from kumitate.review.diff import Review, review
from kumitate.review.loader import load_side
from kumitate.review.rules import load_exceptions
from tests.review.support import CASES, COMMON, CORPUS, build, build_case, expected


def _review(base: Path, head: Path, tmp: Path) -> Review:
    head_side = load_side(str(head), tmp / "m-head")
    base_side = load_side(str(base), tmp / "m-base")
    exceptions, problems = load_exceptions(head_side.specs_dir)
    return review(base_side.tree, head_side.tree, exceptions, "base", "head", problems)


def test_corpus_is_there() -> None:
    assert len(CASES) >= 40


@pytest.mark.parametrize("case", CASES)
def test_case(case: str, tmp_path: Path) -> None:
    exp = expected(case)
    base, head = build_case(case, tmp_path)
    result = _review(base, head, tmp_path)
    assert result.base_problems == [] and result.head_problems == [], "the corpus trees must load cleanly"
    got = sorted((f.rule, f.severity, f.subject) for f in result.findings)
    want = sorted((f["rule"], f["severity"], f["subject"]) for f in exp["findings"])
    shown = "\n".join(f"{f.rule} {f.severity} {f.subject}: {f.detail}" for f in result.findings)
    assert got == want, f"{case} ({exp['why']}):\n{shown}"
    for f in exp["findings"]:
        assert RULES[f["rule"]].severity == f["severity"], f"{case}: {f['rule']} is {RULES[f['rule']].severity}"
    assert result.exit_code == exp["exit"], f"{case}: exit {result.exit_code}\n{report.render(result)}"


def test_every_rule_has_a_case() -> None:
    covered = {f["rule"] for case in CASES for f in expected(case)["findings"]}
    assert sorted(set(RULES) - covered) == []
    assert sorted(covered - set(RULES)) == []


def test_cli_exit_codes_and_markdown(tmp_path: Path) -> None:
    for case, code in (("output_field_added", 0), ("input_field_removed", 1), ("breaking_with_exception", 0)):
        base, head = build_case(case, tmp_path / case)
        out = tmp_path / f"{case}.md"
        assert cli.run(str(base), str(head), output=out) == code, out.read_text(encoding="utf-8")
    text = (tmp_path / "input_field_removed.md").read_text(encoding="utf-8")
    assert text.startswith("## Spec review: ")
    assert "**FAIL**: breaking changes without a major version or an exception in `demo`" in text.splitlines()[2]
    assert "| `INPUT_FIELD_NO_DELETE` | HTTP+MCP | **breaking** | input `lang` removed |" in text
    assert "| `PY_FIELD_NO_DELETE` | Python API | **breaking** | `LookupInput.lang` removed |" in text
    assert "needs version 2.0.0 or base path /v2/" in text
    excused = (tmp_path / "breaking_with_exception.md").read_text(encoding="utf-8")
    assert "breaking (excepted: lang was never read by the handler" in excused
    assert excused.splitlines()[2].startswith("**PASS**")


def test_cli_json_and_specs_dir_input(tmp_path: Path) -> None:
    base, head = build_case("output_enum_value_added", tmp_path)
    out = tmp_path / "r.json"
    # a specs directory itself works as well as a directory holding specs/
    assert cli.run(str(base / "specs"), str(head), fmt="json", output=out) == 1
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert not doc["ok"] and doc["services"]["demo"]["unexcused"] == 1
    assert [f["rule"] for f in doc["findings"]] == ["OUTPUT_ENUM_VALUE_ADDED"]


def test_no_changes_passes(tmp_path: Path) -> None:
    base, head = build(tmp_path / "a"), build(tmp_path / "b")
    out = tmp_path / "r.md"
    assert cli.run(str(base), str(head), output=out) == 0
    assert "**PASS**: no surface changes" in out.read_text(encoding="utf-8")


def test_unreadable_side_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert cli.run(str(tmp_path / "empty"), str(build(tmp_path / "b"))) == 2
    assert "neither a specs directory" in capsys.readouterr().err


def test_rename_is_one_breaking_rename_not_remove_and_add(tmp_path: Path) -> None:
    base, head = build_case("tool_renamed", tmp_path)
    result = _review(base, head, tmp_path)
    rules = [f.rule for f in result.findings]
    assert "TOOL_NO_DELETE" not in rules and "TOOL_ADDED" not in rules
    assert "TOOL_RENAMED" in rules and result.exit_code == 1
    models = sorted(f.detail for f in result.findings if f.rule == "PY_MODEL_RENAMED")
    assert models == ["model `TagItemInput` → `LabelItemInput`", "model `TagItemOutput` → `LabelItemOutput`"]


def test_rename_exception_covers_what_the_rename_causes(tmp_path: Path) -> None:
    base, head = build_case("tool_renamed", tmp_path)
    exceptions = [
        {"rule": "TOOL_RENAMED", "tool": "label_item", "reason": "tag_item reads as a tag store; no client yet"}
    ]
    (head / "specs" / "review-exceptions.yaml").write_text(yaml.safe_dump(exceptions), encoding="utf-8")
    result = _review(base, head, tmp_path)
    assert all(f.excused for f in result.findings if f.severity == "breaking")
    assert result.exit_code == 0 and result.unused_exceptions == []


def test_without_renamed_from_a_rename_is_remove_plus_add(tmp_path: Path) -> None:
    base, head = build_case("tool_renamed", tmp_path)
    tool = head / "specs" / "demo" / "tools" / "label_item.yaml"
    doc = yaml.safe_load(tool.read_text(encoding="utf-8"))
    del doc["renamed_from"]
    tool.write_text(yaml.safe_dump(doc), encoding="utf-8")
    rules = sorted(f.rule for f in _review(base, head, tmp_path).findings)
    assert rules == ["TOOL_ADDED", "TOOL_NO_DELETE"]


def test_exception_for_another_tool_does_not_apply_and_is_reported_unused(tmp_path: Path) -> None:
    base, head = build_case("input_field_removed", tmp_path)
    exceptions = [{"rule": "INPUT_FIELD_NO_DELETE", "tool": "tag_item", "reason": "wrong tool"}]
    (head / "specs" / "review-exceptions.yaml").write_text(yaml.safe_dump(exceptions), encoding="utf-8")
    result = _review(base, head, tmp_path)
    assert result.exit_code == 1 and [e.tool for e in result.unused_exceptions] == ["tag_item"]
    assert "Exceptions that matched nothing" in report.render(result)


def test_invalid_exception_entries_fail(tmp_path: Path) -> None:
    base, head = build_case("exception_without_reason", tmp_path)
    result = _review(base, head, tmp_path)
    assert result.exception_problems == [
        "specs/review-exceptions.yaml#/0: the exception for INPUT_FIELD_NO_DELETE on lookup has no reason"
    ]
    (head / "specs" / "review-exceptions.yaml").write_text("- {rule: NO_SUCH_RULE, tool: lookup, reason: x}\n")
    assert "unknown rule 'NO_SUCH_RULE'" in _review(base, head, tmp_path / "2").exception_problems[0]


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.strip()


def test_git_refs(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    build(repo)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    lookup = repo / "specs" / "demo" / "tools" / "lookup.yaml"
    doc = yaml.safe_load(lookup.read_text(encoding="utf-8"))
    doc["output"]["properties"]["took_ms"] = {"type": "integer", "description": "Time taken."}
    lookup.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    _git(repo, "commit", "-q", "-am", "head: a new output field")
    out = tmp_path / "r.md"
    assert cli.run("main~1", "main", repo=repo, output=out) == 0
    text = out.read_text(encoding="utf-8")
    assert "## Spec review: `main~1` → `main`" in text and "`OUTPUT_FIELD_ADDED`" in text
    # the other way round the field disappears: breaking
    assert cli.run("main", "main~1", repo=repo, output=out) == 1
    assert "`OUTPUT_FIELD_NO_DELETE`" in out.read_text(encoding="utf-8")
    # a ref against a working directory, and a bad ref
    assert cli.run("main~1", str(repo), repo=repo, output=out) == 0
    assert cli.run("no-such-ref", "main", repo=repo, output=out) == 2


def test_git_ref_without_meta_borrows_heads(tmp_path: Path) -> None:
    """An old commit may predate specs/_meta; the base then uses HEAD's meta-schemas."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    (repo / "specs").mkdir(parents=True)
    shutil.copytree(COMMON, repo / "specs", dirs_exist_ok=True)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "no meta")
    head = build(tmp_path / "head", CORPUS / "tool_added" / "head")
    out = tmp_path / "r.md"
    assert cli.run("main", str(head), repo=repo, output=out) == 0
    assert "`TOOL_ADDED`" in out.read_text(encoding="utf-8")


def test_add_parser_wires_into_a_parent_cli(tmp_path: Path) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="kumitate")
    cli.add_parser(parser.add_subparsers(dest="command", required=True))
    base, head = build_case("description_changed", tmp_path)
    args = parser.parse_args(["diff", str(base), str(head), "-o", str(tmp_path / "r.md")])
    assert args.run(args) == 0
    assert "`DESCRIPTION_CHANGED`" in (tmp_path / "r.md").read_text(encoding="utf-8")
