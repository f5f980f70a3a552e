"""Agent-readiness rules (codegen/readiness.py): each rule fires on a negative case, the baseline filters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from codegen import readiness, specs
from tests.review.support import build

LOOKUP = Path("demo") / "tools" / "lookup.yaml"
TAG = Path("demo") / "tools" / "tag_item.yaml"


def _edit(specs_dir: Path, rel: Path, fn: Any) -> None:
    path = specs_dir / rel
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    fn(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _problems(specs_dir: Path) -> list[tuple[str, str, str]]:
    return [(p.rule, p.file, p.pointer) for p in readiness.lint(specs.load(specs_dir))]


def test_clean_tree(tmp_path: Path) -> None:
    assert _problems(build(tmp_path) / "specs") == []
    assert set(readiness.RULES) == {"KT201", "KT202", "KT203", "KT204", "KT205", "KT206"}


def test_kt201_when_and_when_not(tmp_path: Path) -> None:
    specs_dir = build(tmp_path) / "specs"
    _edit(
        specs_dir,
        LOOKUP,
        lambda d: d.update(description="Searches the items whose text matches the query and scores them."),
    )
    _edit(
        specs_dir,
        TAG,
        lambda d: d.update(description="項目にタグを付けます。検索には使わないでください（lookup を使う）。"),
    )
    assert _problems(specs_dir) == [("KT201", "specs/demo/tools/lookup.yaml", "/description")]
    _edit(
        specs_dir, LOOKUP, lambda d: d.update(description="Searches the items. Use it when you know words of the item.")
    )
    problems = readiness.lint(specs.load(specs_dir))
    assert len(problems) == 1 and "when not to" in problems[0].message and "when to use it (" not in problems[0].message


def test_kt202_every_input_parameter_described(tmp_path: Path) -> None:
    specs_dir = build(tmp_path) / "specs"

    def strip(d: dict[str, Any]) -> None:
        del d["input"]["properties"]["lang"]["description"]
        d["input"]["properties"]["filters"] = {
            "type": "object",
            "description": "Filters.",
            "properties": {"owner": {"type": "string"}},
        }

    _edit(specs_dir, LOOKUP, strip)
    assert _problems(specs_dir) == [
        ("KT202", "specs/demo/tools/lookup.yaml", "/input/properties/filters/properties/owner"),
        ("KT202", "specs/demo/tools/lookup.yaml", "/input/properties/lang"),
    ]


def test_kt203_enums_explained(tmp_path: Path) -> None:
    specs_dir = build(tmp_path) / "specs"
    _edit(
        specs_dir, LOOKUP, lambda d: d["input"]["properties"]["sort"].update(enum=["relevance", "date", "popularity"])
    )
    problems = readiness.lint(specs.load(specs_dir))
    assert [(p.rule, p.pointer) for p in problems] == [("KT203", "/input/properties/sort")]
    assert "'popularity'" in problems[0].message and "'date'" not in problems[0].message
    # x-enum-descriptions explains them too
    _edit(
        specs_dir,
        LOOKUP,
        lambda d: d["input"]["properties"]["sort"].update(
            {
                "description": "The order.",
                "x-enum-descriptions": {"relevance": "best first", "date": "new first", "popularity": "most used"},
            }
        ),
    )
    assert _problems(specs_dir) == []
    # oneOf const branches need a description each
    _edit(
        specs_dir,
        LOOKUP,
        lambda d: d["input"]["properties"].update(
            mode={
                "description": "How to match.",
                "oneOf": [{"const": "exact", "description": "whole words"}, {"const": "fuzzy"}],
            }
        ),
    )
    assert _problems(specs_dir) == [("KT203", "specs/demo/tools/lookup.yaml", "/input/properties/mode")]


def test_kt204_near_identical_descriptions(tmp_path: Path) -> None:
    specs_dir = build(tmp_path) / "specs"
    text = yaml.safe_load((specs_dir / LOOKUP).read_text(encoding="utf-8"))["description"]
    _edit(specs_dir, TAG, lambda d: d.update(description=text.replace("with a score", "with scores!")))
    assert _problems(specs_dir) == [("KT204", "specs/demo/tools/tag_item.yaml", "/description")]


def test_kt205_budget_through_readiness(tmp_path: Path) -> None:
    specs_dir = build(tmp_path) / "specs"
    (specs_dir / "token-budget.yaml").write_text("default: 10\n", encoding="utf-8")
    assert _problems(specs_dir) == [("KT205", "specs/demo/service.yaml", "")]


def test_baseline_filter(tmp_path: Path) -> None:
    specs_dir = build(tmp_path) / "specs"
    _edit(
        specs_dir,
        LOOKUP,
        lambda d: d.update(description="Searches the items whose text matches the query and scores them."),
    )
    found = [p for check in readiness.CHECKS for p in check(specs.load(specs_dir))]
    assert [p.rule for p in found] == ["KT201"]
    accepted = [
        {"rule": "KT201", "file": "specs/demo/tools/lookup.yaml", "pointer": "/description", "reason": "internal tool"}
    ]
    assert readiness.filter_baseline(found, accepted) == []
    # an entry without a reason accepts nothing and is itself a problem
    no_reason = [{"rule": "KT201", "file": "specs/demo/tools/lookup.yaml", "pointer": "/description"}]
    assert [(p.rule, p.pointer) for p in readiness.filter_baseline(found, no_reason)] == [
        ("KT201", "/description"),
        ("KT206", "/0"),
    ]
    # read from specs/readiness-baseline.yaml by lint()
    (specs_dir / readiness.BASELINE_FILE).write_text(yaml.safe_dump(accepted), encoding="utf-8")
    assert _problems(specs_dir) == []
    (specs_dir / readiness.BASELINE_FILE).write_text(
        yaml.safe_dump([{"rule": "KT201", "reason": "x"}]), encoding="utf-8"
    )
    assert [p.rule for p in readiness.lint(specs.load(specs_dir))] == ["KT201", "KT206"]


def test_cli(tmp_path: Path, capsys: Any) -> None:
    specs_dir = build(tmp_path) / "specs"
    assert readiness.main(["--specs", str(specs_dir)]) == 0
    _edit(
        specs_dir,
        LOOKUP,
        lambda d: d.update(description="Searches the items whose text matches the query and scores them."),
    )
    assert readiness.main(["--specs", str(specs_dir)]) == 1
    assert "specs/demo/tools/lookup.yaml#/description: [KT201]" in capsys.readouterr().err


def _kt201(specs_dir: Path, description: str) -> list[str]:
    _edit(specs_dir, LOOKUP, lambda d: d.update(description=description))
    return [p.message for p in readiness.lint(specs.load(specs_dir)) if p.rule == "KT201"]


def test_kt201_keywords_alone_do_not_pass(tmp_path: Path) -> None:
    specs_dir = build(tmp_path) / "specs"
    # "when" and "never" anywhere used to be enough
    (message,) = _kt201(specs_dir, "Returns labels when found. Never fails, even on empty input.")
    assert "when to use it" in message and "when not to" in message
    # a use sentence, but nothing about when not to
    (message,) = _kt201(specs_dir, "Returns labels when found. Use it when you know a word of the label.")
    assert "when to use it (" not in message and "when not to" in message
    # "do not" about something else is not "do not use it"
    assert _kt201(specs_dir, "Use it to find items. Do not send an empty query; it never fails.")
    # 場合 alone is no 「…に使う」
    assert _kt201(specs_dir, "見つからない場合は空のリストを返します。検索には使わないでください。")


def test_kt201_sentences_that_pass(tmp_path: Path) -> None:
    specs_dir = build(tmp_path) / "specs"
    for text in (
        "Searches the items. Use it to find items by words. Do not use it to change items.",
        "Searches the items. Use it when you know words of the item; to label one, use tag_item.",
        "Searches the items. Call it before tagging. It is not meant for bulk exports.",
        "項目を検索します。言葉で探すときに使います。タグ付けには使わないでください。",
        "Searches the items. Use for quick lookups. For labels use tag_item.",
    ):
        assert _kt201(specs_dir, text) == [], text


def test_stale_baseline_entries_are_warned(tmp_path: Path, capsys: Any) -> None:
    specs_dir = build(tmp_path) / "specs"
    (specs_dir / readiness.BASELINE_FILE).write_text(
        yaml.safe_dump(
            [
                {
                    "rule": "KT201",
                    "file": f"specs/{LOOKUP.as_posix()}",
                    "pointer": "/description",
                    "reason": "fixed since",
                }
            ]
        ),
        encoding="utf-8",
    )
    problems, stale = readiness.lint_with_stale(specs.load(specs_dir))
    assert problems == [] and [i for i, _ in stale] == [0]
    assert readiness.main(["--specs", str(specs_dir)]) == 0  # a warning, not a failure
    err = capsys.readouterr().err
    assert "warning: specs/readiness-baseline.yaml#/0: the entry for KT201" in err and "matches nothing" in err
