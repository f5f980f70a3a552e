"""Which error codes each tool can raise, read from mypy's typed tree: `python -m codegen.raises`.

Issue 19 asks that the type check fail when a handler can raise a code its spec does not declare;
mypy checks the return types (the generated protocols), this checks the raises, right after mypy
(`make types`), and reports like a type checker:

    handlers/x/core/find.py:12: x.get can raise NOT_FOUND (via XHandlers.get -> core.find.lookup), which
    its spec does not declare

and exits 1. Developer tooling (mypy is in the `codegen` extra); the runtime never imports it.

How: one mypy build of handlers/ with the project's config and cache (only the handler modules are
checked again; the rest comes from the cache `mypy` just wrote), keeping every expression's inferred
type and every name's definition. From each entry — the keys of generated.<svc>.errors.DECLARED, methods
of the class that `handlers.<svc>.create` returns — the calls are followed through the service's package
(handlers/<svc>/ and everything below it, whatever its layout), each resolved to its definition:

- a function or method of the package named, called or not: `helper()`, `module.helper()`, `self.m()`,
  `self.core.find()` (by the attribute's declared type), `super().m()`, a property read, and a function
  passed as a value (`pool.submit(self._work)`, `key=_rank`, `partial(f)`): referring to it counts as
  calling it;
- a method reached through a class: that method and every override in the package's subclasses of the
  class (the object may be any of them at run time);
- a class of the package called: its `__init__`, `__new__`, `__post_init__`; an instance called: `__call__`;
  `with x:` and `for _ in x:` on one: `__enter__`/`__exit__`, `__iter__`/`__next__` (and the async forms);
- a decorated function: the code of its decorators as well (a wrapper runs on every call);
- a function or lambda nested in another: part of it.

An error is made where a generated error class (generated.errors.*, however imported, or a package
subclass of one) is named anywhere but in an `except` clause or an isinstance/issubclass test
(constructed, raised, or kept to be raised later), or `ToolError(..., code="X")` is constructed.

Conservative where names cannot say it (a call through a variable): a module- or class-level variable,
or an attribute assigned `self.x = ...` in the package, is assumed to hold what its assignments refer to
(functions named but not called there, functions a factory called there returns, lambdas, error
classes); reading it counts as reaching them.
Not followed, by design: calls into kumitate, generated and libraries (their codes are the runtime's, not
the tool's), operators' dunder methods, and calls the types leave open (`Any`, a callable parameter handed
in from outside the package). Unreachable code after a check mypy proves is followed too (a raise there
is reported), and an error caught again inside the chain still counts: both over-report, never under.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
import time
import types
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from mypy.build import BuildResult, build
from mypy.main import process_options
from mypy.modulefinder import BuildSource
from mypy.nodes import (
    LDEF,
    AssignmentStmt,
    CallExpr,
    ClassDef,
    Decorator,
    Expression,
    ForStmt,
    FuncDef,
    LambdaExpr,
    MemberExpr,
    MypyFile,
    NameExpr,
    Node,
    OverloadedFuncDef,
    RefExpr,
    Statement,
    StrExpr,
    SuperExpr,
    SymbolNode,
    TryStmt,
    TypeInfo,
    Var,
    WithStmt,
)
from mypy.patterns import Pattern
from mypy.subtypes import is_subtype
from mypy.types import (
    CallableType,
    Instance,
    Overloaded,
    TupleType,
    Type,
    TypeType,
    TypeVarType,
    UnionType,
    get_proper_type,
)
from mypy.typevars import fill_typevars_with_any

from kumitate.policy import GENERIC_CODES
from kumitate.project import Project

TOOL_ERROR = "kumitate.errors.ToolError"
TYPE_TESTS = frozenset({"builtins.isinstance", "builtins.issubclass"})
ENTER_EXIT = ("__enter__", "__exit__", "__aenter__", "__aexit__")
ITERATION = ("__iter__", "__next__", "__aiter__", "__anext__")
CONSTRUCTORS = ("__new__", "__init__", "__post_init__")


@dataclass(frozen=True)
class Site:
    """One place an error is made: its code, file and line."""

    code: str
    path: str
    line: int


@dataclass(frozen=True)
class Finding:
    """An entry that can reach a site whose code its spec does not declare (or that has no method)."""

    service: str
    entry: str
    site: Site
    chain: tuple[str, ...]

    def __str__(self) -> str:
        where = f"{self.site.path}:{self.site.line}: {self.service}.{self.entry}"
        if not self.chain:
            return f"{where} has no method on the class create() returns, so its raises cannot be checked"
        return f"{where} can raise {self.site.code} (via {' -> '.join(self.chain)}), which its spec does not declare"


@dataclass(frozen=True)
class Package:
    """One service's package, the codes its spec declares per entry, and the error classes' codes."""

    service: str
    module: str
    declared: dict[str, frozenset[str]]
    """Entry (a tool, `read_<resource>` or `prompt_<name>` method) -> the codes it may raise."""
    codes: dict[str, str]
    """Full name of a generated error class -> its code."""


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
    the generic ones any call may end with (kumitate.policy.GENERIC_CODES)."""
    declared = importlib.import_module(f"generated.{service}.errors").DECLARED
    allowed = {entry: frozenset(codes) | GENERIC_CODES for entry, codes in declared.items()}
    return Package(service, f"handlers.{service}", allowed, error_classes())


