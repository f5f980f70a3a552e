"""get_category_trend and data://category_trend_summary: a category's months, 前月比, 12か月移動平均, 前年同月比."""

from __future__ import annotations

from typing import TYPE_CHECKING

from generated.household import models

from .. import months, problems
from ..store import Connection, queries
from .chartout import ChartRequest, Result, attach_chart, chart_size, renderer
from .formatting import NA, pct, yen
from .trends import MonthMetric, compute_metrics

if TYPE_CHECKING:
    from .service import HouseholdCore

MAX_WINDOW_MONTHS = 120

#: one category's answer and the metrics behind it (their months as numbers, for the text and the chart)
Block = tuple[models.TrendCategory, list[MonthMetric]]


def get_category_trend(
    core: HouseholdCore,
    category: str | None,
    start_month: str | None,
    end_month: str | None,
    chart: ChartRequest | None,
    owner: str,
) -> Result[models.CategoryTrend]:
    """The window's months for `category` (or the top 3 大項目); with `chart`, a line, area or bar chart."""
    with core.store.read() as con:
        data_months = queries.data_months(con)
        if not data_months:
            raise problems.data_not_found("取引データがありません")
        start, end, asked = _window(start_month, end_month, data_months)
        present = set(data_months)
        if not any(start <= m <= end for m in present):
            raise problems.insufficient(
                f"{months.jp(start)}〜{months.jp(end)}（データがあるのは "
                f"{months.jp(data_months[0])}〜{months.jp(data_months[-1])}）"
            )
        level = models.Level.major
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
        blocks = _trend_blocks(con, present, start, end, category, level, top=None if category else 3)
    notes = _notes(blocks, start, end, present, asked)
    text = _trend_text(blocks, start, end, category, notes)
    data = models.CategoryTrend(
        category=category,
        start_month=months.label(start),
        end_month=months.label(end),
        categories=[b for b, _ in blocks],
        notes=notes,
        text=text,
    )
    result = Result(data)
    if chart is not None:
        size = chart_size(chart, "line")
        if not blocks:
            result.warnings.append("対象期間に支出がないため、グラフは作成しませんでした")
            return result
        labels = [months.label(m) for m in range(start, end + 1)]
        series = {b.category: [mm.amount for mm in metrics] for b, metrics in blocks}
        averages = {b.category: [mm.moving_average_12m for mm in metrics] for b, metrics in blocks}
        span = months.jp(start) if start == end else f"{months.jp(start)}〜{months.jp(end)}"
        name = f"{category}の月次推移" if category else "支出上位カテゴリの月次推移"
        alt = f"家計簿グラフ - {name} {span}"
        title = f"{name}（{span}）"
        attach_chart(
            core.charts,
            result,
            owner,
            size,
            alt,
            lambda: renderer().trend_figure(title, labels, series, *size, averages),
        )
    return result


def _window(start_month: str | None, end_month: str | None, data_months: list[int]) -> tuple[int, int, int]:
    """(start, end, months asked for). A default start is the 12th month back, clamped to the first data."""
    try:
        end = months.parse(end_month) if end_month else None
        start = months.parse(start_month) if start_month else None
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
    con: Connection,
    present: set[int],
    start: int,
    end: int,
    category: str | None,
    level: models.Level,
    top: int | None,
) -> list[Block]:
    series = queries.monthly_spending(con, start - 12, end, level=level, category=category)
    if category is not None:
        series.setdefault(category, {})
    totals = {name: sum(v for m, v in amounts.items() if start <= m <= end) for name, amounts in series.items()}
    names = sorted(series, key=lambda n: (-totals[n], n))
    if category is None:
        names = [n for n in names if totals[n] > 0]
    if top is not None:
        names = names[:top]
    blocks: list[Block] = []
    for name in names:
        metrics = compute_metrics(series[name], present, start, end)
        last = metrics[-1]
        blocks.append(
            (
                models.TrendCategory(
                    category=name,
                    level=level,
                    total=totals[name],
                    months=[mm.output() for mm in metrics],
                    average_12m=last.moving_average_12m,
                    average_months=last.moving_average_months,
                ),
                metrics,
            )
        )
    return blocks


def _notes(blocks: list[Block], start: int, end: int, present: set[int], asked: int) -> list[str]:
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


def _trend_text(
    blocks: list[Block],
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
            head += [f"{i}. {b.category}: {yen(b.total)}" for i, (b, _) in enumerate(blocks, 1)]
            parts.append("\n".join(head))
    for block, metrics in blocks:
        lines = [f"{block.category}カテゴリの {span}の推移です。"]
        for mm in metrics:
            amount = yen(mm.amount) if mm.amount is not None else NA
            lines.append(
                f"- {months.jp(mm.month)}: {amount} （前月比 {pct(mm.month_over_month_pct)}, "
                f"前年同月比 {pct(mm.year_over_year_pct)}）"
            )
        lines.append(f"- 12か月平均: {yen(block.average_12m)}")
        parts.append("\n".join(lines))
    if notes:
        parts.append("\n".join(f"※ {n}" for n in notes))
    return "\n\n".join(parts)


def category_trend_summary(core: HouseholdCore) -> models.CategoryTrendSummary:
    """data://category_trend_summary: the top 大項目 over the default window."""
    with core.store.read() as con:
        data_months = queries.data_months(con)
        if not data_months:
            return models.CategoryTrendSummary(start_month=None, end_month=None, categories=[], notes=[])
        end = data_months[-1]
        start = max(end - 11, data_months[0])
        blocks = _trend_blocks(con, set(data_months), start, end, None, models.Level.major, top=None)
    return models.CategoryTrendSummary(
        start_month=months.label(start),
        end_month=months.label(end),
        categories=[b for b, _ in blocks],
        notes=_notes(blocks, start, end, set(data_months), asked=12),
    )
