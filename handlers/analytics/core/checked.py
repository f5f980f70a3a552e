"""Queries that an export ran once, by their text: the same text again is exported in one round trip.

A small export's fixed cost is mostly the questions asked before its COPY: the SQL guard's parse in the
worker and the DESCRIBE for the column names (issue 32). For SQL that reads only the database's own tables,
both answers depend on the text alone: the data file is attached READ_ONLY and the service reads its
table list once, at start. So an export remembers them, and the next export of the same text sends the
worker only its COPY (which still runs there, under the worker's memory bound and the call's deadline).

SQL that names a materialized view, or lists them, is never remembered: views come and go on every
instance. Neither is a query that failed (nothing is remembered before the export is published).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

MAX_REMEMBERED = 256
"""Query texts held (at most 20,000 characters each: the guard's MAX_SQL_CHARS); the oldest goes first."""


@dataclass(frozen=True, slots=True)
class Checked:
    sql: str
    """What the guard returned for the text (without its trailing semicolons)."""
    columns: tuple[str, ...]
    """The result's column names, as DESCRIBE gave them."""


class CheckedQueries:
    """Query text -> Checked, bounded, safe from several threads."""

    def __init__(self, size: int = MAX_REMEMBERED) -> None:
        self._size = size
        self._known: dict[str, Checked] = {}
        self._lock = threading.Lock()

    def get(self, query: str) -> Checked | None:
        return self._known.get(query)

    def remember(self, query: str, checked: Checked) -> None:
        with self._lock:
            if query not in self._known and len(self._known) >= self._size:
                del self._known[next(iter(self._known))]
            self._known[query] = checked
