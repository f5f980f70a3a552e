"""The one module that reads mypy: a service package's typed tree, turned into the plain call graph
(`codegen.raises.graph`) the analysis works on. `call_graphs()` is its whole interface.

It reads mypy's internal tree (mypy.build/nodes/types, pinned in pyproject.toml's `codegen` extra, tested
against `TESTED_WITH`): mypy has no public API that hands out inferred types per expression and resolved
definitions per name, and its plugin hooks see one call or attribute at a time, not a function body in
order. An ast-only reader cannot resolve `self.core.find()` to `Core.find` by the attribute's declared
type, nor a protocol's implementors, so it would miss raises. What would replace this module upstream: a
stable "typed tree" API (python/mypy#19456 makes mypy's visitors subclassable outside mypy; a per-node type
query on the build result), or a call-graph export from a type checker (pyright's call hierarchy). When a
mypy upgrade changes the tree, tests/codegen/test_raises.py (the canary) fails saying so; only this
module changes.

What it resolves, per function body, from the types mypy inferred:

- a function or method of the package named, called or not: `helper()`, `module.helper()`, `self.m()`,
  `self.core.find()` (by the attribute's declared type), `super().m()`, a property read, and a function
  passed as a value (`pool.submit(self._work)`, `key=_rank`, `partial(f)`): a `Ref`;
- a method reached through a class: that method, and an `Overrides` step for every override in the
  package's subclasses of the class (for a protocol: every package class that implements it);
- a class of the package called: its `__init__`, `__new__`, `__post_init__`; an instance called: `__call__`;
  `with x:` and `for _ in x:` on one: `__enter__`/`__exit__`, `__iter__`/`__next__` (and the async forms);
- a decorated function: the code of its decorators as well (a wrapper runs on every call);
- a function or lambda nested in another: part of it;
- an error class named outside an `except` clause or an isinstance/issubclass test, or `ToolError(...,
  code="X")` constructed: a `Site`;
- a module- or class-level variable, or an attribute assigned `self.x = ...` in the package: a `Ref` to it,
  whose held steps are what its assignments refer to (functions named but not called there, functions a
  factory called there returns, lambdas, error classes).
"""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import ClassVar

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
from mypy.version import __version__ as mypy_version

from codegen.raises.graph import CallGraph, Function, Overrides, Package, Ref, Site, Step
from kumitate.project import Project

__all__ = ["TESTED_WITH", "call_graphs", "shown"]

TESTED_WITH = "2.4.1"
"""The mypy release this module was written against (the `codegen` extra pins it)."""
TOOL_ERROR = "kumitate.errors.ToolError"
TYPE_TESTS = frozenset({"builtins.isinstance", "builtins.issubclass"})
ENTER_EXIT = ("__enter__", "__exit__", "__aenter__", "__aexit__")
ITERATION = ("__iter__", "__next__", "__aiter__", "__anext__")
CONSTRUCTORS = ("__new__", "__init__", "__post_init__")


def call_graphs(packages: Sequence[tuple[Path, Package]], where: Project) -> list[CallGraph]:
    """The call graph of each package given as (directory, package), from one mypy build of them with the
    project's configuration and cache."""
    result = typed_build(
        [source for path, package in packages for source in module_sources(path, package.module)], where
    )
    return [Reader(result, package).graph() for _, package in packages]


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


def typed_build(sources: list[BuildSource], where: Project) -> BuildResult:
    """mypy's build of the sources with the project's configuration and cache, every type kept."""
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
    if sources and not result.types:
        raise SystemExit(
            f"codegen.raises: mypy {mypy_version} kept no expression types (written against {TESTED_WITH}); "
            "codegen/raises/mypy_tree.py needs updating for this mypy"
        )
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


def _nodes(value: object) -> Iterator[Node]:
    if isinstance(value, Statement | Expression | Pattern):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _nodes(item)


