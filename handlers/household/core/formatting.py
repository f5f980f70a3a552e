"""Number formatting for answers (NFR-001): yen with separators, signed percentages, N/A."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

NA = "N/A"


def yen(value: int | None) -> str:
    """62500 → '62,500円'; None → 'N/A'."""
    return NA if value is None else f"{value:,}円"


def pct(value: float | None) -> str:
    """-6.7 → '-6.7%', 3.2 → '+3.2%', 0 → '0.0%', None → 'N/A'.

    Whatever shows as zero is '0.0%': never '-0.0%' (negative zero, or a tiny negative change) nor '+0.0%'.
    """
    if value is None:
        return NA
    text = f"{value:.1f}"
    if float(text) == 0:
        return "0.0%"
    return f"+{text}%" if value > 0 else f"{text}%"


def round_half_up(value: Decimal, places: str = "1") -> Decimal:
    return value.quantize(Decimal(places), rounding=ROUND_HALF_UP)
