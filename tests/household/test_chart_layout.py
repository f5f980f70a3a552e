"""Chart layout: nothing clipped or piled up at any size, distinct colours, legends outside the data.

Each figure is drawn as saving its PNG draws it, then every text's box (from the renderer) must lie inside
the canvas, no two texts may overlap, no legend may cover the axes, and the axes keep room for the data.
Issue 35: down to 200x150 (a chat-bubble thumbnail), where the first minimum (200x150) once clipped the title
and piled up pie labels and bar names, and six trend legend entries collapsed the axes.
"""

from __future__ import annotations

import io
import warnings
from itertools import combinations

import pytest
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox
from PIL import Image

from handlers.household.core import charts
from handlers.household.core.chartout import MAX_H, MAX_W, MIN_H, MIN_W

CATEGORIES = ["食費", "住宅", "水道・光熱費", "通信費", "交通費", "趣味・娯楽", "日用品", "その他"]
MONTHS = [f"{2016 + i // 12}-{i % 12 + 1:02d}" for i in range(120)]
SIZES = [(MIN_W, MIN_H), (320, 240), (MIN_W, MAX_H), (MAX_W, MIN_H), (800, 600), (MAX_W, MAX_H)]
#: the least share of the canvas the axes keep in each direction (a pie: its square, beside its legend)
DATA_ROOM = 0.25
TITLE = "2025年12月 支出内訳（合計 1,234,567円）"
TREND_TITLE = "支出上位カテゴリの月次推移（2016年1月〜2025年12月）"


def _lab(color: str) -> tuple[float, float, float]:
    """sRGB → CIE L*a*b* (D65)."""

    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(c) for c in to_rgb(color))
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def delta_e(c1: str, c2: str) -> float:
    return float(sum((a - b) ** 2 for a, b in zip(_lab(c1), _lab(c2), strict=True)) ** 0.5)


def test_palette_is_qualitative() -> None:
    """Every pair of the colours a chart can use differs clearly (ΔE76 ≥ 20); the old palette had pairs at ~10."""
    worst = min(delta_e(a, b) for a, b in combinations(charts.COLORS, 2))
    assert len(charts.COLORS) >= 8 and worst >= 20, worst


def _texts(fig: Figure) -> list[Text]:
    """The texts drawn: visible, not empty, and no tick label of a tick outside the view (never drawn)."""
    hidden: set[int] = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not lo - 1e-9 <= tick.get_loc() <= hi + 1e-9:
                    hidden |= {id(tick.label1), id(tick.label2)}
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and id(t) not in hidden]


def _check_layout(fig: Figure) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. "constrained_layout not applied because axes sizes collapsed"
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=charts.DPI)
    assert Image.open(png).size == (fig.bbox.width, fig.bbox.height)
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    frame = Bbox.from_bounds(0, 0, fig.bbox.width, fig.bbox.height).expanded(1.0, 1.0)
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in _texts(fig)]
    for text, box in boxes:
        assert frame.containsx(box.x0) and frame.containsx(box.x1), f"clipped sideways: {text!r} {box}"
        assert frame.containsy(box.y0) and frame.containsy(box.y1), f"clipped: {text!r} {box}"
    for (t1, b1), (t2, b2) in combinations(boxes, 2):
        overlap = Bbox.intersection(b1, b2)
        small = overlap is None or overlap.width * overlap.height <= 4
        assert small, f"piled up: {t1!r} and {t2!r}"
    for legend in fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]:
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            overlap = Bbox.intersection(box, ax.get_window_extent(renderer))
            assert overlap is None or overlap.width * overlap.height <= 4, "the legend covers the data"
    for ax in fig.axes:
        box = ax.get_window_extent(renderer)
        room = (box.width / fig.bbox.width, box.height / fig.bbox.height)
        assert min(room) >= DATA_ROOM, f"the data is squeezed into {room}"


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("kind", ["pie", "bar"])
def test_category_chart_fits(kind: str, size: tuple[int, int]) -> None:
    values = [120000, 80000, 15000, 9000, 3000, 800, 400, 120]  # thin slices pile up labels on a pie
    fig = charts.category_figure(TITLE, CATEGORIES, values, kind, *size)
    _check_layout(fig)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("kind", ["line", "area", "bar"])
@pytest.mark.parametrize("months", [1, 120])
def test_trend_chart_fits(kind: str, size: tuple[int, int], months: int) -> None:
    labels = MONTHS[-months:]
    series: dict[str, list[int | None]] = {
        name: [10000 * (i + 1) + j * 37 for j in range(months)] for i, name in enumerate(CATEGORIES[:3])
    }
    averages = {name: [v for v in values] for name, values in series.items()}
    fig = charts.trend_figure(TREND_TITLE, labels, series, kind, *size, averages)
    _check_layout(fig)


def test_top_categories_get_distinct_colours() -> None:
    fig = charts.category_figure(TITLE, CATEGORIES, [50000, 49000, 100, 100, 100, 100, 100, 100], "pie", 800, 600)
    wedges = [p.get_facecolor() for p in fig.axes[0].patches]
    first, second = (f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}" for r, g, b, _ in wedges[:2])
    assert delta_e(first, second) >= 20


def test_the_smallest_size_is_a_thumbnail() -> None:
    assert (MIN_W, MIN_H) == (200, 150)


@pytest.mark.parametrize("kind", ["pie", "bar"])
def test_categories_that_do_not_fit_are_summed_into_sonota(kind: str) -> None:
    """Twelve categories at 200x150: as many as there are rows for, the rest (an existing その他 too) in one grey その他."""
    names = [f"項目{i}" for i in range(11)] + ["その他"]
    values = [1000 * (12 - i) for i in range(12)]
    fig = charts.category_figure(TITLE, names, values, kind, MIN_W, MIN_H)
    _check_layout(fig)
    if kind == "pie":
        shown = [t.get_text().split(" ")[0] for t in fig.legends[0].get_texts()]
        colours = [p.get_facecolor()[:3] for p in fig.axes[0].patches]
    else:
        shown = [t.get_text() for t in fig.axes[0].get_yticklabels()]
        colours = [p.get_facecolor()[:3] for p in fig.axes[0].patches]
    assert 2 <= len(shown) < 12 and shown[-1] == "その他" and shown[:-1] == names[: len(shown) - 1]
    assert shown.count("その他") == 1 and colours[-1] == to_rgb(charts.GREY)
    assert charts.GREY not in [f"#{int(r * 255):02X}{int(g * 255):02X}{int(b * 255):02X}" for r, g, b in colours[:-1]]


def test_a_pie_has_at_most_eight_slices_and_a_bar_every_category_that_fits() -> None:
    names = [f"項目{i}" for i in range(12)]
    values = [1000 * (12 - i) for i in range(12)]
    pie = charts.category_figure(TITLE, names, values, "pie", 800, 600)
    assert len(pie.axes[0].patches) == charts.MAX_SLICES
    bar = charts.category_figure(TITLE, names, values, "bar", 800, 600)
    assert [t.get_text() for t in bar.axes[0].get_yticklabels()] == names


def test_one_legend_entry_stands_for_every_average() -> None:
    series: dict[str, list[int | None]] = {name: [1000, 2000, 3000] for name in CATEGORIES[:3]}
    fig = charts.trend_figure(TREND_TITLE, MONTHS[:3], series, "line", MIN_W, MIN_H, dict(series))
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [*CATEGORIES[:3], "12か月平均"]
