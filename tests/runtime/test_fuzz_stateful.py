"""The stateful MCP fuzz walks the links of a real app (in process, over fastmcp's in-memory client), checks
the services' invariants, and reports a broken one as the sequence of calls that broke it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from codegen import specs
from codegen.fuzz import stateful
from kumitate.invariants import Caller, Invariant, Step

ROOT = Path(__file__).resolve().parents[2]


def attendance_tree() -> specs.SpecTree:
    tree = specs.load(ROOT / "specs")
    tree.services = [tree.service("attendance")]
    return tree


def connect_to(data_dir: Path, seeded: Path) -> Any:
    @contextlib.asynccontextmanager
    async def connect() -> AsyncIterator[Any]:
        from fastmcp import Client

        from kumitate.transports.mcp import build_server
        from tests.conftest import serve_in_process

        async with serve_in_process(data_dir, seeded) as app, Client(build_server(app.runtime)) as client:
            yield client

    return connect


def _reads_back_a_newer_version(step: Step, call: Caller, _memory: dict[str, Any]) -> str | None:
    """Deliberately wrong: the rule read back is one version ahead of the one saved."""
    read = call("get_attendance_rule", {"thread_id": (step.result or {})["thread_id"]})
    expected = (step.result or {})["version"] + 1
    got = (read.result or {}).get("version")
    return None if got == expected else f"read version {got}, expected {expected}"


BROKEN = Invariant(
    "reads_back_a_newer_version", "broken on purpose", frozenset({"save_attendance_rule"}), _reads_back_a_newer_version
)


@pytest.mark.slow  # make fuzz walks every service's graph with these invariants
def test_the_declared_invariants_hold_along_multi_step_sequences(tmp_path: Path, seeded_data_dir: Path) -> None:
    tree = attendance_tree()
    walk = stateful.Walk(tree, sequences=16, steps=4, seed=3)
    stats = stateful.run(connect_to(tmp_path / "var", seeded_data_dir), walk)
    assert stats.failure is None, stats.failure
    assert stats.multi_step >= 2 and stats.links_followed >= 2  # the walk depends on the data earlier tests left
    assert stats.invariant_checks >= 1, "save_attendance_rule was never reached: its invariant checked nothing"
    assert stats.longest >= 2


def test_a_broken_invariant_is_reported_as_the_sequence_that_broke_it(tmp_path: Path, seeded_data_dir: Path) -> None:
    tree = attendance_tree()
    walk = stateful.Walk(tree, sequences=12, steps=4, seed=3, invariants=[BROKEN])
    stats = stateful.run(connect_to(tmp_path / "var", seeded_data_dir), walk)
    assert stats.failure is not None
    assert "invariant reads_back_a_newer_version broken after save_attendance_rule" in stats.failure
    sequence = stats.failure.split("sequence (", 1)[1]
    assert "1. parse_attendance_intent(" in sequence
    assert "2. save_attendance_rule(" in sequence


def test_the_invariants_of_every_service_are_found() -> None:
    names = {inv.name for inv in stateful.load_invariants(["household", "attendance", "analytics", "yana", "stays"])}
    assert names == {
        "confirm_then_restore_keeps_month_figures",
        "saved_rule_reads_back_equal",
        "dropped_view_is_gone",
        "ingested_label_found_by_brand",
    }


def test_the_graph_starts_where_no_link_leads() -> None:
    roots, edges = stateful.graph(specs.load(ROOT / "specs"))
    assert set(roots) == {
        "detect_duplicates",
        "parse_attendance_intent",
        "materialize",
        "ingest",
        "get_monthly_household",
    }
    assert {e.target.name for e in edges} >= {"confirm_duplicate", "restore_duplicate", "export_file", "chart"}


def test_a_walk_whose_server_state_changes_what_is_drawn_goes_on_with_the_next_seed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A server's state outlives each sequence; where a precondition reads it, hypothesis meets a prefix it
    knows drawing otherwise. The walk begins again with the next seed until it has its sequences."""
    server = {"saved": 0}
    stats = stateful.Stats()

    class Machine(RuleBasedStateMachine):
        @rule(n=st.integers(0, 3))
        def save(self, n: int) -> None:
            server["saved"] += 1 + n

        @precondition(lambda self: server["saved"] % 5 < 2)  # what the server holds decides
        @rule(n=st.integers(0, 3))
        def read(self, n: int) -> None:
            server["saved"] += n

        def teardown(self) -> None:
            stats.sequences += 1

    stateful.run_machine(Machine, stateful.Walk(attendance_tree(), sequences=80, steps=6, seed=1), stats)
    assert stats.failure is None
    assert stats.restarts >= 1
    assert stats.sequences >= 80
    said = capsys.readouterr()
    assert "Steps leading up" not in said.out + said.err  # a pass is quiet, restarts or not


def test_the_summary_says_when_no_invariant_is_declared() -> None:
    assert "no invariants declared" in stateful.Stats().invariant_words
    assert stateful.Stats(invariant_checks=12, invariants=3).invariant_words == "12 checks of 3 invariants"


def walk_breaking_above_seven(stats: stateful.Stats, broken: Callable[[int], Exception], reported: bool) -> None:
    """A walk whose one rule breaks with `broken(n)` once it draws n > 7; `reported`: the rule keeps the failure
    in `stats` first, as the walks' rules do for what they check."""

    class Machine(RuleBasedStateMachine):
        @rule(n=st.integers(0, 10))
        def call(self, n: int) -> None:
            if n > 7:
                exc = broken(n)
                if reported:
                    stats.failure = stats.failure or str(exc)
                raise exc

        def teardown(self) -> None:
            stats.sequences += 1

    stateful.run_machine(Machine, stateful.Walk(attendance_tree(), sequences=200, steps=6, seed=1), stats)


def test_a_failure_ends_the_walk_without_a_restart() -> None:
    """The first failure is kept, as the rule reported it, and no further seed runs."""
    stats = stateful.Stats()
    walk_breaking_above_seven(stats, lambda n: AssertionError(f"call({n}) broke"), reported=True)
    assert stats.failure is not None and "broke" in stats.failure
    assert stats.restarts == 0


def test_an_exception_a_rule_did_not_report_is_the_walk_s_failure() -> None:
    stats = stateful.Stats()
    walk_breaking_above_seven(stats, lambda n: ConnectionError(f"server gone at {n}"), reported=False)
    assert stats.failure is not None and stats.failure.startswith("ConnectionError: server gone")
    assert stats.restarts == 0
