"""Which stored transaction a row of an export is: by the exporter's ID, else by content.

MoneyForward ME exports carry an `ID` column (a 22-character id per transaction).
A row with an ID is that transaction wherever it appears in the file, so a
re-export with a new row on top (rows shift) or one edited amount (same ID,
other fields) is recognised. A row without an ID is identified by its content
(every field but the row number) plus its occurrence among identical rows, so
two identical purchases stay two transactions. The row number is only where
the row sits now.

`plan` compares a file's rows with the rows stored for it and says what to
add, change, move (same row, other position) and remove. Rows without an ID
that are left over on both sides and share date and description are one row
edited (e.g. its amount), reported as changed rather than removed + added.
Pure Python: the importer applies the plan in its transaction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .csvfile import RowTuple

#: RowTuple positions
_ROW, _DATE, _DESC, _EXT = 0, 1, 3, 10


@dataclass(frozen=True, slots=True)
class Stored:
    """A stored transaction: its id, source and the RowTuple it was stored from."""

    id: int
    source: str
    row: RowTuple


@dataclass
class Plan:
    added: list[RowTuple] = field(default_factory=list)
    #: (stored, new row): same transaction, other fields
    changed: list[tuple[Stored, RowTuple]] = field(default_factory=list)
    #: (stored, new row): same fields, other row number or source
    moved: list[tuple[Stored, RowTuple]] = field(default_factory=list)
    removed: list[Stored] = field(default_factory=list)
    #: stored rows the file no longer holds but that are kept (a file with errors removes nothing)
    kept: list[Stored] = field(default_factory=list)
    unchanged: int = 0

    @property
    def touched(self) -> bool:
        return bool(self.added or self.changed or self.removed)

    def months(self) -> list[str]:
        """Months ('YYYY-MM') whose rows this plan adds, changes or removes."""
        days = [r[_DATE] for r in self.added]
        days += [d for s, r in self.changed for d in (s.row[_DATE], r[_DATE])]
        days += [s.row[_DATE] for s in self.removed]
        return sorted({str(d)[:7] for d in days})


def keys(rows: Iterable[RowTuple]) -> list[tuple[Any, ...]]:
    """Each row's identity: (ID, n) or (content, n), n counting earlier rows of the same ID / content."""
    seen: dict[tuple[Any, ...], int] = defaultdict(int)
    out = []
    for r in rows:
        base: tuple[Any, ...] = ("id", r[_EXT]) if r[_EXT] else ("content", r[1:])
        out.append((base, seen[base]))
        seen[base] += 1
    return out


def plan(source: str, stored: Sequence[Stored], rows: Sequence[RowTuple], *, clean: bool) -> Plan:
    """What turns `stored` into this file's `rows` under `source`; `clean=False` (row errors) removes nothing.

    Three passes over what is still unmatched: the identity (`keys`); the content without the ID when one side
    has none (a file re-saved without its ID column: same rows, not removed + added); date and description when
    neither has an ID (one row edited, e.g. its amount).
    """
    result = Plan()
    left: dict[Any, Stored] = dict(zip(keys(s.row for s in stored), stored, strict=True))
    left_rows: list[RowTuple] = []
    for key, r in zip(keys(rows), rows, strict=True):
        s = left.pop(key, None)
        if s is None:
            left_rows.append(r)
        else:
            _place(result, source, s, r)
    left_rows = _pair(result, source, left, left_rows, lambda row: row[1:_EXT], lambda a, b: not (a and b))
    left_rows = _pair(result, source, left, left_rows, lambda row: (row[_DATE], row[_DESC]), lambda a, b: not (a or b))
    result.added.extend(left_rows)
    (result.removed if clean else result.kept).extend(left.values())
    return result


def _place(result: Plan, source: str, s: Stored, r: RowTuple) -> None:
    """A matched pair: changed when a field other than the row number (or the ID alone) differs."""
    if s.row[1:_EXT] != r[1:_EXT]:
        result.changed.append((s, r))
    elif s.row != r or s.source != source:
        result.moved.append((s, r))
    else:
        result.unchanged += 1


def _pair(
    result: Plan,
    source: str,
    left: dict[Any, Stored],
    rows: list[RowTuple],
    signature: Callable[[RowTuple], Any],
    ids_allow: Callable[[object, object], bool],
) -> list[RowTuple]:
    """Match leftover rows to leftover stored rows of the same signature, in order; returns the rows left."""
    spare: dict[Any, list[Any]] = defaultdict(list)
    for key, s in left.items():
        spare[signature(s.row)].append(key)
    unmatched = []
    for r in rows:
        queue = spare.get(signature(r), [])
        key = next((k for k in queue if ids_allow(left[k].row[_EXT], r[_EXT])), None)
        if key is None:
            unmatched.append(r)
            continue
        queue.remove(key)
        _place(result, source, left.pop(key), r)
    return unmatched
