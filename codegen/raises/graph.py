"""The plain call graph the raises check works on: what `mypy_tree` reads out of mypy, and nothing of mypy.

A function's body is kept as its steps in source order (the order decides which of two equally short
chains a finding names): a reference to a function or a variable of the package, a method looked up on
a class (whose overrides below that class count too), or an error made. Ids are strings; a function's id
is its full name unless two definitions share one (overloads), then `name#2`, `name#3`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["CallGraph", "Function", "Overrides", "Package", "Ref", "Site", "Step"]


@dataclass(frozen=True)
class Site:
    """One place an error is made: its code, file and line."""

    code: str
    path: str
    line: int


@dataclass(frozen=True)
class Ref:
    """A function of the package referred to (called or not), or a variable read whose assignments are
    in `CallGraph.held`."""

    target: str


@dataclass(frozen=True)
class Overrides:
    """A method `name` looked up on an instance of class `owner`: the package's classes the object may be
    (`CallGraph.below`) and their own definitions of `name` (`CallGraph.members`) count as referred to."""

    owner: str
    name: str


Step = Ref | Overrides | Site


@dataclass(frozen=True)
class Function:
    """A function or method: its full name, and the steps of its body (and of its decorators)."""

    name: str
    steps: tuple[Step, ...] = ()


@dataclass(frozen=True)
class CallGraph:
    """One service package's functions, ready for the analysis (`codegen.raises.analysis`)."""

    module: str
    """The package, e.g. `handlers.stays`: a function's name is shown without it."""
    init: str | None
    """The package's `__init__.py` as shown (where an entry without a method is reported), if any."""
    entries: Mapping[str, str | None]
    """Each entry's method on the class `create()` returns (its id in `functions`), None when it has none."""
    functions: Mapping[str, Function]
    held: Mapping[str, tuple[Step, ...]] = field(default_factory=dict)
    """Per variable (module-, class-level or `self.x` attribute): what its assignments leave to be called."""
    below: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Per class looked up on: the package classes an instance of it may be (subclasses, implementors)."""
    members: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    """Per package class: its own names that refer to something (functions or variables), by name."""


@dataclass(frozen=True)
class Package:
    """One service's package, the codes its spec declares per entry, and the error classes' codes."""

    service: str
    module: str
    declared: dict[str, frozenset[str]]
    """Entry (a tool, `read_<resource>` or `prompt_<name>` method) -> the codes it may raise."""
    codes: dict[str, str]
    """Full name of a generated error class -> its code."""
