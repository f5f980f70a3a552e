"""codegen.raises.analysis on call graphs built by hand: reachability, chains, overrides, variables and
reporting, without a mypy build (the graphs mypy_tree reads from real code: tests/codegen/test_raises.py)."""

from __future__ import annotations

from typing import Any

from codegen.raises import analysis
from codegen.raises.graph import CallGraph, Function, Overrides, Package, Ref, Site, Step

CONFLICT = Site("CONFLICT", "pkg/a.py", 3)
NOT_FOUND = Site("NOT_FOUND", "pkg/b.py", 7)


def package(**declared: set[str]) -> Package:
    return Package("svc", "pkg", {entry: frozenset(codes) for entry, codes in declared.items()}, {})


def call_graph(functions: dict[str, tuple[Step, ...]], entries: dict[str, str | None], **rest: Any) -> CallGraph:
    records = {name: Function(name, steps) for name, steps in functions.items()}
    return CallGraph("pkg", "pkg/__init__.py", entries, records, **rest)


def report(graph: CallGraph, pkg: Package) -> list[str]:
    return [str(finding) for finding in analysis.findings(graph, pkg)]


def two_ways() -> CallGraph:
    """H.get reaches a.raiser through three calls first in source order, and through two after."""
    return call_graph(
        {
            "pkg.H.get": (Ref("pkg.a.long"), Ref("pkg.a.short")),
            "pkg.a.long": (Ref("pkg.a.mid"),),
            "pkg.a.mid": (Ref("pkg.a.raiser"),),
            "pkg.a.short": (Ref("pkg.a.raiser"),),
            "pkg.a.raiser": (CONFLICT,),
        },
        {"get": "pkg.H.get"},
    )


def test_an_undeclared_site_is_reported_with_a_shortest_chain() -> None:
    assert report(two_ways(), package(get=set())) == [
        "pkg/a.py:3: svc.get can raise CONFLICT (via H.get -> a.short -> a.raiser), which its spec does not declare"
    ]


def test_a_declared_site_is_not_reported() -> None:
    assert report(two_ways(), package(get={"CONFLICT"})) == []


def test_a_cycle_ends_and_each_site_is_reported_once() -> None:
    graph = call_graph(
        {"pkg.H.get": (Ref("pkg.a.f"), CONFLICT), "pkg.a.f": (Ref("pkg.H.get"), CONFLICT, NOT_FOUND)},
        {"get": "pkg.H.get"},
    )
    assert [(s.code, c) for s, c in analysis.reach(graph, "pkg.H.get")] == [
        ("CONFLICT", ["pkg.H.get"]),
        ("NOT_FOUND", ["pkg.H.get", "pkg.a.f"]),
    ]


def test_an_override_below_the_class_looked_up_is_followed() -> None:
    graph = call_graph(
        {"pkg.H.get": (Overrides("pkg.s.Shape", "area"),), "pkg.s.Broken.area": (CONFLICT,)},
        {"get": "pkg.H.get"},
        below={"pkg.s.Shape": ("pkg.s.Broken", "pkg.s.Fine")},
        members={"pkg.s.Broken": {"area": ("pkg.s.Broken.area",)}, "pkg.s.Fine": {"other": ("pkg.s.x",)}},
    )
    assert [f.chain for f in analysis.findings(graph, package(get=set()))] == [("H.get", "s.Broken.area")]


def test_a_variable_read_counts_as_reaching_what_it_holds() -> None:
    """A variable's held steps are read in place: its sites are the reader's, its functions its callees."""
    graph = call_graph(
        {"pkg.H.get": (Ref("pkg.TABLE"),), "pkg.a.step": (NOT_FOUND,)},
        {"get": "pkg.H.get"},
        held={"pkg.TABLE": (Ref("pkg.a.step"), CONFLICT, Ref("pkg.TABLE"))},
    )
    found = {(f.site.code, f.chain) for f in analysis.findings(graph, package(get=set()))}
    assert found == {("CONFLICT", ("H.get",)), ("NOT_FOUND", ("H.get", "a.step"))}


def test_an_entry_without_a_method_is_reported_at_the_package() -> None:
    graph = call_graph({}, {"get": None})
    assert report(graph, package(get=set())) == [
        "pkg/__init__.py:1: svc.get has no method on the class create() returns, so its raises cannot be checked"
    ]
