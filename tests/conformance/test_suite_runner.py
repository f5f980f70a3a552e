"""codegen/conformance.py without Node: reading the suite's summary and judging it against the list."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen.conformance import (
    EXPECTED,
    REVISIONS,
    SUITES,
    TARGETS,
    Verdict,
    compare,
    judged,
    load_expected,
    parse_summary,
)

OUTPUT = """\
=== Running scenario: ping ===
=== SUMMARY ===
✓ server-initialize: 3 passed, 0 failed
✗ tools-call-image: 1 passed, 1 failed
✓ tools-list: 4 passed, 0 failed
✗ tasks-lifecycle: 2 passed, 7 failed
✗ json-schema-2020-12: 1 passed, 1 failed
Total: 10 passed, 8 failed
Not scored for 2026-07-28: 2 scenario(s) run, 2 failing. These do not affect conformance.
  ✗ tasks-lifecycle (extension)
  ✗ json-schema-2020-12 (pending)
"""


def test_summary_is_read_and_unscored_scenarios_are_set_apart() -> None:
    results, not_scored = parse_summary(OUTPUT)
    assert results == {
        "server-initialize": True,
        "tools-call-image": False,
        "tools-list": True,
        "tasks-lifecycle": False,
        "json-schema-2020-12": False,
    }
    assert not_scored == {"tasks-lifecycle": "extension", "json-schema-2020-12": "pending"}


def test_unscored_scenarios_are_judged_only_where_asked() -> None:
    results, not_scored = parse_summary(OUTPUT)
    scored = {"server-initialize": True, "tools-call-image": False, "tools-list": True}
    assert judged(results, not_scored, unscored=False) == scored
    unscored = {"tasks-lifecycle": False, "json-schema-2020-12": False}
    assert judged(results, not_scored, unscored=True) == scored | unscored
    # a scenario the suite added after a revision shipped stays unjudged everywhere
    assert judged({"x": False}, {"x": "added-after-release"}, unscored=True) == {}


def test_the_list_is_held_true_both_ways() -> None:
    results = {"a": True, "b": False, "c": False, "d": True, "e": False}
    verdict = compare(results, {"c": "why c fails", "a": "why a fails"}, {"d": "passes only because", "e": "same"})
    # b fails unlisted; a is listed and passes (stale); e is not judged but fails, so its premise is false
    assert verdict == Verdict(regressions=["b"], stale=["a"], false_premises=["e"])
    assert verdict.failed
    assert not compare(results, {"b": "x", "c": "y", "e": "z"}, {"d": "passes only because"}).failed


def test_every_listed_scenario_needs_a_reason() -> None:
    with pytest.raises(ValueError, match="mcp/2025-11-25/tools-list has no reason"):
        load_expected('mcp:\n  "2025-11-25":\n    tools-list:\n')
    with pytest.raises(ValueError, match="must map each scenario"):
        load_expected('mcp:\n  "2025-11-25":\n    - tools-list\n')
    assert load_expected('mcp:\n  "2025-11-25":\n    tools-list: "it  needs\n a fixture"\n') == {
        "mcp": {"2025-11-25": {"tools-list": "it needs a fixture"}}
    }


def test_the_expected_list_names_each_target_and_run_with_reasons() -> None:
    expected = load_expected((Path(__file__).parents[2] / EXPECTED).read_text(encoding="utf-8"))
    assert set(expected) == set(TARGETS)
    for target, (_, _, unscored) in TARGETS.items():
        runs = set(REVISIONS) | (set(SUITES) if unscored else set())
        assert set(expected[target]) - {"not_judged"} == runs
    # what the conformance service cannot pass is listed nowhere: the suite's pending scenarios pass there
    assert not any(expected["conformance"].values())
    # a not_judged scenario is one that passes by accident; its premise says so
    assert all(reason.startswith("passes only because") for reason in expected["mcp"]["not_judged"].values())
