"""What a backup or restore tells its caller: a Report when it went ahead, a BackupError when it did not."""

from __future__ import annotations

from dataclasses import dataclass


class BackupError(RuntimeError):
    """A backup or restore that cannot go ahead; the message is one line that says why."""


@dataclass(frozen=True, slots=True)
class Report:
    """What a backup or restore did: the database's fate, how many files were copied, what to know."""

    database: str
    """What happened to the database: `copied (revision …)` or what to do instead (PostgreSQL)."""
    files: int
    """How many files besides the database were copied."""
    warnings: tuple[str, ...] = ()
    """One line each: what a restore could not check or left out (the command prints them on stderr)."""


def one_line(error: object) -> str:
    """An error's text on one line of at most 200 characters, to end a BackupError's message with."""
    text = " ".join(str(error).split())
    return text if len(text) <= 200 else text[:199] + "…"
