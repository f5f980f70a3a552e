"""Docstring coverage of the public API of kumitate/ and codegen/ (issue 31: a declared public API).

Public means reachable without an underscore: a class or function whose name and every enclosing
class's name do not start with `_`, in a module whose path has no `_`-prefixed part (`__init__.py`
counts as public; `__main__.py`, a script, does not). Methods count as functions; dunders, functions
nested in functions, `@overload` stubs and property setters/deleters do not. `make docstrings` fails
when either package, or both together, is below a threshold; `--list` names what lacks a docstring.
Read with `ast`, so nothing is imported.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CLASS_THRESHOLD",
    "FUNCTION_THRESHOLD",
    "PACKAGES",
    "Coverage",
    "Definition",
    "coverage",
    "definitions",
    "public_modules",
]

PACKAGES = ("kumitate", "codegen")
CLASS_THRESHOLD = 85.0
FUNCTION_THRESHOLD = 80.0


@dataclass(frozen=True)
class Definition:
    """One public class or function: where it is and whether it says why it exists."""

    module: str
    qualname: str
    kind: str  # "class" or "function"
    line: int
    documented: bool


@dataclass(frozen=True)
class Coverage:
    """Documented / total public classes and functions of a set of modules."""

    classes: int
    documented_classes: int
    functions: int
    documented_functions: int

    @property
    def class_percent(self) -> float:
        """Share of public classes with a docstring (100 when there are none)."""
        return 100.0 * self.documented_classes / self.classes if self.classes else 100.0

    @property
    def function_percent(self) -> float:
        """Share of public functions and methods with a docstring (100 when there are none)."""
        return 100.0 * self.documented_functions / self.functions if self.functions else 100.0


def _is_public_module(path: Path, root: Path) -> bool:
    parts = path.relative_to(root).with_suffix("").parts
    return all(part == "__init__" or not part.startswith("_") for part in parts)


def _skipped_function(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    if node.name.startswith("_"):
        return True
    for decorator in node.decorator_list:
        name = decorator.attr if isinstance(decorator, ast.Attribute) else getattr(decorator, "id", "")
        if name in {"overload", "setter", "deleter"}:
            return True
    return False


def _walk(body: Sequence[ast.stmt], module: str, prefix: str) -> Iterator[Definition]:
    for node in body:
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            qualname = prefix + node.name
            yield Definition(module, qualname, "class", node.lineno, ast.get_docstring(node) is not None)
            yield from _walk(node.body, module, qualname + ".")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _skipped_function(node):
            documented = ast.get_docstring(node) is not None
            yield Definition(module, prefix + node.name, "function", node.lineno, documented)


def public_modules(root: Path, packages: Sequence[str] = PACKAGES) -> Iterator[tuple[str, Path]]:
    """(dotted name, path) of every public module of `packages` under `root`, in path order."""
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if _is_public_module(path, root):
                yield ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__"), path


def definitions(root: Path, packages: Sequence[str] = PACKAGES) -> list[Definition]:
    """Every public class and function of `packages` under `root`, in path and line order."""
    found: list[Definition] = []
    for module, path in public_modules(root, packages):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found.extend(_walk(tree.body, module, ""))
    return found


def coverage(found: Sequence[Definition]) -> Coverage:
    """Count `found` into class and function figures."""
    classes = [d for d in found if d.kind == "class"]
    functions = [d for d in found if d.kind == "function"]
    return Coverage(
        classes=len(classes),
        documented_classes=sum(d.documented for d in classes),
        functions=len(functions),
        documented_functions=sum(d.documented for d in functions),
    )


def _line(label: str, figures: Coverage) -> str:
    return (
        f"{label:<10} classes {figures.documented_classes}/{figures.classes} ({figures.class_percent:.1f}%)"
        f"  functions {figures.documented_functions}/{figures.functions} ({figures.function_percent:.1f}%)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Print the figures per package and in total; exit 1 when any of them is below a threshold."""
    parser = argparse.ArgumentParser(prog="python -m codegen.docstrings", description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--list", action="store_true", help="name every public definition without a docstring")
    args = parser.parse_args(argv)
    found = definitions(args.root)
    figures = {package: coverage([d for d in found if d.module.split(".")[0] == package]) for package in PACKAGES}
    figures["total"] = coverage(found)
    for label, counted in figures.items():
        print(_line(label, counted))
    if args.list:
        for d in found:
            if not d.documented:
                print(f"  missing: {d.module}.{d.qualname} ({d.kind}, line {d.line})")
    failed = any(f.class_percent < CLASS_THRESHOLD or f.function_percent < FUNCTION_THRESHOLD for f in figures.values())
    if failed:
        print(
            f"docstrings: below the thresholds (classes >= {CLASS_THRESHOLD:.0f}%, functions >= "
            f"{FUNCTION_THRESHOLD:.0f}%); `python -m codegen.docstrings --list` names what lacks one",
            file=sys.stderr,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
