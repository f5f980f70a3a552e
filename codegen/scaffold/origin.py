"""Which kumitate a new project depends on: the one that made it.

`kumitate init` records the requirement of the running kumitate in the project's pyproject.toml, so
the project's `make test` installs that same kumitate into a fresh venv with no extra variables: an
exact version when it came from a package index, else the wheel, directory or VCS commit it was
installed from. The installer's `direct_url.json` (PEP 610) says which; without one it came from an
index. A kumitate run from a source checkout (editable, or on PYTHONPATH) is that checkout's directory,
whatever metadata lies about. The runtime is the project's dependency; the generator (the `codegen`
extra) its dev one.
"""

from __future__ import annotations

import json
import re
from importlib import metadata
from pathlib import Path

NAME = "kumitate"
_NAMED = re.compile(r"^\s*kumitate(\s*\[[^\]]*\])?", re.IGNORECASE)


def running() -> str:
    """The requirement of the kumitate running this code (no extras)."""
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file() and (checkout / "kumitate" / "__init__.py").is_file():
        return f"{NAME} @ {checkout.as_uri()}"
    try:
        dist = metadata.distribution(NAME)
    except metadata.PackageNotFoundError:  # a source tree on sys.path, never installed
        return NAME
    return from_direct_url(dist.version, dist.read_text("direct_url.json"))


def from_direct_url(version: str, direct_url: str | None) -> str:
    """PEP 610's record as a PEP 508 requirement: `kumitate @ <url>` (archive, directory or VCS
    commit), or `kumitate==<version>` when nothing was recorded (an index install)."""
    if not direct_url:
        return f"{NAME}=={version}"
    info = json.loads(direct_url)
    url = str(info["url"])
    vcs = info.get("vcs_info")
    if isinstance(vcs, dict):
        url = f"{vcs['vcs']}+{url}@{vcs.get('commit_id') or vcs.get('requested_revision')}"
    if info.get("subdirectory"):
        url += f"#subdirectory={info['subdirectory']}"
    return f"{NAME} @ {url}"


def given(text: str) -> str:
    """`init --kumitate`: a wheel or directory path (as pip tells one from a name: a `/`, a leading
    `.`, or an archive's suffix), or a PEP 508 requirement for kumitate."""
    head = text.split("[", 1)[0]
    path = Path(head)
    if ("/" in head or head.startswith(".") or head.endswith((".whl", ".tar.gz", ".zip"))) and path.exists():
        return f"{NAME} @ {path.resolve().as_uri()}"
    if not _NAMED.match(text):
        raise ValueError(f"--kumitate {text!r}: not a path that exists, nor a requirement for kumitate")
    return _NAMED.sub(NAME, text, count=1).strip()


def with_extra(requirement: str, extra: str) -> str:
    """The same requirement with `[extra]`: `kumitate[codegen] @ file:///...`, `kumitate[codegen]==0.1.0`."""
    return _NAMED.sub(f"{NAME}[{extra}]", requirement, count=1)
