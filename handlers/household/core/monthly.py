"""get_monthly_household: one month's spending per 大項目, its rows and income, optionally as a chart."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from generated.household import models

from .. import months, problems
from ..store import queries
from .chartout import ChartRequest, Result, attach_chart, chart_size, renderer
from .formatting import round_half_up, yen

if TYPE_CHECKING:
    from .service import HouseholdCore


def get_monthly_household(
    core: HouseholdCore, year: int, month: int, chart: ChartRequest | None, owner: str
) -> Result[models.MonthlyHousehold]:
    """One month: totals per 大項目, the expense rows, income; with `chart`, a pie or bar of the totals."""
    if not 1 <= month <= 12:
        raise problems.invalid(f"month は 1〜12 で指定してください: {month}")
    m = months.index(year, month)
    with core.store.read() as con:
        if not queries.month_has_data(con, m):
            raise problems.data_not_found(f"{months.jp(m)}")
        rows = queries.month_expenses(con, m)
        income = queries.month_income(con, m)
    totals: dict[str, list[int]] = {}
    for r in rows:
        entry = totals.setdefault(r.category_major, [0, 0])
        entry[0] += -r.amount
        entry[1] += 1
    total = sum(v[0] for v in totals.values())
    categories = [
        models.MonthCategory(
            category_major=name,
            amount=amount,
            count=count,
            share_pct=float(round_half_up(Decimal(amount * 100) / Decimal(total), "0.1")) if total else 0.0,
        )
        for name, (amount, count) in sorted(totals.items(), key=lambda kv: (-kv[1][0], kv[0]))
    ]
    lines = [f"{months.jp(m)}の支出合計: {yen(total)}（{len(rows)}件）"]
    lines += [f"- {c.category_major}: {yen(c.amount)} ({c.share_pct:.1f}%)" for c in categories]
    lines.append(f"収入合計: {yen(income)}")
    data = models.MonthlyHousehold(
        year=year,
        month=month,
        total_expense=total,
        total_income=income,
        transaction_count=len(rows),
        categories=categories,
        transactions=rows,
        text="\n".join(lines),
    )
    result = Result(data)
    if chart is not None:
        size = chart_size(chart, "pie")
        if total <= 0:  # e.g. a month with income only: nothing to draw (a pie of zeros cannot be drawn)
            result.warnings.append(f"{months.jp(m)}は支出がないため、グラフは作成しませんでした")
            return result
        labels = [c.category_major for c in categories]
        values = [c.amount for c in categories]
        title = f"{months.jp(m)} 支出内訳（合計 {yen(total)}）"
        alt = f"家計簿グラフ - {year}年{month}月"
        attach_chart(
            core.charts, result, owner, size, alt, lambda: renderer().category_figure(title, labels, values, *size)
        )
    return result
