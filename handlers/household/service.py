"""The household domain core: JSON-shaped dicts in, JSON-shaped dicts (and chart PNGs) out.

Knows nothing about transports. `HouseholdHandlers` in __init__.py adapts it
to the generated models and CallContext.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from kumitate.context import public_url

from . import dupstore, months, problems, queries
from .chart_cache import ChartCache
from .db import Database
from .duplicates import Options
from .formatting import NA, pct, round_half_up, yen
from .importer import find_files, import_files
from .trends import MonthMetric, compute_metrics

log = logging.getLogger(__name__)

SIZE_RE = re.compile(r"^(\d{2,4})x(\d{2,4})$")
MIN_W, MAX_W, MIN_H, MAX_H = 400, 1920, 300, 1080
MAX_WINDOW_MONTHS = 120
PIE_SLICES = 8
#: scopes that read every principal's charts (shared with analytics' export handles: the scope string "admin")
ADMIN_SCOPES = frozenset({"admin", "*"})


@dataclass
class Result:
    """A tool's structured output plus what the transport adds beside it."""

    data: dict[str, Any]
    png: bytes | None = None
    warnings: list[str] = field(default_factory=list)


def parse_image_size(text: str) -> tuple[int, int]:
    match = SIZE_RE.match(text)
    if not match:
        raise problems.invalid(f"image_size は「幅x高さ」の形式で指定してください（例: 800x600）: {text}")
    width, height = int(match.group(1)), int(match.group(2))
    if not (MIN_W <= width <= MAX_W and MIN_H <= height <= MAX_H):
        raise problems.invalid(f"image_size は {MIN_W}x{MIN_H} から {MAX_W}x{MAX_H} の範囲で指定してください: {text}")
    return width, height


