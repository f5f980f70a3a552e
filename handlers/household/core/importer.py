"""Scanning data directories and loading export files into SQLite, idempotently.

A file is a snapshot of its period: each import makes the rows stored for it
equal to the file (`identity.plan`: rows matched by the exporter's ID, else by
content), so a re-exported month with an edited amount, a new row on top, or a
row gone is replaced, and the report counts what was added, changed and
removed. Importing the same file again changes nothing and counts every row as
skipped. Ids of rows that stay (and their duplicate decisions) are kept; a
removed row takes its duplicate checks with it. A file with row errors removes
nothing (its unreadable rows may be the missing ones); an unreadable file is
left alone. Everything runs in one transaction: a failure changes nothing. Progress is reported per
file (kumitate.context.progress); a call cancelled between files rolls back.

Two exports of the same period in one folder (a browser saves the second as
`… (1).csv`) are one month exported twice: the newest file (mtime) is the month,
takes over the rows stored for the other, and the other is reported as
superseded and not read.

The source names the file itself, not only its name, so two different exports
with the same file name (a real `収入・支出詳細_2025-06-01_2025-06-30.csv` and the
bundled sample of that name, or one per folder) never collide:

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

import hashlib
import logging
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from generated.household import models
from kumitate.context import progress

from .. import changes
from ..store import Connection, Store, imports, queries, refresh_aggregates
from .csvfile import RowError, RowTuple, read_tuples
from .identity import Plan, Stored, plan

log = logging.getLogger(__name__)

FILE_GLOB = "収入・支出詳細_*.csv"
MAX_REPORTED_ERRORS = 100
SAMPLE_PREFIX = "sample:"

#: an export's name, or a copy of it as a browser or file manager names one: `… (1).csv`, `… - コピー.csv`;
#: any other suffix (`…_card.csv`) is a file of its own
PERIOD_RE = re.compile(
    r"^収入・支出詳細_(\d{4}-\d{2}-\d{2})_(\d{4}-\d{2}-\d{2})(?:\s*\(\d+\)|\s*-\s*コピー(?:\s*\(\d+\))?)?\.csv$"
)


@dataclass
class ImportReport:
    files_processed: int = 0
    files_failed: int = 0
    imported: int = 0
    skipped: int = 0
    error_rows: int = 0
    changed: int = 0
    removed: int = 0
    adopted: int = 0
    samples_removed: int = 0
    errors: list[RowError] = field(default_factory=list)
    #: re-exports that replaced stored rows
    changed_files: list[models.ImportChangedFile] = field(default_factory=list)
    superseded: list[models.ImportSupersededFile] = field(default_factory=list)

    def add_errors(self, errors: list[RowError]) -> None:
        self.errors.extend(errors)

    def output(self, total_transactions: int, message: str) -> models.ImportReport:
        """The report as import_household_data answers it: the first MAX_REPORTED_ERRORS errors listed."""
        shown = self.errors[:MAX_REPORTED_ERRORS]
        return models.ImportReport(
            files_processed=self.files_processed,
            files_failed=self.files_failed,
            total_imported=self.imported,
            total_skipped=self.skipped,
            total_changed=self.changed,
            total_removed=self.removed,
            changed_files=self.changed_files,
            superseded_files=self.superseded,
            total_errors=len(self.errors),
            errors=[models.ImportError(file=e.file, row=e.row, error=e.error) for e in shown],
            errors_truncated=len(self.errors) > len(shown),
            total_transactions=total_transactions,
            message=message,
        )


def find_files(directories: list[Path]) -> list[Path]:
    """Export files in every directory, sorted by name (the names sort by period)."""
    seen: dict[str, Path] = {}
    for directory in directories:
        if directory.is_dir():
            for path in sorted(directory.glob(FILE_GLOB)):
                seen.setdefault(str(path.resolve()), path)
    return sorted(seen.values(), key=lambda p: (p.name, str(p)))


def fingerprint(paths: list[Path], *, sample_dir: Path | None, include_samples: bool) -> str:
    """What an import of `paths` reads: each file's source, mtime (it picks the newest of a period) and
    content, whether samples are kept, and this importer's own code (a release that parses or stores differently:
    its statements are in store/imports.py)."""
    digest = hashlib.sha256(f"{include_samples}\n{sample_dir}\n".encode())
    for code in (Path(__file__), Path(__file__).with_name("csvfile.py"), Path(__file__).with_name("identity.py")):
        digest.update(code.read_bytes())
    digest.update(Path(imports.__file__).read_bytes())
    for path in paths:
        digest.update(f"{source_id(path, sample_dir)}\n{path.stat().st_mtime_ns}\n".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def latest_exports(paths: list[Path]) -> tuple[list[tuple[Path, list[Path]]], list[models.ImportSupersededFile]]:
    """(file, the older exports of its period in its folder) per period and folder, plus what was superseded.

    Newest mtime wins (then the later name); a name without a period stands alone.
    """
    groups: dict[tuple[str, ...], list[Path]] = {}
    for path in paths:
        match = PERIOD_RE.match(path.name)
        key = (str(path.resolve().parent), *match.groups()) if match else (str(path.resolve()),)
        groups.setdefault(key, []).append(path)
    chosen: list[tuple[Path, list[Path]]] = []
    superseded: list[models.ImportSupersededFile] = []
    for group in groups.values():
        ranked = sorted(group, key=lambda p: (_mtime(p), p.name), reverse=True)
        chosen.append((ranked[0], ranked[1:]))
        superseded += [models.ImportSupersededFile(file=p.name, by=ranked[0].name) for p in ranked[1:]]
    chosen.sort(key=lambda c: (c[0].name, str(c[0])))
    return chosen, superseded


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


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


def _adopt(con: Connection, source: str, orphans: list[str], rows: list[RowTuple]) -> int:
    """Move stored rows that equal this file's rows (same number, same fields) to `source`; returns how many."""
    by_number = {r[0]: r for r in rows}
    taken: set[int] = set()
    moves: list[tuple[int, str]] = []
    for orphan in orphans:
        for stored in imports.rows_of(con, orphan):
            number = stored[1]
            mine = by_number.get(number)
            if mine is not None and number not in taken and tuple(stored[1:]) == mine:
                taken.add(number)
                moves.append((stored[0], source))
    imports.move(con, moves)
    return len(moves)


