"""Every environment variable the code reads is in the settings table, docs/settings.md (issue 22: none undocumented),
and that table is the one generated from the typed settings: the runtime's (kumitate/settings/) and each
service's (handlers/<svc>/settings.py), by codegen/settings_doc.py."""

from __future__ import annotations

import re
from pathlib import Path

from codegen import settings_doc
from kumitate import settings
from kumitate.project import Project
from tests.conftest import REPO
from tests.review.test_service_layout import HANDLERS

SETTINGS_PAGE = REPO / "docs" / "settings.md"
"""Where this repository keeps the table (a new project's is in its README); codegen.__main__.SETTINGS_PAGES."""
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
    table = SETTINGS_PAGE.read_text(encoding="utf-8")
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)\*?`", table))
    wildcard = tuple(name.rstrip("*") for name in re.findall(r"`([A-Z][A-Z0-9_]+_)\*`", table))
    missing = sorted(
        name for name in read_variables() if name not in documented and not name.startswith(wildcard or ("\0",))
    )
    assert missing == [], f"declare these in a settings class (or docs/settings.md's library table): {missing}"
    assert len(read_variables()) > 30  # the scan itself finds what the code reads


def test_the_table_is_generated_from_the_settings() -> None:
    page = SETTINGS_PAGE.read_text(encoding="utf-8")
    assert settings_doc.rewrite(page, HANDLERS) == page, "run: make generate"
    assert settings_doc.BEGIN not in (REPO / "README.md").read_text(encoding="utf-8"), "one table, in docs/settings.md"
    declared = {name for name, _, _ in settings.Settings.variables()}
    assert {"HOST", "KUMITATE_DATA_DIR", "KUMITATE_DATABASE_URL", "KUMITATE_LOG_FORMAT"} <= declared


def test_no_module_of_the_runtime_reads_the_environment_but_the_settings() -> None:
    """kumitate/ reads variables through `Settings` only; these modules are the known exceptions."""
    allowed = {
        "project.py",  # KUMITATE_PROJECT for the developer commands that locate a project
        "metrics.py",  # PROMETHEUS_MULTIPROC_DIR: prometheus_client's own switch
        "cli.py",  # sets HOST/PORT/KUMITATE_SERVICES for worker processes, FASTMCP_LOG_LEVEL for fastmcp
    }
    exceptions = {
        REPO / "kumitate" / "settings" / "base.py",  # the one place: EnvSettings.from_env
        REPO / "kumitate" / "client" / "mcp.py",  # passes the environment on to a stdio server it starts
    }
    clients = REPO / "kumitate" / "clients"  # run beside a peer or an LLM (SPEAKER_A_*), never by the server
    readers = sorted(
        str(path.relative_to(REPO))
        for path in (REPO / "kumitate").rglob("*.py")
        if "os.environ" in path.read_text(encoding="utf-8")
        and path.name not in allowed
        and path not in exceptions
        and not path.is_relative_to(clients)
    )
    assert readers == []


def test_codegen_writes_the_table_into_whichever_page_holds_its_markers(tmp_path: Path) -> None:
    """A new project's table is in its README (kumitate init puts the markers there); this repository's
    is in docs/settings.md, so that its README stays a short quick start. `python -m codegen` rewrites
    the page that has the markers, and no page when none has them."""
    from codegen.__main__ import readme_table

    (tmp_path / "README.md").write_text("# a project\n", encoding="utf-8")
    project = Project.at(tmp_path)
    assert readme_table(project, tmp_path) == {}
    (tmp_path / "docs").mkdir()
    stale = f"# Settings\n\n{settings_doc.BEGIN}| stale |\n{settings_doc.END}\nafter the table\n"
    (tmp_path / "docs" / "settings.md").write_text(stale, encoding="utf-8")
    written = readme_table(project, tmp_path)
    assert list(written) == ["docs/settings.md"]
    page = written["docs/settings.md"]
    assert "| stale |" not in page and "`KUMITATE_DATA_DIR`" in page and page.endswith("after the table\n")
