"""Every environment variable the code reads is in the README's settings table (issue 22: none undocumented),
and that table is the one generated from the typed settings: the runtime's (kumitate/settings.py) and each
service's (handlers/<svc>/settings.py), by codegen/settings_doc.py."""

from __future__ import annotations

import re

from codegen import settings_doc
from kumitate import settings
from tests.conftest import REPO
from tests.review.test_service_layout import HANDLERS

READS = re.compile(r"""(?:environ|env)(?:\.get)?\s*(?:\(|\[)\s*["']([A-Z][A-Z0-9_]+)["']""")
NAMED = re.compile(r"""["']((?:KUMITATE|YANA|HOUSEHOLD|ATTENDANCE|OPENAI|PROMETHEUS|FASTMCP)_[A-Z0-9_]+)["']""")
PREFIXES = ("KUMITATE_", "YANA_", "HOUSEHOLD_", "ATTENDANCE_", "OPENAI_", "PROMETHEUS_", "FASTMCP_")


def read_variables(roots: tuple[str, ...] = ("kumitate", "handlers")) -> set[str]:
    found: set[str] = set()
    for root in roots:
        for path in (REPO / root).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            found |= set(READS.findall(text)) | set(NAMED.findall(text))
    return {name for name in found if name.startswith(PREFIXES) or name in ("HOST", "PORT")}


def test_every_variable_is_in_the_settings_table() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Settings", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)\*?`", table))
    wildcard = tuple(name.rstrip("*") for name in re.findall(r"`([A-Z][A-Z0-9_]+_)\*`", table))
    missing = sorted(
        name for name in read_variables() if name not in documented and not name.startswith(wildcard or ("\0",))
    )
    assert missing == [], f"declare these in a settings class (or the README's library table): {missing}"
    assert len(read_variables()) > 30  # the scan itself finds what the code reads


def test_the_table_is_generated_from_the_settings() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert settings_doc.rewrite(readme, HANDLERS) == readme, "run: make generate"
    declared = {name for name, _, _ in settings.Settings.variables()}
    assert {"HOST", "KUMITATE_DATA_DIR", "KUMITATE_DATABASE_URL", "KUMITATE_LOG_FORMAT"} <= declared


def test_no_module_of_the_runtime_reads_the_environment_but_the_settings() -> None:
    """kumitate/ reads variables through `Settings` only; these modules are the known exceptions."""
    allowed = {
        "settings.py",  # the one place
        "project.py",  # KUMITATE_PROJECT for the developer commands that locate a project
        "metrics.py",  # PROMETHEUS_MULTIPROC_DIR: prometheus_client's own switch
        "cli.py",  # sets HOST/PORT/KUMITATE_SERVICES for worker processes, FASTMCP_LOG_LEVEL for fastmcp
        "client.py",  # passes the environment on to a stdio server it starts
    }
    clients = REPO / "kumitate" / "clients"  # run beside a peer or an LLM (SPEAKER_A_*), never by the server
    readers = sorted(
        str(path.relative_to(REPO))
        for path in (REPO / "kumitate").rglob("*.py")
        if "os.environ" in path.read_text(encoding="utf-8")
        and path.name not in allowed
        and not path.is_relative_to(clients)
    )
    assert readers == []