def _stored(con: Connection, sources: list[str]) -> list[Stored]:
    out: list[Stored] = []
    for source in sources:
        out += [Stored(r[0], source, r[1:]) for r in imports.rows_in_order(con, source)]
    return out


def _apply(store: Store, con: Connection, source: str, change: Plan, rows: list[RowTuple]) -> None:
    """Write a plan: removals, then every moved or changed row parked on a free row number, then placed."""
    imports.delete_transactions(con, [s.id for s in change.removed])
    # the pending pairs of changed rows were scored on other figures; decided pairs stay
    imports.forget_pending_checks(con, [s.id for s, _ in change.changed])
    placed = change.changed + change.moved
    last = max((r[0] for r in rows), default=1)
    # kept rows (a file with errors) that are no longer in the file go after its last row
    placed += [(s, (last + n, *s.row[1:])) for n, s in enumerate(change.kept, 1) if s.source == source]
    imports.place(con, source, [(s.id, r) for s, r in placed])
    imports.add(store, con, source, change.added)


def _remove_samples(con: Connection) -> int:
    """Delete every stored sample row, its duplicate checks, and marks that point at it; returns rows deleted."""
    ids = imports.ids_with_prefix(con, SAMPLE_PREFIX)
    imports.delete_transactions(con, ids)
    return len(ids)


#: a re-export touches a month or two: refresh those; a bulk import rebuilds the aggregates at once
MONTHS_REFRESHED_ONE_BY_ONE = 12
#: fresh statistics after a bulk import; a re-exported month does not change the data's shape
ANALYZE_AFTER_ROWS = 1000


