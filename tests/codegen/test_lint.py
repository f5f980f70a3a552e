"""The loader and the lint rules, on the synthetic base tree and one negative fixture per case.

Every negative case is `tests/fixtures/specs/negative/<RULE>/<case>/`: the files there overlay
a copy of the base tree, and `expect.yaml` names the rule and the problems (file, JSON pointer,
optionally a message fragment) it must produce. A case may report only its own rule.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codegen import lint, specs
from tests.codegen.support import BASE, NEGATIVE, make_tree, negative_cases, read_expect, run_codegen

CASES = negative_cases()


def _lint_tree(specs_dir: Path) -> list[specs.Problem]:
    return lint.lint(specs.load(specs_dir))


def test_base_tree_is_clean(tmp_path: Path) -> None:
    tree = specs.load(make_tree(tmp_path))
    assert lint.lint(tree) == []
    demo = tree.service("demo")
    assert [t.name for t in demo.tools] == ["echo", "greet"]
    assert sorted(r.name for r in demo.resources) == ["blob", "settings"]
    assert sorted(tree.errors) == ["BAD_REQUEST", "INTERNAL", "NOT_FOUND", "RATE_LIMITED"]


def test_base_tree_loads_refs_and_defaults(tmp_path: Path) -> None:
    tree = specs.load(make_tree(tmp_path))
    demo = tree.service("demo")
    echo, greet = demo.tools
    assert echo.http_method == "POST" and echo.http_path == "/v1/demo/echo"  # the defaults
    assert echo.input_schema["properties"]["times"]["default"] == 1
    # greet's $ref into types/common.json is inlined; the shared type is kept for model generation
    assert "$ref" not in str(greet.input_schema)
    assert greet.input_schema["required"] == ["name"]
    assert greet.output_schema["properties"]["text"]["type"] == "string"
    assert set(demo.types["common"]["$defs"]) == {"Person", "Greeting"}
    assert [p.name for p in specs.tool_sources(greet)] == ["greet.yaml", "common.json"]
    blob = next(r for r in demo.resources if r.name == "blob")
    assert blob.params == ["blob_id"] and not blob.is_json and blob.output_schema is None
    settings = next(r for r in demo.resources if r.name == "settings")
    assert settings.is_json and settings.output_schema is not None
    assert [ex.name for ex in greet.examples] == ["plain", "with_title", "unknown_person"]
    assert greet.examples[1].match == "subset" and greet.examples[2].error == "NOT_FOUND"


def test_every_rule_has_a_negative_fixture() -> None:
    covered = {rule for rule, _, _ in CASES}
    missing = sorted(set(lint.RULES) - covered)
    assert not missing, f"rules without a negative fixture under {NEGATIVE}: {missing}"
    unknown = sorted(covered - set(lint.RULES))
    assert not unknown, f"negative fixtures for rules that do not exist: {unknown}"


@pytest.mark.parametrize(("rule", "case", "case_dir"), CASES, ids=[f"{r}-{c}" for r, c, _ in CASES])
def test_negative_fixture_reports_exactly_its_rule(rule: str, case: str, case_dir: Path, tmp_path: Path) -> None:
    expect = read_expect(case_dir)
    assert expect["rule"] == rule, f"{case_dir}/expect.yaml names {expect['rule']}, but sits under {rule}/"
    assert expect["problems"], f"{case_dir}/expect.yaml lists no problems"
    problems = _lint_tree(make_tree(tmp_path, BASE, case_dir))
    shown = "\n".join(map(str, problems))
    for want in expect["problems"]:
        hits = [
            p
            for p in problems
            if p.rule == rule
            and p.file == want["file"]
            and p.pointer == want["pointer"]
            and want.get("message", "") in p.message
        ]
        assert hits, f"{case}: expected [{rule}] at {want['file']}#{want['pointer']}, got:\n{shown}"
    unrelated = [p for p in problems if p.rule != rule]
    assert not unrelated, f"{case}: unrelated problems:\n" + "\n".join(map(str, unrelated))


def _bad_tree(tmp_path: Path) -> Path:
    """One tree with several independent problems (different rules and files)."""
    picks = [
        ("KT000", "unparsable_json_type"),
        ("KT002", "remote_ref"),
        ("KT102", "same_name_two_services"),
        ("KT111", "path_lacks_uri_param"),
    ]
    specs_dir = make_tree(tmp_path, BASE, *(NEGATIVE / rule / case for rule, case in picks))
    # the other fixtures of these rules overlay files already taken above: edit in place instead
    settings = specs_dir / "demo" / "resources" / "settings.yaml"
    settings.write_text(
        settings.read_text(encoding="utf-8").replace("errors: [NOT_FOUND]", "errors: [GONE]"), encoding="utf-8"
    )
    echo = specs_dir / "demo" / "tools" / "echo.yaml"
    text = echo.read_text(encoding="utf-8").replace("summary: Return the given text unchanged.", 'summary: ""')
    echo.write_text(text + "deprecated:\n  since: '2025-06-01'\n  sunset: '2025-01-01'\n", encoding="utf-8")
    return specs_dir


EXPECTED_IN_BAD_TREE = {
    ("specs/demo/types/broken.json", "", "KT000"),
    ("specs/demo/tools/greet.yaml", "/input/$ref", "KT002"),
    ("specs/other/tools/echo.yaml", "/name", "KT102"),
    ("specs/demo/resources/settings.yaml", "/errors/0", "KT104"),
    ("specs/demo/tools/echo.yaml", "/summary", "KT106"),
    ("specs/demo/tools/echo.yaml", "/deprecated/sunset", "KT110"),
    ("specs/demo/resources/blob.yaml", "/http/path", "KT111"),
}


def test_all_problems_reported_in_one_run(tmp_path: Path) -> None:
    problems = _lint_tree(_bad_tree(tmp_path))
    assert {(p.file, p.pointer, p.rule) for p in problems} == EXPECTED_IN_BAD_TREE
    assert problems == sorted(problems, key=lambda p: (p.file, p.pointer, p.rule, p.message))


def test_cli_lint_prints_every_problem_and_fails(tmp_path: Path) -> None:
    specs_dir = _bad_tree(tmp_path)
    proc = run_codegen("--lint", "--specs", specs_dir)
    assert proc.returncode != 0
    lines = proc.stderr.splitlines()
    for file, pointer, rule in EXPECTED_IN_BAD_TREE:
        # file:line: [RULE] message (at /pointer): the form editors and CI logs link to
        found = [
            line
            for line in lines
            if re.match(rf"{re.escape(file)}:\d+: \[{rule}\] .+ \(at {re.escape(pointer or '/')}\)$", line)
        ]
        assert found, f"no line for {file} {pointer} {rule} in:\n{proc.stderr}"
    assert f"{len(EXPECTED_IN_BAD_TREE)} spec problem(s)" in proc.stderr
    assert not (tmp_path / "generated").exists()


def test_cli_lint_ok_on_base_tree(tmp_path: Path) -> None:
    proc = run_codegen("--lint", "--specs", make_tree(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "specs OK: 1 services, 2 tools" in proc.stdout


def test_problem_str_format() -> None:
    assert str(specs.Problem("specs/a.yaml", "/x/0", "KT104", "msg")) == "specs/a.yaml#/x/0: [KT104] msg"
    assert str(specs.Problem("specs/a.yaml", "", "KT000", "msg")) == "specs/a.yaml#/: [KT000] msg"


def test_missing_error_catalogue_is_reported(tmp_path: Path) -> None:
    specs_dir = make_tree(tmp_path)
    (specs_dir / "errors.yaml").unlink()
    problems = _lint_tree(specs_dir)
    assert any(p.rule == "KT000" and p.file == "specs/errors.yaml" for p in problems)


def test_ref_to_unparsable_file_is_reported_not_raised(tmp_path: Path) -> None:
    """Regression: a tool whose $ref target does not parse used to crash the loader."""
    specs_dir = make_tree(tmp_path)
    (specs_dir / "demo" / "types" / "common.json").write_text('{"$defs": ', encoding="utf-8")
    problems = _lint_tree(specs_dir)
    assert {(p.file, p.pointer, p.rule) for p in problems} == {
        ("specs/demo/types/common.json", "", "KT000"),
        ("specs/demo/tools/greet.yaml", "/input", "KT002"),
        ("specs/demo/tools/greet.yaml", "/output", "KT002"),
    }


def test_one_bad_catalogue_entry_does_not_hide_the_others(tmp_path: Path) -> None:
    """Regression: a malformed errors.yaml entry used to drop the whole catalogue (KT104 everywhere)."""
    specs_dir = make_tree(tmp_path)
    with (specs_dir / "errors.yaml").open("a", encoding="utf-8") as fh:
        fh.write("  lower_case:\n    status: 700\n")
    problems = _lint_tree(specs_dir)
    assert problems and {p.rule for p in problems} == {"KT001"}
    assert {p.file for p in problems} == {"specs/errors.yaml"}


def test_examples_run_in_the_declared_order_then_by_name(tmp_path: Path) -> None:
    specs_dir = make_tree(tmp_path)
    service = specs_dir / "demo" / "service.yaml"
    service.write_text(service.read_text() + "examples_order: [greet]\n")
    tree = specs.load(specs_dir)
    assert lint.lint(tree) == []
    assert [t.name for t in tree.tools_in_example_order()] == ["greet", "echo"]
    assert [t.name for t in tree.all_tools()] == ["echo", "greet"]  # the listing order is unchanged
