"""Every environment variable the code reads is in the README's settings table (issue 22: none undocumented)."""

from __future__ import annotations

import re

from tests.conftest import REPO

READS = re.compile(r"""(?:environ|env)(?:\.get)?\s*(?:\(|\[)\s*["']([A-Z][A-Z0-9_]+)["']""")
NAMED = re.compile(r"""["']((?:KUMITATE|YANA|HOUSEHOLD|ATTENDANCE|OPENAI|PROMETHEUS|FASTMCP)_[A-Z0-9_]+)["']""")
PREFIXES = ("KUMITATE_", "YANA_", "HOUSEHOLD_", "ATTENDANCE_", "OPENAI_", "PROMETHEUS_", "FASTMCP_")


def read_variables() -> set[str]:
    found: set[str] = set()
    for root in ("kumitate", "handlers"):
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
    assert missing == [], f"add these to the README's settings table: {missing}"
    assert len(read_variables()) > 30  # the scan itself finds what the code reads
