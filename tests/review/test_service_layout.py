"""One service layout (issue 19 items 4 and 5): a service reads the environment only in its
settings.py (a `ServiceSettings` subclass built in `create(setup)` with `setup.read(...)`; its client,
run beside an LLM or a peer and never by the server, reads its own), and every variable a spec gates a
resource on (`enabled_by:`) is one the service declares there."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from codegen import settings_doc, specs
from tests.conftest import REPO

HANDLERS = REPO / "handlers"
SERVICES = sorted(p.parent.name for p in HANDLERS.glob("*/__init__.py"))


def environment_reads(path: Path, root: Path = REPO) -> list[str]:
    """`file:line what` for each read of the environment, in line order: `os.environ`, `os.getenv`,
    `from os import environ/getenv`, and any `.env` (`settings.env`, `setup.settings.env.get(...)`)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Attribute) and (
            node.attr == "env"
            or (node.attr in ("environ", "getenv") and isinstance(node.value, ast.Name) and node.value.id == "os")
        ):
            found.append((node.lineno, f".{node.attr}"))
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [(node.lineno, f"from os import {a.name}") for a in node.names if a.name in ("environ", "getenv")]
    return [f"{path.relative_to(root)}:{line} {what}" for line, what in sorted(found)]


def _client_side(path: Path, service: str) -> bool:
    """A service's client (handlers/<svc>/client.py or client/): run beside an LLM or a peer, never by the
    server, it reads its own process's variables (SPEAKER_A_*, KUMITATE_EXPORT_DIR) as any client does."""
    return path.relative_to(HANDLERS / service).parts[0] in {"client.py", "client"}


@pytest.mark.parametrize("service", SERVICES)
def test_a_service_reads_the_environment_only_in_its_settings(service: str) -> None:
    reads = [
        read
        for path in sorted((HANDLERS / service).rglob("*.py"))
        if path != HANDLERS / service / "settings.py" and not _client_side(path, service)
        for read in environment_reads(path)
    ]
    assert reads == [], f"declare these in handlers/{service}/settings.py and read them with setup.read(...)"


def test_the_scan_sees_every_way_of_reading(tmp_path: Path) -> None:
    module = tmp_path / "reads.py"
    module.write_text(
        "import os\nfrom os import getenv\n"
        "a = os.environ['A']\nb = os.getenv('B')\nc = settings.env.get('C')\nd = setup.settings.env['D']\n"
        "e = environ_like.environment\nf = os.path.join('a')\n"
    )
    assert environment_reads(module, tmp_path) == [
        "reads.py:2 from os import getenv",
        "reads.py:3 .environ",
        "reads.py:4 .getenv",
        "reads.py:5 .env",
        "reads.py:6 .env",
    ]


def enabled_by() -> dict[str, set[str]]:
    """Service -> the variables its resources are gated on (`enabled_by:`), for services that have any."""
    tree = specs.load(REPO / "specs")
    gated = {svc.name: {r.enabled_by for r in svc.resources if r.enabled_by} for svc in tree.services}
    return {name: variables for name, variables in gated.items() if variables}


@pytest.mark.parametrize("service", sorted(enabled_by()))
def test_every_enabled_by_variable_is_a_declared_setting(service: str) -> None:
    classes = settings_doc.service_settings(HANDLERS).get(service, [])
    declared = {name for cls in classes for name, _, _ in cls.variables()}
    missing = enabled_by()[service] - declared
    assert not missing, f"declare {sorted(missing)} in handlers/{service}/settings.py"
