"""codegen.raises on a fake service package (tests/fixtures/raises/fakesvc): each case is one tool.

The checker resolves every call through mypy's typed tree, so it follows a helper, a method of an
attribute object and a function imported from a sibling module, and it does not follow a function that
only shares a name with the one called (the name-based closure it replaces over-reported that).
This is also the canary of a mypy upgrade: the graph `codegen.raises.mypy_tree` reads must keep its shape.
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from codegen import raises
from codegen.raises import analysis, graph, mypy_tree

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "raises" / "fakesvc"
ALWAYS = frozenset({"BAD_REQUEST", "INTERNAL"})
ENTRIES = (
    "helper_raise",
    "attribute_method",
    "sibling_function",
    "same_name",
    "declared",
    "caught",
    "table",
    "override",
    "decorated",
    "stored",
)


@pytest.fixture(scope="module")
def package() -> raises.Package:
    declared = {entry: ALWAYS for entry in ENTRIES} | {"declared": ALWAYS | {"NOT_FOUND"}}
    return raises.Package("fake", "fakesvc", declared, raises.error_classes())


@pytest.fixture(scope="module")
def fake_graph(package: raises.Package) -> graph.CallGraph:
    """The fixture's call graph, from one mypy build."""
    return mypy_tree.call_graphs([(FIXTURE, package)], raises.project())[0]


@pytest.fixture(scope="module")
def findings(fake_graph: graph.CallGraph, package: raises.Package) -> dict[str, list[raises.Finding]]:
    by_entry: dict[str, list[raises.Finding]] = {entry: [] for entry in ENTRIES}
    for finding in analysis.findings(fake_graph, package):
        by_entry[finding.entry].append(finding)
    return by_entry


def test_mypy_tree_still_reads_as_written(fake_graph: graph.CallGraph) -> None:
    """The upgrade canary: a handful of facts any mypy must yield through mypy_tree. When it fails after
    a mypy upgrade, codegen/raises/mypy_tree.py (the only module reading mypy's tree) needs updating."""
    upgrade = (
        f"mypy {mypy_tree.mypy_version} no longer reads as codegen/raises/mypy_tree.py expects "
        f"(written against mypy {mypy_tree.TESTED_WITH}): update that module"
    )
    functions = fake_graph.functions
    entry = fake_graph.entries.get("helper_raise")
    assert entry == "fakesvc.FakeHandlers.helper_raise", f"{upgrade}: no entry method from create()'s type"
    assert graph.Ref("fakesvc.helpers.load") in functions[entry].steps, f"{upgrade}: a call is not resolved"
    parse = functions.get("fakesvc.helpers._parse")
    assert parse is not None and [s.code for s in parse.steps if isinstance(s, graph.Site)] == ["CONFLICT"], (
        f"{upgrade}: a raised error class is not a site"
    )
    find = graph.Ref("fakesvc.core.finder.Core.find")
    assert find in functions["fakesvc.FakeHandlers.attribute_method"].steps, (
        f"{upgrade}: a method is not resolved by the attribute's declared type"
    )
    assert "fakesvc.core.shapes.Broken" in fake_graph.below.get("fakesvc.core.shapes.Shape", ()), (
        f"{upgrade}: subclasses are not found"
    )


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def only(findings: list[raises.Finding]) -> raises.Finding:
    assert len(findings) == 1, [str(f) for f in findings]
    return findings[0]


def test_a_raise_in_a_helper_is_found_with_its_chain(findings: dict[str, list[raises.Finding]]) -> None:
    finding = only(findings["helper_raise"])
    assert finding.site.code == "CONFLICT"
    assert finding.chain == ("FakeHandlers.helper_raise", "helpers.load", "helpers._parse")
    line = line_of(FIXTURE / "helpers.py", "is taken")
    assert finding.site.path.endswith("fakesvc/helpers.py") and finding.site.line == line
    assert str(finding) == (
        f"{finding.site.path}:{line}: fake.helper_raise can raise CONFLICT "
        "(via FakeHandlers.helper_raise -> helpers.load -> helpers._parse), which its spec does not declare"
    )


def test_a_raise_in_a_method_of_an_attribute_object_is_found(findings: dict[str, list[raises.Finding]]) -> None:
    finding = only(findings["attribute_method"])
    assert (finding.site.code, finding.chain) == (
        "NOT_FOUND",
        ("FakeHandlers.attribute_method", "core.finder.Core.find"),
    )
    assert finding.site.path.endswith("fakesvc/core/finder.py")


def test_a_raise_in_a_function_imported_from_a_sibling_module_is_found(
    findings: dict[str, list[raises.Finding]],
) -> None:
    finding = only(findings["sibling_function"])
    assert (finding.site.code, finding.chain) == (
        "RATE_LIMITED",
        ("FakeHandlers.sibling_function", "core.rules.check_rule"),
    )


def test_a_function_that_only_shares_the_name_is_not_followed(findings: dict[str, list[raises.Finding]]) -> None:
    assert findings["same_name"] == []


def test_a_declared_code_and_a_caught_class_are_not_reported(findings: dict[str, list[raises.Finding]]) -> None:
    assert findings["declared"] == []
    assert findings["caught"] == []


def test_a_function_called_through_a_module_level_table_is_followed(
    findings: dict[str, list[raises.Finding]],
) -> None:
    finding = only(findings["table"])
    assert (finding.site.code, finding.chain) == ("CONFLICT", ("FakeHandlers.table", "helpers.step"))


def test_an_override_in_a_subclass_is_followed(findings: dict[str, list[raises.Finding]]) -> None:
    finding = only(findings["override"])
    assert (finding.site.code, finding.chain) == ("CONFLICT", ("FakeHandlers.override", "core.shapes.Broken.area"))


def test_the_wrapper_of_a_decorator_is_followed(findings: dict[str, list[raises.Finding]]) -> None:
    finding = only(findings["decorated"])
    assert (finding.site.code, finding.chain) == (
        "CONFLICT",
        ("FakeHandlers.decorated", "helpers.quiet", "helpers.guarded"),
    )


def test_a_function_stored_on_the_object_is_followed(findings: dict[str, list[raises.Finding]]) -> None:
    """`self.checker = make_checker(3)` at start-up, `self.checker(4)` in the tool: the factory's body."""
    finding = only(findings["stored"])
    assert (finding.site.code, finding.chain) == ("CONFLICT", ("FakeHandlers.stored", "helpers.make_checker"))


def test_a_mypy_the_reader_cannot_load_is_one_line_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """When an upgrade renames what mypy_tree imports from mypy, the check stops with the release and
    the module to update, not an import traceback."""
    monkeypatch.setitem(sys.modules, "codegen.raises.mypy_tree", None)  # its import now fails
    with pytest.raises(SystemExit) as stop:
        raises.mypy_reader()
    message = str(stop.value.code)
    assert "\n" not in message
    assert message.startswith(f"codegen.raises: mypy {version('mypy')} installed, ")
    assert "codegen/raises/mypy_tree.py" in message
    monkeypatch.undo()
    assert raises.mypy_reader() is mypy_tree.call_graphs