def module_sources(directory: Path, module: str) -> list[BuildSource]:
    """Every module under a package's directory, handed to mypy with its text so that it is checked again
    (a module mypy takes from its cache has no tree to read)."""
    base = directory.parents[len(module.split(".")) - 1]
    sources = []
    for path in sorted(directory.rglob("*.py")):
        parts = path.relative_to(base).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        sources.append(BuildSource(shown(path), name, text=path.read_text(encoding="utf-8"), base_dir=str(base)))
    return sources


def shown(path: Path | str) -> str:
    """A path as a type checker prints it: relative to the working directory when it is below it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def typed_build(sources: list[BuildSource]) -> BuildResult:
    """mypy's build of the sources with the project's configuration and cache, every type kept."""
    where = project()
    config = where.root / "pyproject.toml"
    _, options = process_options(["--config-file", str(config)] if config.is_file() else [], require_targets=False)
    options.export_types = True
    options.preserve_asts = True
    if not Path(options.cache_dir).is_absolute():
        options.cache_dir = str(where.root / options.cache_dir)
    roots = dict.fromkeys(str(p) for p in (where.root, where.handlers.parent, where.generated.parent))
    options.mypy_path = [*options.mypy_path, *roots]
    result = build(sources, options)
    if result.errors:
        raise SystemExit("mypy reports errors; fix them first (make types runs mypy):\n" + "\n".join(result.errors))
    return result


# A traverser an interpreted class can extend: mypy's own visitors are compiled traits that a class
# outside mypy cannot subclass (python/mypy#19456), and `Node.accept` takes only those.
NOT_CHILDREN = frozenset(
    {
        "node",
        "original_def",
        "original_decorators",
        "unanalyzed_items",
        "removed_statements",
        "expanded",
        "arguments",
    }
)
"""Attributes that point elsewhere (a name's definition) or repeat a child; `arguments`: defaults run at
definition, not at a call."""


class Walker:
    """Visits a node with `visit_<node_kind>` when the subclass has one, else its children."""

    shapes: ClassVar[dict[type, tuple[str, tuple[str, ...]]]] = {}
    """Per node class: its visit method's name, and its attributes that may hold children."""

    def walk(self, node: Node) -> None:
        visit = getattr(self, self.shape(type(node))[0], None)
        if visit is None:
            self.children(node)
        else:
            visit(node)

    def children(self, node: Node) -> None:
        for name in self.shape(type(node))[1]:
            for child in _nodes(getattr(node, name, None)):
                self.walk(child)

    @classmethod
    def shape(cls, kind: type) -> tuple[str, tuple[str, ...]]:
        if kind not in cls.shapes:
            slots = (types.GetSetDescriptorType, types.MemberDescriptorType)
            fields = tuple(
                name
                for name in dir(kind)
                if not name.startswith("_")
                and name not in NOT_CHILDREN
                and isinstance(inspect.getattr_static(kind, name), slots)
            )
            cls.shapes[kind] = ("visit_" + re.sub(r"(?<!^)(?=[A-Z])", "_", kind.__name__).lower(), fields)
        return cls.shapes[kind]


def _nodes(value: Any) -> Iterator[Node]:
    if isinstance(value, Statement | Expression | Pattern):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _nodes(item)


class Graph:
    """The call graph of one package over mypy's typed tree: the calls and error sites of each function."""

    def __init__(self, result: BuildResult, package: Package) -> None:
        self.types = result.types
        self.package = package
        self.prefix = package.module + "."
        self.files = {
            name: tree for name, tree in result.files.items() if name == package.module or name.startswith(self.prefix)
        }
        self.classes: list[TypeInfo] = []
        self.subclasses: dict[TypeInfo, list[TypeInfo]] = {}
        self.decorators: dict[FuncDef, list[Expression]] = {}
        self.stored: dict[SymbolNode, list[tuple[str, Expression]]] = {}
        """What each module- or class-level variable or attribute is assigned, and in which file."""
        self.where: dict[FuncDef, str] = {}
        for tree in self.files.values():
            Survey(self, tree).run()
        self._steps: dict[FuncDef, tuple[list[FuncDef], list[Site]]] = {}

    def below(self, info: TypeInfo) -> list[TypeInfo]:
        """The package's classes an object of static type `info` can be: its subclasses, and for a
        protocol every class that implements it."""
        if not info.is_protocol:
            return self.subclasses.get(info, [])
        protocol = fill_typevars_with_any(info)
        return [c for c in self.classes if c is not info and is_subtype(fill_typevars_with_any(c), protocol)]

    def own(self, node: SymbolNode) -> bool:
        return node.fullname.startswith(self.prefix)

    def step(self, fn: FuncDef) -> tuple[list[FuncDef], list[Site]]:
        """The package functions `fn` can call, and the errors it makes itself."""
        if fn not in self._steps:
            body = Body(self, fn)
            body.walk(fn.body)
            for expr in self.decorators.get(fn, []):
                body.walk(expr)
            self._steps[fn] = (list(dict.fromkeys(body.calls)), list(dict.fromkeys(body.sites)))
        return self._steps[fn]

    def handler_class(self) -> TypeInfo | None:
        """The class `create()` of the package's __init__ is annotated to return."""
        tree = self.files.get(self.package.module)
        create = tree.names.get("create") if tree else None
        node = create.node if create else None
        signature = get_proper_type(node.type) if isinstance(node, FuncDef) else None
        returned = get_proper_type(signature.ret_type) if isinstance(signature, CallableType) else None
        return returned.type if isinstance(returned, Instance) else None

    def entries(self) -> dict[str, FuncDef | None]:
        """Each declared entry's method on the handler class (None when it has none)."""
        holder = self.handler_class()
        methods = {name: holder.get_method(name) if holder else None for name in self.package.declared}
        return {name: next(reversed(functions(method)), None) for name, method in methods.items()}

    def name(self, fn: FuncDef) -> str:
        return fn.fullname.removeprefix(self.prefix)

    def findings(self) -> Iterator[Finding]:
        init = self.files.get(self.package.module)
        for entry, method in sorted(self.entries().items()):
            if method is None:
                yield Finding(self.package.service, entry, Site("", shown(init.path) if init else "?", 1), ())
                continue
            allowed = self.package.declared[entry]
            for site, chain in self.reach(method):
                if site.code not in allowed:
                    yield Finding(self.package.service, entry, site, tuple(map(self.name, chain)))

    def reach(self, entry: FuncDef) -> Iterator[tuple[Site, list[FuncDef]]]:
        """Every error site reachable from `entry`, each with a shortest chain of calls to it."""
        parent: dict[FuncDef, FuncDef | None] = {entry: None}
        queue = deque([entry])
        seen: set[Site] = set()
        while queue:
            fn = queue.popleft()
            calls, sites = self.step(fn)
            for site in sites:
                if site not in seen:
                    seen.add(site)
                    yield site, chain_to(parent, fn)
            for callee in calls:
                if callee not in parent:
                    parent[callee] = fn
                    queue.append(callee)


def chain_to(parent: dict[FuncDef, FuncDef | None], fn: FuncDef | None) -> list[FuncDef]:
    chain = []
    while fn is not None:
        chain.append(fn)
        fn = parent[fn]
    return chain[::-1]


def functions(node: Node | None) -> list[FuncDef]:
    """The function definitions a name can stand for (a decorated one, each overload, the implementation)."""
    if isinstance(node, FuncDef):
        return [node]
    if isinstance(node, Decorator):
        return [node.func]
    if isinstance(node, OverloadedFuncDef):
        parts = [*node.items, *([node.impl] if node.impl else [])]
        return [fn for part in parts for fn in functions(part)]
    return []


def receivers(kind: Type | None) -> Iterator[TypeInfo]:
    """The classes an expression of this type can be an instance of (or, for `type[C]`, the class)."""
    proper = get_proper_type(kind)
    if isinstance(proper, Instance):
        yield proper.type
    elif isinstance(proper, UnionType):
        for item in proper.items:
            yield from receivers(item)
    elif isinstance(proper, TypeType):
        yield from receivers(proper.item)
    elif isinstance(proper, TypeVarType):
        yield from receivers(proper.upper_bound)
    elif isinstance(proper, TupleType):
        yield proper.partial_fallback.type
    elif isinstance(proper, CallableType) and proper.is_type_obj():
        yield proper.type_object()


class Survey(Walker):
    """A module's facts the graph needs before it reads any body: subclasses, decorators, each
    function's file, and what each variable or attribute is assigned."""

    def __init__(self, graph: Graph, tree: MypyFile) -> None:
        self.graph = graph
        self.tree = tree
        self.path = shown(tree.path)

    def run(self) -> None:
        for node in self.tree.defs:
            self.walk(node)

    def visit_class_def(self, o: ClassDef) -> None:
        self.graph.classes.append(o.info)
        for base in o.info.mro[1:]:
            self.graph.subclasses.setdefault(base, []).append(o.info)
        self.children(o)

    def visit_func_def(self, o: FuncDef) -> None:
        self.graph.where[o] = self.path
        self.children(o)

    def visit_decorator(self, o: Decorator) -> None:
        self.graph.decorators[o.func] = list(o.decorators)
        self.children(o)

    def visit_assignment_stmt(self, o: AssignmentStmt) -> None:
        for lvalue in o.lvalues:
            target = self._target(lvalue)
            if target is not None:
                self.graph.stored.setdefault(target, []).append((self.path, o.rvalue))
        self.children(o)

    def _target(self, lvalue: Expression) -> SymbolNode | None:
        """The module- or class-level variable, or the attribute, an assignment stores into (not a local)."""
        if isinstance(lvalue, NameExpr):
            return lvalue.node if isinstance(lvalue.node, Var) and lvalue.kind != LDEF else None
        if isinstance(lvalue, MemberExpr):
            if isinstance(lvalue.node, Var):
                return lvalue.node
            for info in receivers(self.graph.types.get(lvalue.expr)):
                found = info.get(lvalue.name)
                if found is not None and isinstance(found.node, Var):
                    return found.node
        return None


class Body(Walker):
    """The calls and error sites of one function's body (and of anything nested in it)."""

    def __init__(self, graph: Graph, fn: FuncDef) -> None:
        self.graph = graph
        self.types = graph.types
        self.path = graph.where.get(fn, "?")
        self.calls: list[FuncDef] = []
        self.sites: list[Site] = []
        self.read: set[SymbolNode] = set()

    # names: a function referred to, an error class named, a variable holding either
    def visit_name_expr(self, o: NameExpr) -> None:
        self.refer(o, o.node)

    def visit_member_expr(self, o: MemberExpr) -> None:
        self.refer(o, o.node)
        for info in receivers(self.types.get(o.expr)):
            self.member(o, info, o.name)
        self.children(o)

    def visit_super_expr(self, o: SuperExpr) -> None:
        if o.info is not None:
            owner = next((info for info in o.info.mro[1:] if o.name in info.names), None)
            if owner is not None:
                self.refer(o, owner.names[o.name].node)
        self.children(o)

    def member(self, o: Expression, info: TypeInfo, name: str) -> None:
        """`name` looked up on an instance of `info`: its definition, and every override below `info`."""
        found = info.get(name)
        if found is None:
            return
        self.refer(o, found.node)
        if functions(found.node):
            for sub in self.graph.below(info):
                if name in sub.names:
                    self.refer(o, sub.names[name].node)

    def refer(self, o: Expression, node: SymbolNode | None) -> None:
        if isinstance(node, TypeInfo):
            code = next(
                (self.graph.package.codes[b.fullname] for b in node.mro if b.fullname in self.graph.package.codes), None
            )
            if code is not None:
                self.sites.append(Site(code, self.path, o.line))
            return
        self.calls.extend(fn for fn in functions(node) if self.graph.own(fn))
        if node is not None and node in self.graph.stored and node not in self.read:
            self.read.add(node)
            for path, value in self.graph.stored[node]:
                Held(self, path).walk(value)

    # calls: a class of the package constructed, an instance called, ToolError with a code, type tests
    def visit_call_expr(self, o: CallExpr) -> None:
        callee = o.callee
        if isinstance(callee, RefExpr) and callee.fullname in TYPE_TESTS:
            self.walk(callee)
            if o.args:
                self.walk(o.args[0])  # the classes tested against are not made
            return
        if isinstance(callee, RefExpr) and isinstance(callee.node, TypeInfo):
            self.construct(o, callee.node)
        else:
            kind = get_proper_type(self.types.get(callee))
            for item in kind.items if isinstance(kind, Overloaded) else [kind]:
                if isinstance(item, CallableType) and item.definition is not None:
                    self.refer(o, item.definition)
            if isinstance(kind, Instance):
                self.member(o, kind.type, "__call__")
            elif isinstance(kind, CallableType) and kind.is_type_obj():
                self.construct(o, kind.type_object())  # `cls(...)`, `type(self)(...)`
        self.children(o)

    def construct(self, o: CallExpr, info: TypeInfo) -> None:
        if info.fullname == TOOL_ERROR:
            for name, arg in zip(o.arg_names, o.args, strict=True):
                if name == "code" and isinstance(arg, StrExpr):
                    self.sites.append(Site(arg.value, self.path, o.line))
            return
        for name in CONSTRUCTORS:
            self.member(o, info, name)

    def visit_try_stmt(self, o: TryStmt) -> None:
        """An `except` clause's classes are caught, not made: everything but them."""
        for block in (o.body, *o.handlers, o.else_body, o.finally_body):
            if block is not None:
                self.walk(block)

    def visit_with_stmt(self, o: WithStmt) -> None:
        for expr in o.expr:
            for info in receivers(self.types.get(expr)):
                for name in ENTER_EXIT:
                    self.member(expr, info, name)
        self.children(o)

    def visit_for_stmt(self, o: ForStmt) -> None:
        for info in receivers(self.types.get(o.expr)):
            for name in ITERATION:
                self.member(o.expr, info, name)
        self.children(o)


class Held(Walker):
    """What an assigned value leaves to be called later, read into the body that reads the variable:
    functions named but not called there (what a call returns is a value, followed by its type, unless
    it is itself a function: then the factory, whose body holds it), lambdas whole, and error classes
    however they appear."""

    def __init__(self, body: Body, path: str) -> None:
        self.body = body
        self.path = path

    def walk(self, node: Node) -> None:
        here, self.body.path = self.body.path, self.path
        try:
            super().walk(node)
        finally:
            self.body.path = here

    def visit_lambda_expr(self, o: LambdaExpr) -> None:
        self.body.walk(o.body)

    def visit_call_expr(self, o: CallExpr) -> None:
        callee = o.callee
        kind = get_proper_type(self.body.types.get(callee))
        if isinstance(callee, RefExpr) and isinstance(callee.node, TypeInfo):
            self.body.refer(callee, callee.node)  # an error made here may be raised later
        elif isinstance(kind, CallableType) and isinstance(get_proper_type(kind.ret_type), CallableType | Overloaded):
            self.body.refer(o, kind.definition)  # a factory: the function it returns is in its body
        elif isinstance(callee, MemberExpr):
            self.walk(callee.expr)  # called now, not later: only what it is called on
        elif not isinstance(callee, NameExpr):
            self.walk(callee)
        for arg in o.args:
            self.walk(arg)

    def visit_name_expr(self, o: NameExpr) -> None:
        self.body.refer(o, o.node)

    def visit_member_expr(self, o: MemberExpr) -> None:
        self.body.visit_member_expr(o)


def check(packages: Iterable[tuple[Path, Package]]) -> list[Finding]:
    """Every entry's reachable error sites whose code its spec does not declare, for packages given
    as (directory, package); one mypy build for all."""
    pairs = list(packages)
    result = typed_build([source for path, package in pairs for source in module_sources(path, package.module)])
    found = [finding for _, package in pairs for finding in Graph(result, package).findings()]
    return sorted(found, key=lambda f: (f.site.path, f.site.line, f.service, f.entry, f.site.code))


def check_services(services: Iterable[str]) -> list[Finding]:
    """The check on the project's services: handlers/<svc>/ against generated.<svc>.errors.DECLARED."""
    handlers = project().handlers
    return check((handlers / name, service_package(name)) for name in services)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen.raises", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("services", nargs="*", help="the services to check (default: every one)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    findings = check_services(args.services or services())
    for finding in findings:
        print(finding)
    took = time.perf_counter() - started
    if findings:
        print(f"Found {len(findings)} undeclared raise(s) in {took:.1f}s", file=sys.stderr)
        return 1
    print(f"Success: every tool raises only the codes its spec declares ({took:.1f}s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
