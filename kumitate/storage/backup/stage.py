"""Where a restore copies to: a new directory that replaces the data dir (or the export directory) with
one rename once everything in it is checked, so a refused restore leaves it as it was."""

from __future__ import annotations

import os
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(slots=True)
class Stage:
    """A new directory that becomes `final` with one rename once everything in it is checked.

    It lies beside `final` (the same file system, so the rename is atomic and replaces an empty `final`).
    When `final` is a mount point (a container's volume) it cannot be renamed over, and when its parent
    may not be written nothing can be made beside it: then the stage lies inside it and its entries are
    renamed into place one by one."""

    final: Path
    dir: Path = field(init=False)
    inside: bool = field(init=False)
    existed: bool = field(init=False)
    created: list[Path] = field(init=False, default_factory=list)
    moved: list[str] = field(init=False, default_factory=list)
    done: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        self.final = self.final.resolve()  # a symlinked data dir: restore where it points
        self.existed = self.final.is_dir()
        self.inside = self.existed and os.path.ismount(self.final)
        token = secrets.token_hex(4)
        if not self.inside:
            for parent in reversed(self.final.parents):
                if not parent.exists():
                    parent.mkdir()
                    self.created.append(parent)
            self.dir = self.final.parent / f".{self.final.name}.restore-{token}"
            try:
                self.dir.mkdir()
            except PermissionError:  # a data dir the service may write, in a directory it may not
                if not self.existed:
                    raise
                self.inside = True
            else:
                if self.existed:
                    shutil.copymode(self.final, self.dir)
        if self.inside:
            self.dir = self.final / f".kumitate-restore-{token}"
            self.dir.mkdir()

    def commit(self) -> None:
        """Put the staged files in place: one rename, or (inside a mount point) one per entry."""
        if self.inside:
            try:
                for child in sorted(self.dir.iterdir()):
                    child.rename(self.final / child.name)
                    self.moved.append(child.name)
            except BaseException:
                self.undo()
                raise
            self.dir.rmdir()
        else:
            os.rename(self.dir, self.final)  # replaces an empty directory in one step
        self.done = True

    def undo(self) -> None:
        """Put a committed stage back where it was staged (a later stage's commit failed)."""
        if self.inside:
            self.dir.mkdir(exist_ok=True)
            for name in self.moved:
                (self.final / name).rename(self.dir / name)
        else:
            os.rename(self.final, self.dir)
            if self.existed:
                self.final.mkdir()
        self.done = False

    def discard(self) -> None:
        """Remove an uncommitted stage and the parents it made, leaving things as they were."""
        if self.done:
            return
        shutil.rmtree(self.dir, ignore_errors=True)
        for parent in reversed(self.created):
            try:
                parent.rmdir()
            except OSError:
                break


def commit(stages: list[Stage]) -> None:
    """The export directory first, the data dir last; a failure puts back what was already renamed."""
    for index, stage in enumerate(reversed(stages)):
        try:
            stage.commit()
        except BaseException:
            for earlier in list(reversed(stages))[:index]:
                earlier.undo()
            raise
