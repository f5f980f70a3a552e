"""Scanning data directories and loading export files into SQLite, idempotently.

A row's identity is (source, row number). The source names the file itself, not
only its name, so two different exports with the same file name (a real
`収入・支出詳細_2025-06-01_2025-06-30.csv` and the bundled sample of that name) never
collide, and importing the same file again inserts nothing and counts every row
as skipped:

* a bundled sample (in the sample directory) is `sample:<file name>`, wherever the checkout lives;
* any other file is its resolved absolute path.

Databases from before this rule keyed rows by the bare file name. Those rows, and
rows of a file that has since moved (its old path no longer exists), are adopted
by the file they came from: a stored row moves to the new source only when it
equals that file's row of the same number, field by field, so a name that two
files shared is split between them correctly. Adopted rows keep their ids and
duplicate decisions and count as skipped. Rows no current file claims are kept.

When the bundled samples are not among the directories (HOUSEHOLD_DATA_DIR is set
without HOUSEHOLD_INCLUDE_SAMPLES=1), sample rows already stored are deleted, with
the duplicate checks that refer to them, so real data never mixes with samples.

One bad file or row is reported and never stops the rest.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from .csvfile import RowError, RowTuple, read_tuples
from .db import Database, refresh_aggregates

log = logging.getLogger(__name__)

FILE_GLOB = "収入・支出詳細_*.csv"
MAX_REPORTED_ERRORS = 100
SAMPLE_PREFIX = "sample:"
#: every sample source sorts inside [SAMPLE_PREFIX, _SAMPLE_END): a range the UNIQUE index answers
_SAMPLE_END = "sample;"

INSERT = """
INSERT OR IGNORE INTO transactions
    (source_file, row_number, date, amount, description, category_major, category_minor,
     account, memo, is_target, is_transfer, external_id)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
STORED_ROW = (
    "SELECT id, row_number, date, amount, description, category_major, category_minor, account, memo, is_target, "
    "is_transfer, external_id FROM transactions WHERE source_file = ?"
)


@dataclass
class ImportReport:
    files_processed: int = 0
    files_failed: int = 0
    imported: int = 0
    skipped: int = 0
    error_rows: int = 0
    adopted: int = 0
    samples_removed: int = 0
    errors: list[RowError] = field(default_factory=list)

    def add_errors(self, errors: list[RowError]) -> None:
        self.errors.extend(errors)

    def as_dict(self, total_transactions: int) -> dict[str, object]:
        shown = self.errors[:MAX_REPORTED_ERRORS]
        return {
            "files_processed": self.files_processed,
            "files_failed": self.files_failed,
            "total_imported": self.imported,
            "total_skipped": self.skipped,
            "total_errors": len(self.errors),
            "errors": [e.as_dict() for e in shown],
            "errors_truncated": len(self.errors) > len(shown),
            "total_transactions": total_transactions,
        }


def find_files(directories: list[Path]) -> list[Path]:
    """Export files in every directory, sorted by name (the names sort by period)."""
    seen: dict[str, Path] = {}
    for directory in directories:
        if directory.is_dir():
            for path in sorted(directory.glob(FILE_GLOB)):
                seen.setdefault(str(path.resolve()), path)
    return sorted(seen.values(), key=lambda p: (p.name, str(p)))


def source_id(path: Path, sample_dir: Path | None) -> str:
    """The stored identity of an export file: `sample:<name>` for a bundled sample, else its resolved path."""
    resolved = path.resolve()
    if sample_dir is not None and resolved.parent == sample_dir.resolve():
        return SAMPLE_PREFIX + path.name
    return str(resolved)


def _base_name(source: str) -> str:
    if source.startswith(SAMPLE_PREFIX):
        return source[len(SAMPLE_PREFIX) :]
    return os.path.basename(source) if os.path.isabs(source) else source


def _orphans(source: str, name: str, known: set[str], current: set[str]) -> list[str]:
    """Stored sources `source` may adopt rows from: the legacy bare name, and moved files of that name."""
    found = [name] if name in known else []
    if not source.startswith(SAMPLE_PREFIX):
        found += sorted(
            s
            for s in known
            if s not in current and os.path.isabs(s) and _base_name(s) == name and not os.path.exists(s)
        )
    return found


