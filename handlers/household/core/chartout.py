"""Charts as tool output: the size asked for, rendering, caching and the `chart` block of the answer."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from generated.household import models
from kumitate.context import url_for

from .. import problems
from .chart_cache import ChartCache

if TYPE_CHECKING:
    from matplotlib.figure import Figure

log = logging.getLogger("handlers.household.service")

SIZE_RE = re.compile(r"^(\d{2,4})x(\d{2,4})$")
MIN_W, MAX_W, MIN_H, MAX_H = 200, 1920, 150, 1080

Output = TypeVar("Output", models.MonthlyHousehold, models.CategoryTrend, models.DetectDuplicatesOutput)


@dataclass(frozen=True, slots=True)
class ChartRequest:
    """output_format=image: the chart type and size asked for (None: the tool's default)."""

    kind: str | None = None
    size: str | None = None


class ChartSize(NamedTuple):
    """The chart type and pixel size to draw, in the order the figure functions take them (`*size`)."""

    kind: str
    width: int
    height: int


def chart_size(chart: ChartRequest, default_kind: str) -> ChartSize:
    """What `chart` asks for, the tool's default type and 800x600 where it names none; INVALID_INPUT for a bad size."""
    return ChartSize(chart.kind or default_kind, *parse_image_size(chart.size or "800x600"))


@dataclass
class Result(Generic[Output]):
    """A tool's structured output (its generated model) plus what the transport adds beside it."""

    data: Output
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


def attach_chart(
    charts: ChartCache,
    result: Result[models.MonthlyHousehold] | Result[models.CategoryTrend],
    owner: str,
    size: ChartSize,
    alt: str,
    figure: Callable[[], Figure],
) -> None:
    """Draw `figure()` (with the charts module of `renderer()`), render it as PNG, cache and describe it; on a
    rendering failure keep the text answer (seed §10.7.2)."""
    try:
        png = renderer().png(figure())
    except Exception:
        log.exception("household chart rendering failed")
        result.warnings.append("グラフの生成に失敗したため、テキストで回答しました")
        return
    chart_id = charts.put(png, owner)
    result.png = png
    result.data.chart = models.Chart(
        chart_id=chart_id,
        url=url_for("chart", chart_id=chart_id),
        mime_type=models.MimeType.image_png,
        width=size.width,
        height=size.height,
        graph_type=models.GraphType(size.kind),
        alt_text=alt,
    )


def renderer() -> Any:
    """Import matplotlib lazily: text answers and the server start never pay for it."""
    from . import charts

    return charts
