"""The start-up fast path: the heads and the replaced revisions, read from the migration scripts' own
lines without Alembic.

Alembic (and the Mako and Pygments it brings) is imported only when there is something to do: the
expected heads are read from the scripts' `revision` / `down_revision` lines (`Migrations.expected`),
so a database already at them starts without Alembic, which is most of a restart's import time saved.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

_ASSIGNMENT = r"^{name}\s*(?::[^=\n]*)?=\s*(.+?)\s*$"
_REVISION = re.compile(_ASSIGNMENT.format(name="revision"), re.MULTILINE)
_DOWN_REVISION = re.compile(_ASSIGNMENT.format(name="down_revision"), re.MULTILINE)
_REPLACES = re.compile(_ASSIGNMENT.format(name="replaces"), re.MULTILINE)


def expected_heads(locations: Iterable[Path]) -> frozenset[str] | None:
    """The heads of the scripts in `locations`, read without Alembic (None when a script is not in the
    plain form `revision = "…"` / `down_revision = …`: then only Alembic can tell)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for directory in locations:
        for script in directory.glob("*.py"):
            if script.name == "__init__.py" or script.name.startswith(".#"):
                continue
            source = script.read_text(encoding="utf-8")
            found, down = _REVISION.search(source), _DOWN_REVISION.search(source)
            if found is None or down is None:
                return None
            try:
                revision, parent = ast.literal_eval(found.group(1)), ast.literal_eval(down.group(1))
            except (ValueError, SyntaxError):
                return None
            if not isinstance(revision, str):
                return None
            revisions.add(revision)
            parent = () if parent is None else (parent,) if isinstance(parent, str) else parent
            if not isinstance(parent, tuple | list) or not all(isinstance(p, str) for p in parent):
                return None
            parents.update(parent)
    return frozenset(revisions - parents)


def replaced_revisions(directories: Iterable[Path]) -> frozenset[str]:
    """The revisions the scripts in `directories` took over (their module-level `replaces = "…"`)."""
    found: set[str] = set()
    for directory in directories:
        for script in directory.glob("*.py"):
            match = _REPLACES.search(script.read_text(encoding="utf-8"))
            if match is not None:
                value = ast.literal_eval(match.group(1))
                found.update((value,) if isinstance(value, str) else value)
    return frozenset(found)
