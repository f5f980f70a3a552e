"""The files of a data dir: which ones a backup takes, and copying one while hashing what is written."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path

TRANSIENT_SUFFIXES = ("-wal", "-shm", "-journal", ".migrate.lock", ".tmp")
TRANSIENT_PREFIXES = (".kumitate-health-probe",)
CHUNK = 1 << 20


def files(source: Path, *, skip: set[Path]) -> Iterator[tuple[Path, str]]:
    """The files under `source` (not the transient ones, not `skip`), with their relative POSIX paths."""
    for path in sorted(source.rglob("*")):
        if path in skip or any(parent in skip for parent in path.parents) or not path.is_file():
            continue
        if path.name.endswith(TRANSIENT_SUFFIXES) or path.name.startswith(TRANSIENT_PREFIXES):
            continue
        if "tmp" in path.relative_to(source).parts[:-1]:  # analytics' spill directories
            continue
        yield path, path.relative_to(source).as_posix()


def copied(path: Path, target: Path, relative: str) -> list[dict[str, str | int]]:
    """Copy one file of a live data dir into the backup: its manifest entry, or none when it expired
    and was removed while copying."""
    try:
        size, digest = copy(path, target / relative)
    except FileNotFoundError:
        return []
    return [{"path": relative, "size": size, "sha256": digest}]


def describe(path: Path, relative: str) -> dict[str, str | int]:
    """The manifest entry of a file already in the backup (the database, written by SQLite's backup API)."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(CHUNK):
            digest.update(chunk)
    return {"path": relative, "size": path.stat().st_size, "sha256": digest.hexdigest()}


def copy(source: Path, target: Path) -> tuple[int, str]:
    """Copy `source` to `target` (times and mode too), hashing the bytes written: the size and SHA-256."""
    target.parent.mkdir(parents=True, exist_ok=True)
    digest, size = hashlib.sha256(), 0
    with source.open("rb") as reader, target.open("wb") as writer:
        while chunk := reader.read(CHUNK):
            digest.update(chunk)
            writer.write(chunk)
            size += len(chunk)
    shutil.copystat(source, target)
    return size, digest.hexdigest()
