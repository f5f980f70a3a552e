"""A progress bar on stderr for `kumitate call`, fed by the tool's progress reports.

Only on a terminal: piped or redirected output (scripts, CI) stays exactly the result JSON.
The bar is rich's, whose updates are thread-safe, so an in-process call's worker thread may
report to it directly.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress


class Bar:
    """One task on a rich Progress: `report(done, total, message)` from any thread."""

    def __init__(self, progress: Progress, label: str) -> None:
        self._progress = progress
        self._task = progress.add_task(label, total=None)

    def report(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """Move the bar to `done` of `total`, with `message` as its label (a progress sink)."""
        # rich leaves a total or description given as None as it was
        self._progress.update(self._task, completed=done, total=total, description=message or None)

    async def on_progress(self, done: float, total: float | None, message: str | None) -> None:
        """The same, as a fastmcp client progress handler."""
        self.report(done, total, message)


@contextmanager
def progress_bar(label: str, *, enabled: bool | None = None) -> Iterator[Bar | None]:
    """A bar while the block runs when stderr is a terminal (or `enabled`), else None."""
    if not (sys.stderr.isatty() if enabled is None else enabled):
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        yield Bar(progress, label)
