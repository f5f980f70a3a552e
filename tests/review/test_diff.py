"""`kumitate diff`: the golden corpus (one case per rule), renames, exceptions, exit codes, git refs."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from codegen.review import cli, report
from codegen.review.diff import Review, review
from codegen.review.loader import load_side
from codegen.review.rules import RULES, load_exceptions
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
    assert "#### Tool `lookup` — **FAIL**: 2 breaking change(s) not allowed" in text
    assert "MCP and HTTP+MCP changes need an exception or a new tool name" in text
    assert "Python API changes need version 2.0.0" in text
    excused = (tmp_path / "breaking_with_exception.md").read_text(encoding="utf-8")
    assert "breaking (excepted: lang was never read by the handler" in excused
    assert excused.splitlines()[2].startswith("**PASS**")
    assert "#### Tool `lookup` — OK: 2 breaking change(s), excepted" in excused
    added = (tmp_path / "output_field_added.md").read_text(encoding="utf-8")
    assert "#### Tool `lookup` — OK: non-breaking" in added


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


def test_without_renamed_from_the_same_schemas_read_as_a_suggested_rename(tmp_path: Path) -> None:
    base, head = build_case("tool_renamed", tmp_path)
    tool = head / "specs" / "demo" / "tools" / "label_item.yaml"
    doc = yaml.safe_load(tool.read_text(encoding="utf-8"))
    del doc["renamed_from"]
    tool.write_text(yaml.safe_dump(doc), encoding="utf-8")
    found = _review(base, head, tmp_path).findings
    assert sorted(f.rule for f in found) == [
        "HTTP_PATH_CHANGED",
        "PY_MODEL_RENAMED",
        "PY_MODEL_RENAMED",
        "TOOL_RENAMED",
    ]
    renamed = next(f for f in found if f.rule == "TOOL_RENAMED")
    assert "inferred" in renamed.detail and "declare `renamed_from: tag_item`" in renamed.detail
    # another schema: not the same tool, so a removal plus an addition
    doc["input"]["properties"]["note"] = {"type": "string", "description": "A note."}
    tool.write_text(yaml.safe_dump(doc), encoding="utf-8")
    rules = sorted(f.rule for f in _review(base, head, tmp_path / "2").findings)
    assert rules == ["TOOL_ADDED", "TOOL_NO_DELETE"]


def test_field_rename_in_a_nested_object_and_its_exception(tmp_path: Path) -> None:
    """A renamed field of array items reads as one rename per surface; an exception on the new name covers both."""

    def rename(doc: dict[str, Any]) -> None:
        item = doc["output"]["properties"]["items"]["items"]
        item["properties"]["relevance"] = {**item["properties"].pop("score"), "x-renamed-from": "score"}
        item["required"] = ["id", "kind", "relevance"]

    base, head = build(tmp_path / "base"), build(tmp_path / "head")
    _edit_tool(head, "lookup", rename)
    found = _review(base, head, tmp_path).findings
    assert [(f.rule, f.detail) for f in found] == [
        (
            "OUTPUT_FIELD_RENAMED",
            "output `items[].relevance` renamed from `items[].score` (declared with x-renamed-from)",
        ),
        ("PY_FIELD_RENAMED", "`LookupOutput.items[].relevance` renamed from `items[].score`"),
    ]
    _exceptions(
        head, [{"rule": "OUTPUT_FIELD_RENAMED", "tool": "lookup", "field": "items[].relevance", "reason": "clearer"}]
    )
    result = _review(base, head, tmp_path / "2")
    assert all(f.excused for f in result.findings) and result.exit_code == 0


def test_two_added_fields_of_the_same_schema_are_no_inferred_rename(tmp_path: Path) -> None:
    def fn(doc: dict[str, Any]) -> None:
        props = doc["input"]["properties"]
        schema = props.pop("lang")
        props["language"], props["locale"] = schema, dict(schema)

    base, head = build(tmp_path / "base"), build(tmp_path / "head")
    _edit_tool(head, "lookup", fn)
    rules = sorted(f.rule for f in _review(base, head, tmp_path).findings)
    assert "INPUT_FIELD_RENAMED" not in rules and "INPUT_FIELD_NO_DELETE" in rules


def test_exception_for_another_tool_does_not_apply_and_is_reported_unused(tmp_path: Path) -> None:
    base, head = build_case("input_field_removed", tmp_path)
    exceptions = [{"rule": "INPUT_FIELD_NO_DELETE", "tool": "tag_item", "reason": "wrong tool"}]
    (head / "specs" / "review-exceptions.yaml").write_text(yaml.safe_dump(exceptions), encoding="utf-8")
    result = _review(base, head, tmp_path)
    assert result.exit_code == 1 and [e.tool for e in result.unused_exceptions] == ["tag_item"]
    assert "New exceptions that matched nothing" in report.render(result)


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


def test_a_ref_that_is_not_there_is_named_with_the_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`kumitate diff main` where there is no `main` (git says nothing with --quiet): the reason is printed."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    build(repo)
    _git(repo, "init", "-q", "-b", "trunk")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    assert cli.run("main", "trunk", repo=repo, output=tmp_path / "r.md") == 2
    said = capsys.readouterr()
    assert "'main' is not a commit, branch or tag of this repository" in said.err + said.out


def test_without_head_uncommitted_spec_changes_are_reviewed(tmp_path: Path) -> None:
    """`make review` compares BASE with the working tree when specs/ has uncommitted changes, and says so."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    build(repo)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    out = tmp_path / "r.md"
    assert cli.run("main", repo=repo, output=out) == 0
    text = out.read_text(encoding="utf-8")
    assert "`main` → `HEAD`" in text and "working tree" not in text
    _edit_tool(repo, "lookup", _drop_outputs("total"))
    (repo / "specs" / "demo" / "tools" / "draft.yaml").write_text("# not yet a tool\n", encoding="utf-8")
    assert cli.run("main", "HEAD", repo=repo, output=out) == 0, "an explicit HEAD is the commit"
    assert cli.run("main", repo=repo, output=out) == 1
    text = out.read_text(encoding="utf-8")
    assert "`main` → `working tree`" in text and "`OUTPUT_FIELD_NO_DELETE`" in text
    assert "Reviewing the **working tree**" in text and "2 file(s) under specs/ differ from HEAD" in text
    assert "`specs/demo/tools/lookup.yaml`" in text
    # staged changes count too
    _git(repo, "add", "-A")
    assert cli.run("main", repo=repo, output=out, fmt="json") == 1
    assert "working tree" in json.loads(out.read_text(encoding="utf-8"))["head_note"]


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

    from kumitate.commands import add_parsers

    parser = argparse.ArgumentParser(prog="kumitate")
    add_parsers(parser.add_subparsers(dest="command", required=True))
    base, head = build_case("description_changed", tmp_path)
    args = parser.parse_args(["diff", str(base), str(head), "-o", str(tmp_path / "r.md")])
    assert args.run(args) == 0
    assert "`DESCRIPTION_CHANGED`" in (tmp_path / "r.md").read_text(encoding="utf-8")


