"""codegen/conformance.py without Node: reading the suite's summary and judging it against the list."""

from __future__ import annotations

from pathlib import Path

import yaml

from codegen.conformance import EXPECTED, REVISIONS, TARGETS, compare, judged, parse_summary

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


def test_extension_scenarios_are_judged_only_where_asked_and_pending_ones_never() -> None:
    results, not_scored = parse_summary(OUTPUT)
    scored = {"server-initialize": True, "tools-call-image": False, "tools-list": True}
    assert judged(results, not_scored, extensions=False) == scored
    assert judged(results, not_scored, extensions=True) == scored | {"tasks-lifecycle": False}


def test_a_failure_not_listed_is_a_regression_and_a_listed_pass_is_only_reported() -> None:
    results = {"a": True, "b": False, "c": False}
    assert compare(results, ["c", "a"]) == (["b"], ["a"])
    assert compare(results, ["b", "c"]) == ([], [])


def test_the_expected_list_names_each_target_and_revision() -> None:
    expected = yaml.safe_load((Path(__file__).parents[2] / EXPECTED).read_text(encoding="utf-8"))
    assert set(expected) == set(TARGETS)
    for target in TARGETS:
        assert set(expected[target]) - {"not_judged"} == set(REVISIONS)
