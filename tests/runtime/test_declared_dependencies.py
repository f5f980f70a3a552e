"""Every third-party import is declared, in the extra of the code that imports it (what deptry checks).

kumitate/ (the runtime) may use only `dependencies`; codegen/ (generator, review, scaffolding) also
the `codegen` extra, and codegen/fuzz/ (`make fuzz`) the `fuzz` extra too; handlers/ and samples/
(the bundled services, their clients run beside an LLM or a peer, and their sample data) also the
`services` extra.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions

import pytest

from tests.conftest import REPO

FIRST_PARTY = {"kumitate", "codegen", "handlers", "generated", "samples", "tests", "deploy", "bench"}
EXTRAS = {
    "kumitate": (),
    "codegen": ("codegen",),
    "codegen/fuzz": ("codegen", "fuzz"),
    "handlers": ("services",),
    "samples": ("services",),
    "generated": (),
}
NESTED = {"codegen": ("fuzz",)}
"""Sub-packages checked as roots of their own (with their own extras), not as part of the parent."""


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _declared(extras: tuple[str, ...]) -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    return {_name(r) for r in requirements}


def _imports(root: str) -> set[str]:
    found: set[str] = set()
    skip = tuple(REPO / root / nested for nested in NESTED.get(root, ()))
    for path in (REPO / root).rglob("*.py"):
        if any(path.is_relative_to(nested) for nested in skip):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m not in FIRST_PARTY}


@pytest.mark.parametrize("root", sorted(EXTRAS))
def test_every_import_is_declared(root: str) -> None:
    distributions = packages_distributions()
    declared = _declared(EXTRAS[root])
    undeclared = sorted(
        f"{module} ({', '.join(distributions.get(module, ['?']))})"
        for module in _imports(root)
        if not {_name(d) for d in distributions.get(module, [module])} & declared
    )
    assert undeclared == [], f"declare in pyproject.toml ({root}: {EXTRAS[root] or 'dependencies'})"