def _edit_tool(head: Path, tool: str, fn: Any) -> None:
    path = head / "specs" / "demo" / "tools" / f"{tool}.yaml"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    fn(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _exceptions(head: Path, entries: list[dict[str, Any]]) -> None:
    (head / "specs" / "review-exceptions.yaml").write_text(yaml.safe_dump(entries), encoding="utf-8")


def _drop_outputs(*names: str) -> Any:
    def fn(doc: dict[str, Any]) -> None:
        for name in names:
            del doc["output"]["properties"][name]
            doc["output"]["required"].remove(name)
        for example in doc.get("examples", []):
            for name in names:
                example["output"].pop(name, None)

    return fn


def test_exception_field_covers_that_field_only(tmp_path: Path) -> None:
    base, head = build(tmp_path / "base"), build(tmp_path / "head")
    _edit_tool(head, "lookup", _drop_outputs("total", "items"))
    _exceptions(head, [{"rule": "OUTPUT_FIELD_NO_DELETE", "tool": "lookup", "field": "total", "reason": "unused"}])
    result = _review(base, head, tmp_path)
    excused = sorted((f.rule, f.field) for f in result.findings if f.excused)
    assert excused == [("OUTPUT_FIELD_NO_DELETE", "total"), ("PY_FIELD_NO_DELETE", "total")]
    blocking = {(f.rule, f.field) for f in result.findings if f.blocking}
    assert ("OUTPUT_FIELD_NO_DELETE", "items") in blocking and ("PY_FIELD_NO_DELETE", "items[].id") in blocking
    assert result.exit_code == 1
    # a field covers what lies under it
    _exceptions(head, [{"rule": "OUTPUT_FIELD_NO_DELETE", "tool": "lookup", "field": "items", "reason": "unused"}])
    result = _review(base, head, tmp_path / "2")
    assert {f.field for f in result.findings if f.excused} == {"items", "items[].id", "items[].kind", "items[].score"}


def test_wildcard_and_unknown_keys_are_rejected(tmp_path: Path) -> None:
    base, head = build_case("output_field_removed", tmp_path)
    _exceptions(head, [{"rule": "OUTPUT_FIELD_NO_DELETE", "tool": "*", "reason": "everything goes"}])
    result = _review(base, head, tmp_path)
    assert "wildcards are not allowed" in result.exception_problems[0]
    assert result.exit_code == 1 and not any(f.excused for f in result.findings)
    _exceptions(head, [{"rule": "OUTPUT_FIELD_NO_DELETE", "tool": "lookup", "path": "total", "reason": "x"}])
    assert "unknown key(s) path" in _review(base, head, tmp_path / "2").exception_problems[0]


def test_unused_new_exception_fails_and_carried_ones_excuse_nothing(tmp_path: Path) -> None:
    base, head = build_case("output_field_removed", tmp_path)
    ok = {"rule": "OUTPUT_FIELD_NO_DELETE", "tool": "lookup", "reason": "total was never read"}
    stale = {"rule": "INPUT_FIELD_NO_DELETE", "tool": "tag_item", "reason": "typo: nothing removed there"}
    _exceptions(head, [ok, stale])
    out = tmp_path / "r.md"
    assert cli.run(str(base), str(head), output=out) == 1
    text = out.read_text(encoding="utf-8")
    assert "exceptions that match nothing" in text.splitlines()[2]
    assert "- `INPUT_FIELD_NO_DELETE` on `tag_item`: typo" in text
    # the same exception already in BASE's file was for an earlier change: it excuses nothing now
    _exceptions(head, [ok])
    _exceptions(base, [ok])
    assert cli.run(str(base), str(head), output=out) == 1
    text = out.read_text(encoding="utf-8")
    assert "**breaking**" in text and "total was never read" not in text, "carried exceptions are not listed"
    # a new exception (another reason) for the new change is fine
    _exceptions(head, [{**ok, "reason": "total is now computed by the client"}])
    assert cli.run(str(base), str(head), output=out) == 0, out.read_text(encoding="utf-8")


def test_head_that_codegen_lint_rejects_fails(tmp_path: Path) -> None:
    base, head = build(tmp_path / "base"), build(tmp_path / "head")
    _edit_tool(head, "lookup", lambda d: d.update(description="Finds items."))
    _edit_tool(head, "tag_item", lambda d: d["mcp"]["annotations"].update(readOnlyHint=True, destructiveHint=True))
    _edit_tool(head, "tag_item", lambda d: d.pop("policy"))  # else a second KT103: a key on a read-only tool
    result = _review(base, head, tmp_path)
    assert sorted(p.rule for p in result.head_problems) == ["KT103", "KT106"]
    assert result.exit_code == 1
    out = tmp_path / "r.md"
    assert cli.run(str(base), str(head), output=out) == 1
    text = out.read_text(encoding="utf-8")
    assert "HEAD's specs do not pass codegen lint" in text.splitlines()[2]
    assert "[KT106]" in text and "[KT103]" in text


def test_renamed_from_a_tool_that_still_exists_is_a_problem(tmp_path: Path) -> None:
    base, head = build(tmp_path / "base"), build(tmp_path / "head")
    _edit_tool(head, "tag_item", lambda d: d.update(renamed_from="lookup"))
    result = _review(base, head, tmp_path)
    assert [(p.rule, p.pointer) for p in result.head_problems] == [("renamed_from", "/renamed_from")]
    assert "`lookup` still exists" in result.head_problems[0].message
    assert result.exit_code == 1


def test_json_says_what_allows_each_breaking_finding(tmp_path: Path) -> None:
    base, head = build_case("v2_major_and_mcp_exception", tmp_path)
    out = tmp_path / "r.json"
    assert cli.run(str(base), str(head), fmt="json", output=out) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    by_rule = {(f["rule"], f["subject"]): f for f in doc["findings"]}
    assert by_rule["HTTP_PATH_CHANGED", "lookup"]["allowed_by"] == "route /v1/demo/lookup → /v2/demo/lookup"
    assert by_rule["PY_FIELD_NO_DELETE", "lookup"]["allowed_by"] == "version 1.0.0 → 2.0.0"
    wire = by_rule["INPUT_FIELD_NO_DELETE", "lookup"]
    assert wire["allowed_by"] is None and wire["excused"] and wire["field"] == "lang"
    svc = doc["services"]["demo"]
    assert (svc["breaking"], svc["excused"], svc["allowed"], svc["unexcused"]) == (4, 2, 2, 0)
