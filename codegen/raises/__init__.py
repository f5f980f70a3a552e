"""Which error codes each tool can raise, read from mypy's typed tree: `python -m codegen.raises`.

Issue 19 asks that the type check fail when a handler can raise a code its spec does not declare;
mypy checks the return types (the generated protocols), this checks the raises, right after mypy
(`make types`), and reports like a type checker:

    handlers/x/core/find.py:12: x.get can raise NOT_FOUND (via XHandlers.get -> core.find.lookup), which
    its spec does not declare

and exits 1. Developer tooling (mypy is in the `codegen` extra); the runtime never imports it.

How: one mypy build of handlers/ with the project's config and cache (only the handler modules are
checked again; the rest comes from the cache `mypy` just wrote). `mypy_tree`, the only module that
touches mypy, turns each service's package (handlers/<svc>/ and everything below it) into a plain call
graph (`graph`: each function's references, method lookups and error sites, resolved by the inferred
types; its docstring lists what it resolves). `analysis` then follows, from each entry — the keys of
generated.<svc>.errors.DECLARED, methods of the class that `handlers.<svc>.create` returns — every
function it can reach, a method reached through a class together with every override in the package's
subclasses (or implementors of a protocol), and reports each error site whose code the entry's spec does
not declare.

An error is made where a generated error class (generated.errors.*, however imported, or a package
subclass of one) is named anywhere but in an `except` clause or an isinstance/issubclass test
(constructed, raised, or kept to be raised later), or `ToolError(..., code="X")` is constructed.

Conservative where names cannot say it (a call through a variable): a module- or class-level variable,
or an attribute assigned `self.x = ...` in the package, is assumed to hold what its assignments refer to;
reading it counts as reaching them.
Not followed, by design: calls into kumitate, generated and libraries (their codes are the runtime's, not
the tool's), operators' dunder methods, and calls the types leave open (`Any`, a callable parameter handed
in from outside the package). Unreachable code after a check mypy proves is followed too (a raise there
is reported), and an error caught again inside the chain still counts: both over-report, never under.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from codegen.raises.analysis import Finding, findings
from codegen.raises.graph import CallGraph, Package, Site
from kumitate.policies.spec import GENERIC_CODES
from kumitate.project import Project

__all__ = [
    "Finding",
    "Package",
    "Site",
    "check",
    "check_services",
    "error_classes",
    "main",
    "project",
    "service_package",
    "services",
]


def error_classes() -> dict[str, str]:
    """Full name of each generated error class -> its code (generated.errors.ERRORS)."""
    from generated.errors import ERRORS

    return {f"{cls.__module__}.{cls.__qualname__}": code for code, cls in ERRORS.items()}


def project() -> Project:
    """The project checked (kumitate.project: the working directory's, else this checkout), importable."""
    found = Project.discover()
    found.activate()
    return found


def services() -> list[str]:
    """Every service with generated error declarations (generated/<svc>/errors.py)."""
    return sorted(path.parent.name for path in project().generated.glob("*/errors.py"))


def service_package(service: str) -> Package:
    """A service's handler package, with the codes each entry may raise: its spec's (generated DECLARED) and
    the generic ones any call may end with (kumitate.policies.spec.GENERIC_CODES)."""
    declared = importlib.import_module(f"generated.{service}.errors").DECLARED
    allowed = {entry: frozenset(codes) | GENERIC_CODES for entry, codes in declared.items()}
    return Package(service, f"handlers.{service}", allowed, error_classes())


def check(packages: Iterable[tuple[Path, Package]]) -> list[Finding]:
    """Every entry's reachable error sites whose code its spec does not declare, for packages given
    as (directory, package); one mypy build for all."""
    pairs = list(packages)
    graphs = mypy_reader()(pairs, project())
    found = [finding for (_, package), graph in zip(pairs, graphs, strict=True) for finding in findings(graph, package)]
    return sorted(found, key=lambda f: (f.site.path, f.site.line, f.service, f.entry, f.site.code))


def mypy_reader() -> Callable[[list[tuple[Path, Package]], Project], list[CallGraph]]:
    """`mypy_tree.call_graphs`, loaded only when a check runs (mypy is heavy). mypy_tree reads mypy's
    internal tree, there being no public route (see its docstring): a mypy release that renamed what it
    imports stops the check with one line naming that release, not an import traceback."""
    try:
        from codegen.raises.mypy_tree import call_graphs
    except ImportError as exc:
        try:
            installed = f"mypy {version('mypy')}"
        except PackageNotFoundError:
            installed = "no mypy"
        raise SystemExit(
            f"codegen.raises: {installed} installed, and codegen/raises/mypy_tree.py cannot load ({exc}); "
            "install the `codegen` extra's mypy or update that module"
        ) from exc
    return call_graphs


def check_services(services: Iterable[str]) -> list[Finding]:
    """The check on the project's services: handlers/<svc>/ against generated.<svc>.errors.DECLARED."""
    handlers = project().handlers
    return check((handlers / name, service_package(name)) for name in services)


def main(argv: Sequence[str] | None = None) -> int:
    """`make types` runs it from the command line: print every undeclared error code a service's handlers can
    raise; the exit status is non-zero when there is one."""
    parser = argparse.ArgumentParser(prog="python -m codegen.raises", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("services", nargs="*", help="the services to check (default: every one)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    found = check_services(args.services or services())
    for finding in found:
        print(finding)
    took = time.perf_counter() - started
    if found:
        print(f"Found {len(found)} undeclared raise(s) in {took:.1f}s", file=sys.stderr)
        return 1
    print(f"Success: every tool raises only the codes its spec declares ({took:.1f}s)")
    return 0