class Reader:
    """One package's call graph read from mypy's typed tree: every function (and variable) the entries
    can get to, recorded as it is first referred to."""

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
        self.ids: dict[SymbolNode, str] = {}
        self.taken: set[str] = set()
        self.pending: list[SymbolNode] = []
        self.below: dict[str, tuple[str, ...]] = {}
        self._below: dict[TypeInfo, list[TypeInfo]] = {}
        self.members: dict[str, dict[str, tuple[str, ...]]] = {}

    def graph(self) -> CallGraph:
        entries = {name: self.id(fn) if fn else None for name, fn in self.entries().items()}
        functions: dict[str, Function] = {}
        held: dict[str, tuple[Step, ...]] = {}
        while self.pending:
            node = self.pending.pop()
            if isinstance(node, FuncDef):
                body = Body(self, self.where.get(node, "?"))
                body.walk(node.body)
                for expr in self.decorators.get(node, []):
                    body.walk(expr)
                functions[self.ids[node]] = Function(node.fullname, tuple(body.steps))
            else:
                body = Body(self, "?")
                for path, value in self.stored[node]:
                    Held(body, path).walk(value)
                held[self.ids[node]] = tuple(body.steps)
        init = self.files.get(self.package.module)
        return CallGraph(
            self.package.module,
            shown(init.path) if init else None,
            entries,
            functions,
            held,
            dict(self.below),
            {name: dict(members) for name, members in self.members.items()},
        )

    def id(self, node: SymbolNode) -> str:
        """The node's id in the graph (its full name, numbered when another node has it); a new one is
        queued to be read."""
        if node not in self.ids:
            name, n = node.fullname, 1
            while name in self.taken:
                n += 1
                name = f"{node.fullname}#{n}"
            self.ids[node] = name
            self.taken.add(name)
            self.pending.append(node)
        return self.ids[node]

    def own(self, node: SymbolNode) -> bool:
        return node.fullname.startswith(self.prefix)

    def targets(self, node: SymbolNode | None) -> list[str]:
        """The ids a name refers to: the package functions it can stand for, and the variable if it holds
        something."""
        found = [self.id(fn) for fn in functions(node) if self.own(fn)]
        if node is not None and node in self.stored:
            found.append(self.id(node))
        return found

    def overrides(self, info: TypeInfo, name: str) -> Overrides:
        """`name` looked up on `info`: the classes below it, and their own definitions of `name`, noted."""
        if info.fullname not in self.below:
            self.below[info.fullname] = tuple(sub.fullname for sub in self.classes_below(info))
        for sub in self.classes_below(info):
            if name in sub.names:
                self.members.setdefault(sub.fullname, {})[name] = tuple(self.targets(sub.names[name].node))
        return Overrides(info.fullname, name)

    def classes_below(self, info: TypeInfo) -> list[TypeInfo]:
        """The package's classes an object of static type `info` can be: its subclasses, and for a
        protocol every class that implements it."""
        if not info.is_protocol:
            return self.subclasses.get(info, [])
        if info not in self._below:
            protocol = fill_typevars_with_any(info)
            self._below[info] = [
                c for c in self.classes if c is not info and is_subtype(fill_typevars_with_any(c), protocol)
            ]
        return self._below[info]

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
    """A module's facts the reader needs before it reads any body: subclasses, decorators, each
    function's file, and what each variable or attribute is assigned."""

    def __init__(self, reader: Reader, tree: MypyFile) -> None:
        self.reader = reader
        self.tree = tree
        self.path = shown(tree.path)

    def run(self) -> None:
        for node in self.tree.defs:
            self.walk(node)

    def visit_class_def(self, o: ClassDef) -> None:
        self.reader.classes.append(o.info)
        for base in o.info.mro[1:]:
            self.reader.subclasses.setdefault(base, []).append(o.info)
        self.children(o)

    def visit_func_def(self, o: FuncDef) -> None:
        self.reader.where[o] = self.path
        self.children(o)

    def visit_decorator(self, o: Decorator) -> None:
        self.reader.decorators[o.func] = list(o.decorators)
        self.children(o)

    def visit_assignment_stmt(self, o: AssignmentStmt) -> None:
        for lvalue in o.lvalues:
            target = self._target(lvalue)
            if target is not None:
                self.reader.stored.setdefault(target, []).append((self.path, o.rvalue))
        self.children(o)

    def _target(self, lvalue: Expression) -> SymbolNode | None:
        """The module- or class-level variable, or the attribute, an assignment stores into (not a local)."""
        if isinstance(lvalue, NameExpr):
            return lvalue.node if isinstance(lvalue.node, Var) and lvalue.kind != LDEF else None
        if isinstance(lvalue, MemberExpr):
            if isinstance(lvalue.node, Var):
                return lvalue.node
            for info in receivers(self.reader.types.get(lvalue.expr)):
                found = info.get(lvalue.name)
                if found is not None and isinstance(found.node, Var):
                    return found.node
        return None


class Body(Walker):
    """The steps of one function's body (and of anything nested in it), in source order."""

    def __init__(self, reader: Reader, path: str) -> None:
        self.reader = reader
        self.types = reader.types
        self.path = path
        self.steps: list[Step] = []

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
            self.steps.append(self.reader.overrides(info, name))

    def refer(self, o: Expression, node: SymbolNode | None) -> None:
        if isinstance(node, TypeInfo):
            codes = self.reader.package.codes
            code = next((codes[b.fullname] for b in node.mro if b.fullname in codes), None)
            if code is not None:
                self.steps.append(Site(code, self.path, o.line))
            return
        self.steps.extend(Ref(target) for target in self.reader.targets(node))

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
                    self.steps.append(Site(arg.value, self.path, o.line))
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
    """What an assigned value leaves to be called later, as steps of the variable: functions named but not
    called there (what a call returns is a value, followed by its type, unless it is itself a function:
    then the factory, whose body holds it), lambdas whole, and error classes however they appear."""

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
