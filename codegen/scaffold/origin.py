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
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlsplit

NAME = "kumitate"
VENDOR = "vendor"
"""Where a new project keeps the kumitate wheel it was made from, when that came from a local file."""
_WHEEL_VERSION = re.compile(r"^kumitate-([^-]+)-")
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


@dataclass(frozen=True, slots=True)
class Portable:
    """What a new project records so that a CI runner can install the same kumitate.

    `requirement` goes into pyproject.toml; `wheel`, when set, is a local wheel to copy into the project's
    vendor/ (the requirement then pins its version, and the project's Makefile points pip there);
    `warning` says why the requirement will not install anywhere but here."""

    requirement: str
    wheel: Path | None = None
    warning: str = ""


def portable(requirement: str) -> Portable:
    """An index version or a VCS URL as it is; a local wheel vendored (pinned by version); a local
    directory as it is, with a warning (a runner has no such path)."""
    _, at, url = requirement.partition(" @ ")
    if not at or not url.startswith("file:"):
        return Portable(requirement)
    path = Path(unquote(urlsplit(url).path))
    found = _WHEEL_VERSION.match(path.name)
    if path.suffix == ".whl" and path.is_file() and found:
        return Portable(f"{NAME}=={found.group(1)}", wheel=path)
    return Portable(
        requirement,
        warning=(
            f"kumitate is installed from the local directory {path}: pyproject.toml names that path, which no CI "
            f"runner has. Build a wheel (pip wheel --no-deps {path} -w dist) and run init with --kumitate "
            "dist/kumitate-*.whl (it is copied into vendor/), or give --kumitate a version on an index or a git URL"
        ),
    )