class HouseholdCore:
    def __init__(
        self,
        state_dir: Path,
        data_dirs: list[Path],
        public_base_url: str,
        chart_ttl_seconds: float = 3600.0,
        sample_dir: Path | None = None,
        max_candidates: int = dupstore.MAX_STORED_CANDIDATES,
    ) -> None:
        """`sample_dir`: the bundled samples; when it is not among `data_dirs` its stored rows are removed.

        `max_candidates`: duplicate candidates stored per detection run (the best by score).
        """
        self.max_candidates = max(1, max_candidates)
        self.state_dir = state_dir
        self.data_dirs = data_dirs
        self.sample_dir = sample_dir
        self.public_base_url = public_base_url.rstrip("/")
        self.db = Database(state_dir / "household.db")
        self.charts = ChartCache(state_dir / "charts", ttl_seconds=chart_ttl_seconds)
        self.startup_report = self.import_data()

    # ---------------------------------------------------------------- import
    def import_data(self) -> dict[str, Any]:
        include_samples = self.sample_dir is None or self.sample_dir.resolve() in {d.resolve() for d in self.data_dirs}
        report = import_files(
            self.db, find_files(self.data_dirs), sample_dir=self.sample_dir, include_samples=include_samples
        )
        with self.db.connect() as con:
            total = con.execute("SELECT COUNT(*) FROM transactions").fetchone()[0]
        out = report.as_dict(total)
        message = (
            f"{report.files_processed}ファイルを処理しました: {report.imported}件取り込み、"
            f"{report.skipped}件は取り込み済み、エラー{len(report.errors)}件"
        )
        if report.changed or report.removed:
            message += f"。再エクスポートを反映しました: 変更{report.changed}件、削除{report.removed}件"
            message += f"（{', '.join(str(f['file']) for f in report.changed_files)}）"
        if report.superseded:
            message += f"。同じ期間の古いファイル{len(report.superseded)}件は新しいファイルで置き換えました"
        if report.samples_removed:
            message += f"（HOUSEHOLD_DATA_DIR 指定のためサンプルデータ{report.samples_removed}件を削除しました）"
        out["message"] = message
        return out

    # ------------------------------------------------------------- resources
    def category_hierarchy(self) -> dict[str, list[str]]:
        with self.db.connect() as con:
            return queries.category_hierarchy(con)

    def category_names(self, prefix: str = "") -> list[str]:
        """Every category name (大項目 first, then 中項目), each once, that starts with `prefix`."""
        tree = self.category_hierarchy()
        names = list(dict.fromkeys([*tree, *sorted({m for minors in tree.values() for m in minors})]))
        return [n for n in names if n.startswith(prefix)]

    def category_info(self, name: str) -> dict[str, Any]:
        """Where `name` sits in the category tree and what it holds; NOT_FOUND if no row carries it."""
        with self.db.connect() as con:
            tree = queries.category_hierarchy(con)
            spending = queries.expense_level(con, name) is not None
            kind = "spending" if spending else queries.category_kind(con, name)
        majors = sorted(major for major, minors in tree.items() if name in minors)
        levels = (["major"] if name in tree else []) + (["minor"] if majors else [])
        if kind is None or not levels:
            raise problems.not_found_category(name)
        return {
            "category": name,
            "levels": levels,
            "majors": majors,
            "minors": list(tree.get(name, [])),
            "kind": kind,
            "trend_accepted": spending,
        }

    def month_labels(self, prefix: str = "") -> list[str]:
        """The months with data (YYYY-MM) that start with `prefix`, newest first."""
        with self.db.connect() as con:
            found = queries.data_months(con)
        return [label for label in (months.label(m) for m in reversed(found)) if label.startswith(prefix)]

    def month_summary(self, label: str) -> dict[str, Any]:
        try:
            m = months.parse(label)
        except ValueError:
            raise problems.data_not_found(label) from None
        with self.db.connect() as con:
            if not queries.month_has_data(con, m):
                raise problems.data_not_found(months.jp(m))
            rows = queries.month_expenses(con, m)
            income = queries.month_income(con, m)
        return {
            "month": months.label(m),
            "total_expense": sum(-int(r["amount"]) for r in rows),
            "total_income": income,
            "transaction_count": len(rows),
        }

    def available_months(self) -> dict[str, Any]:
        with self.db.connect() as con:
            found = queries.data_months(con)
        items = [
            {"year": months.year_month(m)[0], "month": months.year_month(m)[1], "label": months.label(m)} for m in found
        ]
        return {
            "months": items,
            "count": len(items),
            "earliest": months.label(found[0]) if found else None,
            "latest": months.label(found[-1]) if found else None,
        }

    def category_trend_summary(self) -> dict[str, Any]:
        with self.db.connect() as con:
            data_months = queries.data_months(con)
            if not data_months:
                return {"start_month": None, "end_month": None, "categories": [], "notes": []}
            end = data_months[-1]
            start = max(end - 11, data_months[0])
            blocks = self._trend_blocks(con, set(data_months), start, end, None, "major", top=None)
        return {
            "start_month": months.label(start),
            "end_month": months.label(end),
            "categories": [b for b, _ in blocks],
            "notes": self._notes(blocks, start, end, set(data_months), asked=12),
        }

    def chart_png(self, chart_id: str, reader: str, scopes: frozenset[str]) -> bytes:
        """A chart for a principal that rendered it, or one holding `admin` or `*`; anyone else: CHART_NOT_FOUND.

        The same answer as for an unknown id, so an id seen by someone else tells nothing.
        """
        found = self.charts.get(chart_id)
        if found is None or (reader not in found[1] and not scopes & ADMIN_SCOPES):
            raise problems.chart_not_found(chart_id)
        return found[0]

    # ------------------------------------------------------------ monthly
    def monthly_household(self, params: dict[str, Any], owner: str) -> Result:
        year, month = int(params["year"]), int(params["month"])
        if not 1 <= month <= 12:
            raise problems.invalid(f"month は 1〜12 で指定してください: {month}")
        m = months.index(year, month)
        with self.db.connect() as con:
            if not queries.month_has_data(con, m):
                raise problems.data_not_found(f"{months.jp(m)}")
            rows = queries.month_expenses(con, m)
            income = queries.month_income(con, m)
        totals: dict[str, list[int]] = {}
        for r in rows:
            entry = totals.setdefault(str(r["category_major"]), [0, 0])
            entry[0] += -int(r["amount"])
            entry[1] += 1
        total = sum(v[0] for v in totals.values())
        categories: list[dict[str, Any]] = [
            {
                "category_major": name,
                "amount": amount,
                "count": count,
                "share_pct": float(round_half_up(Decimal(amount * 100) / Decimal(total), "0.1")) if total else 0.0,
            }
            for name, (amount, count) in sorted(totals.items(), key=lambda kv: (-kv[1][0], kv[0]))
        ]
        lines = [f"{months.jp(m)}の支出合計: {yen(total)}（{len(rows)}件）"]
        lines += [f"- {c['category_major']}: {yen(int(c['amount']))} ({c['share_pct']:.1f}%)" for c in categories]
        lines.append(f"収入合計: {yen(income)}")
        data: dict[str, Any] = {
            "year": year,
            "month": month,
            "total_expense": total,
            "total_income": income,
            "transaction_count": len(rows),
            "categories": categories,
            "transactions": rows,
            "text": "\n".join(lines),
        }
        result = Result(data)
        if params.get("output_format") == "image":
            kind = params.get("graph_type") or "pie"
            width, height = parse_image_size(params.get("image_size") or "800x600")
            if total <= 0:  # e.g. a month with income only: nothing to draw (a pie of zeros cannot be drawn)
                result.warnings.append(f"{months.jp(m)}は支出がないため、グラフは作成しませんでした")
                return result
            labels = [str(c["category_major"]) for c in categories]
            values = [int(c["amount"]) for c in categories]
            if kind == "pie" and len(labels) > PIE_SLICES:
                labels = [*labels[: PIE_SLICES - 1], "その他"]
                values = [*values[: PIE_SLICES - 1], sum(values[PIE_SLICES - 1 :])]
            title = f"{months.jp(m)} 支出内訳（合計 {yen(total)}）"
            self._attach_chart(
                result,
                owner,
                kind,
                width,
                height,
                f"家計簿グラフ - {year}年{month}月",
                lambda: _charts().category_chart(title, labels, values, kind, width, height),
            )
        return result

    # -------------------------------------------------------------- trend
    def category_trend(self, params: dict[str, Any], owner: str) -> Result:
        with self.db.connect() as con:
            data_months = queries.data_months(con)
            if not data_months:
                raise problems.data_not_found("取引データがありません")
            start, end, asked = self._window(params, data_months)
            present = set(data_months)
            if not any(start <= m <= end for m in present):
                raise problems.insufficient(
                    f"{months.jp(start)}〜{months.jp(end)}（データがあるのは "
                    f"{months.jp(data_months[0])}〜{months.jp(data_months[-1])}）"
                )
            category = params.get("category")
            level = "major"
            if category is not None:
                found = queries.expense_level(con, category)
                if found is None:
                    majors, minors = queries.expense_categories(con)
                    raise problems.unknown_category(
                        category,
                        majors + [m for m in minors if m not in majors],
                        fallback=queries.top_spending_majors(con, 3),
                        kind=queries.category_kind(con, category),
                    )
                level = found
            blocks = self._trend_blocks(con, present, start, end, category, level, top=None if category else 3)
        notes = self._notes(blocks, start, end, present, asked)
        text = self._trend_text(blocks, start, end, category, notes)
        data: dict[str, Any] = {
            "category": category,
            "start_month": months.label(start),
            "end_month": months.label(end),
            "categories": [b for b, _ in blocks],
            "notes": notes,
            "text": text,
        }
        result = Result(data)
        if params.get("output_format") == "image":
            kind = params.get("graph_type") or "line"
            width, height = parse_image_size(params.get("image_size") or "800x600")
            if not blocks:
                result.warnings.append("対象期間に支出がないため、グラフは作成しませんでした")
                return result
            labels = [months.label(m) for m in range(start, end + 1)]
            series = {str(b["category"]): [mm.amount for mm in metrics] for b, metrics in blocks}
            averages = {str(b["category"]): [mm.moving_average_12m for mm in metrics] for b, metrics in blocks}
            span = months.jp(start) if start == end else f"{months.jp(start)}〜{months.jp(end)}"
            name = f"{category}の月次推移" if category else "支出上位カテゴリの月次推移"
            self._attach_chart(
                result,
                owner,
                kind,
                width,
                height,
                f"家計簿グラフ - {name} {span}",
                lambda: _charts().trend_chart(f"{name}（{span}）", labels, series, kind, width, height, averages),
            )
        return result

    def _window(self, params: dict[str, Any], data_months: list[int]) -> tuple[int, int, int]:
        """(start, end, months asked for). A default start is the 12th month back, clamped to the first data."""
        try:
            end = months.parse(params["end_month"]) if params.get("end_month") else None
            start = months.parse(params["start_month"]) if params.get("start_month") else None
        except ValueError as exc:
            raise problems.invalid(f"月は YYYY-MM 形式で指定してください: {exc}") from None
        if end is None:
            end = data_months[-1] if start is None else max(data_months[-1], start)
        asked = 0
        if start is None:
            start, asked = end - 11, 12
            if data_months[0] <= end:
                start = max(start, data_months[0])  # no run of N/A months before the data begins
        if start > end:
            raise problems.invalid("start_month は end_month 以前の月を指定してください")
        if end - start + 1 > MAX_WINDOW_MONTHS:
            raise problems.invalid(f"期間は最大 {MAX_WINDOW_MONTHS} か月です")
        return start, end, asked or end - start + 1

    def _trend_blocks(
        self, con: Any, present: set[int], start: int, end: int, category: str | None, level: str, top: int | None
    ) -> list[tuple[dict[str, Any], list[MonthMetric]]]:
        series = queries.monthly_spending(con, start - 12, end, level=level, category=category)
        if category is not None:
            series.setdefault(category, {})
        totals = {name: sum(v for m, v in amounts.items() if start <= m <= end) for name, amounts in series.items()}
        names = sorted(series, key=lambda n: (-totals[n], n))
        if category is None:
            names = [n for n in names if totals[n] > 0]
        if top is not None:
            names = names[:top]
        blocks = []
        for name in names:
            metrics = compute_metrics(series[name], present, start, end)
            last = metrics[-1]
            blocks.append(
                (
                    {
                        "category": name,
                        "level": level,
                        "total": totals[name],
                        "months": [mm.as_dict() for mm in metrics],
                        "average_12m": last.moving_average_12m,
                        "average_months": last.moving_average_months,
                    },
                    metrics,
                )
            )
        return blocks

    @staticmethod
    def _notes(
        blocks: list[tuple[dict[str, Any], list[MonthMetric]]], start: int, end: int, present: set[int], asked: int
    ) -> list[str]:
        """The seed's short-data note (過去 N か月分のデータで計算しました), then the months without data.

        Said for the 12-month average when it rests on fewer than 12 months, and for the window when it holds
        fewer months of data than were asked for (`asked`: the window's length, or 12 by default); once only
        when both counts are the same.
        """
        notes = []
        have = sum(1 for m in range(start, end + 1) if m in present)
        short_window = have < asked
        if blocks:
            used = blocks[0][1][-1].moving_average_months
            if used < 12 and not (short_window and used == have):
                notes.append(f"過去 {used} か月分のデータで計算しました")
        if short_window:
            notes.append(
                f"過去 {have} か月分のデータで計算しました（{asked} か月分のうちデータがあるのは {have} か月です）"
            )
        missing = [m for m in range(start, end + 1) if m not in present]
        if missing:
            notes.append(f"データのない月があります（N/A と表示）: {', '.join(months.jp(m) for m in missing)}")
        return notes

    @staticmethod
    def _trend_text(
        blocks: list[tuple[dict[str, Any], list[MonthMetric]]],
        start: int,
        end: int,
        category: str | None,
        notes: list[str],
    ) -> str:
        span = months.jp(start) if start == end else f"{months.jp(start)}〜{months.jp(end)}"
        parts: list[str] = []
        if category is None:
            if not blocks:
                parts.append(f"{span}の支出はありません。")
            else:
                head = [f"{span}の支出額上位 {len(blocks)} カテゴリです。"]
                head += [f"{i}. {b['category']}: {yen(int(b['total']))}" for i, (b, _) in enumerate(blocks, 1)]
                parts.append("\n".join(head))
        for block, metrics in blocks:
            lines = [f"{block['category']}カテゴリの {span}の推移です。"]
            for mm in metrics:
                amount = yen(mm.amount) if mm.amount is not None else NA
                lines.append(
                    f"- {months.jp(mm.month)}: {amount} （前月比 {pct(mm.month_over_month_pct)}, "
                    f"前年同月比 {pct(mm.year_over_year_pct)}）"
                )
            lines.append(f"- 12か月平均: {yen(block['average_12m'])}")
            parts.append("\n".join(lines))
        if notes:
            parts.append("\n".join(f"※ {n}" for n in notes))
        return "\n\n".join(parts)

    # -------------------------------------------------------------- charts
    def _attach_chart(
        self, result: Result, owner: str, kind: str, width: int, height: int, alt: str, render: Any
    ) -> None:
        """Render, cache and describe a chart; on a rendering failure keep the text answer (seed §10.7.2)."""
        try:
            png: bytes = render()
        except Exception:
            log.exception("household chart rendering failed")
            result.warnings.append("グラフの生成に失敗したため、テキストで回答しました")
            return
        chart_id = self.charts.put(png, owner)
        result.png = png
        result.data["chart"] = {
            "chart_id": chart_id,
            "url": f"{public_url(self.public_base_url)}/api/charts/{chart_id}",
            "mime_type": "image/png",
            "width": width,
            "height": height,
            "graph_type": kind,
            "alt_text": alt,
        }

    # ---------------------------------------------------------- duplicates
    def detect_duplicates(self, params: dict[str, Any]) -> Result:
        opts = Options(
            date_tolerance_days=int(params.get("date_tolerance_days", 0)),
            amount_tolerance_abs=float(params.get("amount_tolerance_abs", 0.0)),
            amount_tolerance_pct=float(params.get("amount_tolerance_pct", 0.0)),
            min_similarity_score=float(params.get("min_similarity_score", 0.8)),
        )
        result = Result(dupstore.detect(self.db, opts, params.get("transaction_ids"), self.max_candidates))
        if result.data["candidates_truncated"]:
            result.warnings.append(
                f"重複候補が{result.data['candidates_count']}件見つかったため、スコアの高い"
                f"{result.data['stored_candidates']}件だけを記録しました。許容範囲を狭めるか "
                "min_similarity_score を上げてください"
            )
        return result

    def list_duplicate_candidates(self, params: dict[str, Any]) -> dict[str, Any]:
        return dupstore.list_candidates(self.db, int(params.get("limit", 10)), bool(params.get("skip_checked", True)))

    def get_duplicate_candidate_detail(self, params: dict[str, Any]) -> dict[str, Any]:
        return dupstore.detail(self.db, int(params["check_id"]))

    def confirm_duplicate(self, params: dict[str, Any]) -> dict[str, Any]:
        return dupstore.confirm(self.db, int(params["check_id"]), str(params["decision"]))

    def restore_duplicate(self, params: dict[str, Any]) -> dict[str, Any]:
        return dupstore.restore(self.db, int(params["transaction_id"]))

    def get_duplicate_stats(self) -> dict[str, Any]:
        return dupstore.stats(self.db)


def _charts() -> Any:
    """Import matplotlib lazily: text answers and the server start never pay for it."""
    from . import charts

    return charts
