"""Monthly trend metrics (seed §4.3), exact on integer yen.

For each month of the requested window: the amount spent, the change from the
previous month (前月比), the mean of the trailing 12 months (12か月移動平均) and the
change from the same month a year earlier (前年同月比). Lags and averages reach
back before the window, into whatever data exists. A month "has data" when the
household book holds any (non-duplicate) transaction in it; such a month with
no spending in the category counts as 0円. A figure whose inputs do not exist
(no data in the month it compares with, or a base of 0円) is None → "N/A".
Percentages are rounded half-up to one decimal, averages half-up to whole yen.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from generated.household import models

from ..months import label
from .formatting import round_half_up

WINDOW = 12


@dataclass(frozen=True, slots=True)
class MonthMetric:
    month: int
    amount: int | None
    month_over_month_pct: float | None
    moving_average_12m: int | None
    moving_average_months: int
    year_over_year_pct: float | None

    def output(self) -> models.MonthMetric:
        """The month as the tools answer it (the month as YYYY-MM)."""
        return models.MonthMetric(
            month=label(self.month),
            amount=self.amount,
            month_over_month_pct=self.month_over_month_pct,
            moving_average_12m=self.moving_average_12m,
            moving_average_months=self.moving_average_months,
            year_over_year_pct=self.year_over_year_pct,
        )


def pct_change(current: int | None, base: int | None) -> float | None:
    if current is None or base is None or base == 0:
        return None
    return float(round_half_up(Decimal(current - base) * 100 / Decimal(base), "0.1")) + 0.0  # + 0.0: no -0.0


def mean_yen(values: list[int]) -> int | None:
    if not values:
        return None
    return int(round_half_up(Decimal(sum(values)) / Decimal(len(values))))


def compute_metrics(amounts: dict[int, int], data_months: set[int], start: int, end: int) -> list[MonthMetric]:
    """Metrics for each month in [start, end]; `amounts` maps month → yen spent (absent = 0 if the month has data)."""

    def value(m: int) -> int | None:
        return amounts.get(m, 0) if m in data_months else None

    out: list[MonthMetric] = []
    for m in range(start, end + 1):
        current = value(m)
        trailing = [v for k in range(m - WINDOW + 1, m + 1) if (v := value(k)) is not None]
        out.append(
            MonthMetric(
                month=m,
                amount=current,
                month_over_month_pct=pct_change(current, value(m - 1)),
                moving_average_12m=mean_yen(trailing),
                moving_average_months=len(trailing),
                year_over_year_pct=pct_change(current, value(m - WINDOW)),
            )
        )
    return out