def _adopt(con: sqlite3.Connection, source: str, orphans: list[str], rows: list[RowTuple]) -> int:
    """Move stored rows that equal this file's rows (same number, same fields) to `source`; returns how many."""
    by_number = {r[0]: r for r in rows}
    taken: set[int] = set()
    moves: list[tuple[str, int]] = []
    for orphan in orphans:
        for stored in con.execute(STORED_ROW, (orphan,)).fetchall():
            number = stored[1]
            mine = by_number.get(number)
            if mine is not None and number not in taken and tuple(stored[1:]) == mine:
                taken.add(number)
                moves.append((source, stored[0]))
    con.executemany("UPDATE transactions SET source_file = ? WHERE id = ?", moves)
    return len(moves)


def _remove_samples(con: sqlite3.Connection) -> int:
    """Delete every stored sample row, its duplicate checks, and marks that point at it; returns rows deleted."""
    samples = "SELECT id FROM transactions WHERE source_file >= ? AND source_file < ?"
    bounds = (SAMPLE_PREFIX, _SAMPLE_END)
    if con.execute(samples + " LIMIT 1", bounds).fetchone() is None:
        return 0
    con.execute(
        f"DELETE FROM duplicate_checks WHERE transaction_id_1 IN ({samples}) OR transaction_id_2 IN ({samples})",
        bounds * 2,
    )
    con.execute(
        "UPDATE transactions SET is_duplicate = 0, duplicate_of = NULL, updated_at = CURRENT_TIMESTAMP "
        f"WHERE duplicate_of IN ({samples})",
        bounds,
    )
    return con.execute("DELETE FROM transactions WHERE source_file >= ? AND source_file < ?", bounds).rowcount


def import_files(
    db: Database, paths: list[Path], *, sample_dir: Path | None = None, include_samples: bool = True
) -> ImportReport:
    """Import `paths`; with `include_samples=False`, first drop every stored row of the bundled samples."""
    report = ImportReport()
    started = time.perf_counter()
    with db.transaction() as con:
        known = {r[0] for r in con.execute("SELECT DISTINCT source_file FROM transactions")}
        sources = [(path, source_id(path, sample_dir)) for path in paths]
        current = {s for _, s in sources}
        if not include_samples and sample_dir is not None:
            legacy = {s for s in known if not s.startswith(SAMPLE_PREFIX) and not os.path.isabs(s)}
            if legacy:  # a database from before source paths: tell its sample rows apart first
                for path in find_files([sample_dir]):
                    if path.name in legacy:
                        sample = source_id(path, sample_dir)
                        report.adopted += _adopt(con, sample, [path.name], read_tuples(path)[0])
            report.samples_removed = _remove_samples(con)
            known = {s for s in known if not s.startswith(SAMPLE_PREFIX)}
        for path, source in sources:
            rows, errors = read_tuples(path)
            report.files_processed += 1
            if errors and not rows and any(e.row is None for e in errors):
                report.files_failed += 1
            report.add_errors(errors)
            if not rows:
                continue
            if source not in known:
                orphans = _orphans(source, path.name, known, current)
                if orphans:
                    report.adopted += _adopt(con, source, orphans, rows)
                known.add(source)
            before = con.total_changes
            con.executemany(INSERT, [(source, *r) for r in rows])
            inserted = con.total_changes - before
            report.imported += inserted
            report.skipped += len(rows) - inserted
        if report.imported or report.samples_removed:
            refresh_aggregates(con)
            con.execute("PRAGMA analysis_limit=1000")
            con.execute("ANALYZE")  # keeps the planner off the low-selectivity idx_is_duplicate
    log.info(
        "household import: files=%d imported=%d skipped=%d adopted=%d samples_removed=%d errors=%d in %.0f ms",
        report.files_processed,
        report.imported,
        report.skipped,
        report.adopted,
        report.samples_removed,
        len(report.errors),
        (time.perf_counter() - started) * 1000,
    )
    return report