def _import_file(
    store: Store,
    con: Connection,
    report: ImportReport,
    path: Path,
    source: str,
    older: list[str],
    known: set[str],
    current: set[str],
) -> set[str]:
    """Make the rows stored for `source` (and the `older` exports it supersedes) equal to the file's rows.

    Returns the months whose rows changed.
    """
    rows, errors = read_tuples(path)
    report.files_processed += 1
    if errors and not rows and any(e.row is None for e in errors):
        report.files_failed += 1
    report.add_errors(errors)
    if not rows:
        return set()  # an unreadable or empty file never removes what was stored for it
    if source not in known:
        orphans = _orphans(source, path.name, known, current)
        if orphans:
            report.adopted += _adopt(con, source, orphans, rows)
        known.add(source)
    stored = _stored(con, [source, *(o for o in older if o in known)])
    if len(stored) == len(rows) and all(s.row == r for s, r in zip(stored, rows, strict=True)):
        report.skipped += len(rows)  # the common case: the same file again
        return set()
    change = plan(source, stored, rows, clean=not errors) if stored else Plan(added=rows)
    _apply(store, con, source, change, rows)
    report.imported += len(change.added)
    report.changed += len(change.changed)
    report.removed += len(change.removed)
    report.skipped += change.unchanged + len(change.moved)
    months = change.months()
    if stored and change.touched:
        report.changed_files.append(
            models.ImportChangedFile(
                file=path.name,
                added=len(change.added),
                changed=len(change.changed),
                removed=len(change.removed),
                months=[models.Month(m) for m in months],
            )
        )
    return set(months)


def import_files(
    store: Store, paths: list[Path], *, sample_dir: Path | None = None, include_samples: bool = True
) -> ImportReport:
    """Import `paths`; with `include_samples=False`, first drop every stored row of the bundled samples."""
    report = ImportReport()
    started = time.perf_counter()
    chosen, report.superseded = latest_exports(paths)
    with store.write() as con:
        before = queries.shape(con)
        known = imports.sources(con)
        sources = [
            (path, source_id(path, sample_dir), [source_id(o, sample_dir) for o in older]) for path, older in chosen
        ]
        current = {s for _, s, _ in sources} | {o for _, _, older in sources for o in older}
        if not include_samples and sample_dir is not None:
            legacy = {s for s in known if not s.startswith(SAMPLE_PREFIX) and not os.path.isabs(s)}
            if legacy:  # a database from before source paths: tell its sample rows apart first
                for path in find_files([sample_dir]):
                    if path.name in legacy:
                        sample = source_id(path, sample_dir)
                        report.adopted += _adopt(con, sample, [path.name], read_tuples(path)[0])
            report.samples_removed = _remove_samples(con)
            known = {s for s in known if not s.startswith(SAMPLE_PREFIX)}
        touched: set[str] = set()
        steps = len(sources) + 1  # every file, then the aggregates
        for done, (path, source, older) in enumerate(sources):
            progress(done, steps, f"{done}/{len(sources)}ファイル")  # stops here once the call is cancelled
            touched |= _import_file(store, con, report, path, source, older, known, current)
        progress(len(sources), steps, "集計を更新しています")
        if report.samples_removed or len(touched) > MONTHS_REFRESHED_ONE_BY_ONE:
            refresh_aggregates(con)
        else:
            for month in sorted(touched):
                refresh_aggregates(con, month)
        if report.imported >= ANALYZE_AFTER_ROWS or report.samples_removed:
            store.analyze(con)
        touched |= set(before.months) if report.samples_removed else set()
        after = queries.shape(con) if touched else before
    changes.announce(before, after, touched)
    log.info(
        "household import: files=%d imported=%d changed=%d removed=%d skipped=%d superseded=%d adopted=%d "
        "samples_removed=%d errors=%d in %.0f ms",
        report.files_processed,
        report.imported,
        report.changed,
        report.removed,
        report.skipped,
        len(report.superseded),
        report.adopted,
        report.samples_removed,
        len(report.errors),
        (time.perf_counter() - started) * 1000,
    )
    return report
