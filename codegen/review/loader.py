"""Materialise a side of the review (a git ref or a directory) as a loaded spec tree.

A side is a directory that contains specs/ (or is a specs directory), or else a git ref
of the repository: `git archive <ref> specs | tar -x` into a temporary directory. Either
way the specs are copied, so the meta-schema can be adjusted without touching the sources:
`renamed_from` is allowed in tool files even before specs/_meta/tool.schema.json declares it.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from codegen import specs


class LoadError(Exception):
    """A side cannot be read (not a directory, not a ref, no specs/ in it)."""


@dataclass(slots=True)
class Side:
    """One side of a review: its label (a git ref or a directory), where its specs were put, and the tree."""

    label: str
    specs_dir: Path
    tree: specs.SpecTree


def _is_specs_dir(path: Path) -> bool:
    return (path / "errors.yaml").is_file() or any(path.glob("*/service.yaml"))


def _git(repo: Path, *args: str, why: str = "") -> bytes:
    """git's output; LoadError with git's own words, or `why` where git says nothing (`--quiet`)."""
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)
    if proc.returncode != 0:
        said = proc.stderr.decode(errors="replace").strip() or why or f"exit status {proc.returncode}"
        raise LoadError(f"git {' '.join(args)}: {said}")
    return proc.stdout


def _from_git(ref: str, repo: Path, dest: Path) -> Path:
    top = Path(_git(repo, "rev-parse", "--show-toplevel", why=f"{repo} is not in a git repository").decode().strip())
    _git(
        repo,
        "rev-parse",
        "--verify",
        "--quiet",
        f"{ref}^{{commit}}",
        why=f"{ref!r} is not a commit, branch or tag of this repository (see `git branch -a`)",
    )
    # the specs directory of the repository, relative to the top level (repo may be a subdirectory)
    here = repo.resolve()
    prefix = (here / "specs").relative_to(top.resolve()).as_posix() if here != top.resolve() else "specs"
    data = _git(repo, "archive", "--format=tar", ref, prefix)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    out = dest / prefix
    if not out.is_dir():
        raise LoadError(f"{ref} has no {prefix}/ directory")
    if prefix != "specs":
        shutil.move(str(out), dest / "specs")
    return dest / "specs"


def uncommitted_specs(repo: Path) -> list[str]:
    """The files under repo's specs/ whose working-tree state differs from HEAD (modified, staged,
    deleted or untracked); empty when there are none or repo is no git work tree."""
    proc = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=all", "--no-renames", "--", "specs"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        return []
    return sorted(line[3:] for line in proc.stdout.splitlines() if len(line) > 3)


def materialise(spec: str, workdir: Path, repo: Path | None = None) -> Path:
    """Copy the specs of `spec` (directory or git ref) to workdir/specs; return that directory."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = Path(spec)
    if path.is_dir():
        src = path / "specs" if (path / "specs").is_dir() else path
        if not _is_specs_dir(src):
            raise LoadError(f"{spec} is neither a specs directory nor a directory that holds specs/")
        target = workdir / "specs"
        shutil.copytree(src, target, ignore=shutil.ignore_patterns("__pycache__"))
        return target
    return _from_git(spec, repo or Path.cwd(), workdir)


def prepare_meta(specs_dir: Path, fallback: Path | None = None) -> None:
    """Make sure specs_dir/_meta exists and tool.schema.json allows `renamed_from`: a side without
    meta-schemas of its own borrows the fallback's (HEAD's), else the ones kumitate ships."""
    meta = specs_dir / "_meta"
    if not (meta / "tool.schema.json").is_file():
        own = fallback is not None and (fallback / "tool.schema.json").is_file()
        shutil.copytree(fallback if own and fallback else specs.PACKAGED_META, meta, dirs_exist_ok=True)
    tool_schema = meta / "tool.schema.json"
    doc = json.loads(tool_schema.read_text(encoding="utf-8"))
    props = doc.setdefault("properties", {})
    if "renamed_from" not in props:
        props["renamed_from"] = {"type": "string"}
        tool_schema.write_text(json.dumps(doc, indent=2), encoding="utf-8")


def load_side(spec: str, workdir: Path, repo: Path | None = None, meta_fallback: Path | None = None) -> Side:
    """Materialise `spec` (a git ref of `repo` or a directory) under `workdir` and load its spec tree;
    a side older than the meta-schemas borrows them from `meta_fallback`."""
    specs_dir = materialise(spec, workdir, repo)
    prepare_meta(specs_dir, meta_fallback)
    return Side(spec, specs_dir, specs.load(specs_dir))
