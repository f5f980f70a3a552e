"""Scanning data directories and loading export files into SQLite, idempotently.

A row's identity is (source file name, row number): importing the same file
again inserts nothing and counts every row as skipped. One bad file or row is
reported and never stops the rest.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from .csvfile import RowError, read_tuples
from .db import Database, refresh_aggregates

log = logging.getLogger(__name__)

FILE_GLOB = "収入・支出詳細_*.csv"
MAX_REPORTED_ERRORS = 100

INSERT = """
INSERT OR IGNORE INTO transactions
    (source_file, row_number, date, amount, description, category_major, category_minor,
     account, memo, is_target, is_transfer, external_id)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""


@dataclass
class ImportReport:
    files_processed: int = 0
    files_failed: int = 0
    imported: int = 0
    skipped: int = 0
    error_rows: int = 0
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


def import_files(db: Database, paths: list[Path]) -> ImportReport:
    report = ImportReport()
    started = time.perf_counter()
    with db.transaction() as con:
        for path in paths:
            rows, errors = read_tuples(path)
            report.files_processed += 1
            if errors and not rows and any(e.row is None for e in errors):
                report.files_failed += 1
            report.add_errors(errors)
            if not rows:
                continue
            before = con.total_changes
            source = path.name
            con.executemany(INSERT, [(source, *r) for r in rows])
            inserted = con.total_changes - before
            report.imported += inserted
            report.skipped += len(rows) - inserted
        if report.imported:
            refresh_aggregates(con)
            con.execute("PRAGMA analysis_limit=1000")
            con.execute("ANALYZE")  # keeps the planner off the low-selectivity idx_is_duplicate
    log.info(
        "household import: files=%d imported=%d skipped=%d errors=%d in %.0f ms",
        report.files_processed,
        report.imported,
        report.skipped,
        len(report.errors),
        (time.perf_counter() - started) * 1000,
    )
    return report
