"""The household service's state: its store, chart cache and data directories, and the import.

The tools' own logic lives beside it, one module each (monthly, trend_report, detection; the
duplicate checks in store.checks); knows nothing about transports. `HouseholdHandlers` in
handlers/household/__init__.py adapts it to the generated models.
"""

from __future__ import annotations

import logging
from contextlib import suppress
from pathlib import Path

from generated.household import models
from kumitate.cache import SharedCache
from kumitate.storage import Database
from kumitate.storage.carry import announce

from .. import months, problems
from ..records import Options
from ..settings import HouseholdSettings
from ..store import Store, imports, legacy, queries
from . import detection
from .chart_cache import ChartCache
from .chartout import Result
from .importer import ImportReport, find_files, fingerprint, import_files

log = logging.getLogger(__name__)

IMPORT_STAMP = "import.stamp"
"""In the service's directory: what the last start-up import saw (HouseholdCore._import_at_start)."""

#: scopes that read every principal's charts (shared with analytics' export handles: the scope string "admin")
ADMIN_SCOPES = frozenset({"admin", "*"})


def _available(m: int) -> models.AvailableMonth:
    year, month = months.year_month(m)
    return models.AvailableMonth(year=year, month=month, label=months.label(m))


class HouseholdCore:
    def __init__(
        self,
        database: Database,
        cache: SharedCache,
        state_dir: Path,
        sample_dir: Path,
        settings: HouseholdSettings,
    ) -> None:
        """On the runtime's `database` and shared `cache`; `state_dir`: the service's own directory
        (charts mirrored to files, a household.db of an earlier release); `sample_dir`: the bundled
        samples, whose stored rows are removed when `settings` leave them out."""
        self.max_candidates = settings.max_candidates
        self.state_dir = state_dir
        self.data_dirs = settings.sources(sample_dir)
        self.sample_dir = sample_dir
        self.store = Store(database)
        legacy.migrate(self.store, state_dir)
        self.charts = ChartCache(state_dir / "charts", cache, ttl_seconds=settings.chart_ttl_seconds)
        self.charts.adopt_unowned()
        self.startup_report = report = self._import_at_start()
        if report.total_imported or report.total_changed or report.total_removed:
            announce(
                "household",
                f"imported {report.total_imported} transactions, changed {report.total_changed} and removed"
                f" {report.total_removed} from {report.files_processed} export files"
                f" ({', '.join(str(d) for d in self.data_dirs)})",
                rows=report.total_imported,
            )

    # ---------------------------------------------------------------- import
    def _import_at_start(self) -> models.ImportReport:
        """import_data(), unless the export files and the stored rows are as the last start here left them
        (IMPORT_STAMP: the files' fingerprint and the transactions' count, last id and last update): then
        the import would change nothing, and reading every file again costs a restart about 0.5 s."""
        stamp_file = self.state_dir / IMPORT_STAMP
        try:
            unchanged = stamp_file.read_text(encoding="utf-8") == self._import_stamp()
        except OSError:
            unchanged = False
        if unchanged:
            return self._report(ImportReport(), "エクスポートファイルは前回の取り込みから変わっていません")
        report = self.import_data()
        with suppress(OSError):  # no stamp: the next start imports again
            stamp_file.write_text(self._import_stamp(), encoding="utf-8")
        return report

    def _import_stamp(self) -> str:
        files = fingerprint(find_files(self.data_dirs), sample_dir=self.sample_dir, include_samples=self._samples)
        with self.store.read() as con:
            rows = imports.stamp(con)
        return f"{files} {rows}"

    @property
    def _samples(self) -> bool:
        return self.sample_dir.resolve() in {d.resolve() for d in self.data_dirs}

    def _report(self, report: ImportReport, message: str) -> models.ImportReport:
        with self.store.read() as con:
            total = imports.count(con)
        return report.output(total, message)

    def import_data(self) -> models.ImportReport:
        report = import_files(
            self.store, find_files(self.data_dirs), sample_dir=self.sample_dir, include_samples=self._samples
        )
        message = (
            f"{report.files_processed}ファイルを処理しました: {report.imported}件取り込み、"
            f"{report.skipped}件は取り込み済み、エラー{len(report.errors)}件"
        )
        if report.changed or report.removed:
            message += f"。再エクスポートを反映しました: 変更{report.changed}件、削除{report.removed}件"
            message += f"（{', '.join(f.file for f in report.changed_files)}）"
        if report.superseded:
            message += f"。同じ期間の古いファイル{len(report.superseded)}件は新しいファイルで置き換えました"
        if report.samples_removed:
            message += f"（HOUSEHOLD_DATA_DIR 指定のためサンプルデータ{report.samples_removed}件を削除しました）"
        return self._report(report, message)

    # ------------------------------------------------------------- resources
    def category_hierarchy(self) -> dict[str, list[str]]:
        with self.store.read() as con:
            return queries.category_hierarchy(con)

    def category_names(self, prefix: str = "") -> list[str]:
        """Every category name (大項目 first, then 中項目), each once, that starts with `prefix`."""
        tree = self.category_hierarchy()
        names = list(dict.fromkeys([*tree, *sorted({m for minors in tree.values() for m in minors})]))
        return [n for n in names if n.startswith(prefix)]

    def category_info(self, name: str) -> models.CategoryInfo:
        """Where `name` sits in the category tree and what it holds; NOT_FOUND if no row carries it."""
        with self.store.read() as con:
            tree = queries.category_hierarchy(con)
            spending = queries.expense_level(con, name) is not None
            kind = models.CategoryKind.spending if spending else queries.category_kind(con, name)
        majors = sorted(major for major, minors in tree.items() if name in minors)
        levels = ([models.Level.major] if name in tree else []) + ([models.Level.minor] if majors else [])
        if kind is None or not levels:
            raise problems.not_found_category(name)
        return models.CategoryInfo(
            category=name,
            levels=levels,
            majors=majors,
            minors=list(tree.get(name, [])),
            kind=kind,
            trend_accepted=spending,
        )

    def month_labels(self, prefix: str = "") -> list[str]:
        """The months with data (YYYY-MM) that start with `prefix`, newest first."""
        with self.store.read() as con:
            found = queries.data_months(con)
        return [label for label in (months.label(m) for m in reversed(found)) if label.startswith(prefix)]

    def month_summary(self, label: str) -> models.MonthSummary:
        try:
            m = months.parse(label)
        except ValueError:
            raise problems.data_not_found(label) from None
        with self.store.read() as con:
            if not queries.month_has_data(con, m):
                raise problems.data_not_found(months.jp(m))
            rows = queries.month_expenses(con, m)
            income = queries.month_income(con, m)
        return models.MonthSummary(
            month=months.label(m),
            total_expense=sum(-r.amount for r in rows),
            total_income=income,
            transaction_count=len(rows),
        )

    def available_months(self) -> models.AvailableMonths:
        with self.store.read() as con:
            found = queries.data_months(con)
        items = [_available(m) for m in found]
        return models.AvailableMonths(
            months=items,
            count=len(items),
            earliest=months.label(found[0]) if found else None,
            latest=months.label(found[-1]) if found else None,
        )

    def chart_png(self, chart_id: str, reader: str, scopes: frozenset[str]) -> bytes:
        """A chart for a principal that rendered it, or one holding `admin` or `*`; anyone else: CHART_NOT_FOUND.

        The same answer as for an unknown id, so an id seen by someone else tells nothing.
        """
        found = self.charts.get(chart_id)
        if found is None or (reader not in found[1] and not scopes & ADMIN_SCOPES):
            raise problems.chart_not_found(chart_id)
        return found[0]

    # ------------------------------------------------------------ monthly
    # ---------------------------------------------------------- duplicates
    def detect_duplicates(
        self, opts: Options, transaction_ids: list[int] | None
    ) -> Result[models.DetectDuplicatesOutput]:
        result = Result(detection.detect(self.store, opts, transaction_ids, self.max_candidates))
        if result.data.candidates_truncated:
            result.warnings.append(
                f"重複候補が{result.data.candidates_count}件見つかったため、スコアの高い"
                f"{result.data.stored_candidates}件だけを記録しました。許容範囲を狭めるか "
                "min_similarity_score を上げてください"
            )
        return result
