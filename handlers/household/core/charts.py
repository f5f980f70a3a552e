"""PNG charts with matplotlib (Agg) and the IPAexGothic font bundled in matplotlib_fontja.

The font file is loaded from the package directory explicitly (no reliance on
system fonts, so Japanese labels never render as tofu), and rc settings are
applied per figure so nothing global leaks into other services. The canvas is
exactly width × height pixels (dpi 100, no tight bbox).

Layout adapts to the size, down to a 200x150 thumbnail: the font scales with the
canvas, the title shrinks (then wraps at its parenthesis) until it fits,
constrained layout keeps every label inside the canvas, month ticks are thinned
to what fits side by side, a category chart shows only the categories it has
rows for (the smallest summed into その他), pie percentages too small for their
slice are left out, and legends sit outside the axes (right of a pie, under a
trend; one entry for all the dashed 12-month averages). Colours are the
Okabe-Ito qualitative palette (distinct for colour-blind readers too), grey for
その他 only.
"""

from __future__ import annotations

import importlib.util
import io
import math
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import matplotlib

matplotlib.use("Agg")
from matplotlib import font_manager
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.ticker import FuncFormatter, MaxNLocator

#: Okabe & Ito (2008) without black, then grey: その他 (wherever it comes) and nothing else
COLORS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#F0E442", "#999999"]
GREY = COLORS[-1]
DPI = 100
_LOCK = threading.Lock()
_FONT: font_manager.FontProperties | None = None
#: font size (pt) at 800x600 and the smallest it gets
BASE_PT, MIN_PT = 11.0, 7.0
#: the most slices a pie shows (the rest is summed into その他, drawn grey: the palette's 8th colour)
MAX_SLICES = 8
OTHER = "その他"
#: the legend's one key for the dashed 12-month averages (each drawn in its series' colour)
AVERAGE_KEY = "#555555"


def font_path() -> Path:
    """ipaexg.ttf inside the installed matplotlib_fontja package (found without importing it)."""
    spec = importlib.util.find_spec("matplotlib_fontja")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("matplotlib_fontja is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "fonts" / "ipaexg.ttf"


def _font() -> font_manager.FontProperties:
    global _FONT
    with _LOCK:
        if _FONT is None:
            path = font_path()
            font_manager.fontManager.addfont(str(path))
            _FONT = font_manager.FontProperties(fname=str(path))
        return _FONT


def _font_pt(width: int, height: int) -> float:
    return max(MIN_PT, min(BASE_PT, BASE_PT * min(width / 800, height / 600)))


def _rc(width: int, height: int) -> Any:
    name = _font().get_name()
    return {"font.family": name, "axes.unicode_minus": False, "font.size": _font_pt(width, height)}


def _figure(width: int, height: int) -> Figure:
    fig = Figure(figsize=(width / DPI, height / DPI), dpi=DPI, facecolor="white", layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def png(fig: Figure) -> bytes:
    """A figure (category_figure, trend_figure) as PNG, under the rc settings of its size: the tick labels
    are formatted when it is drawn, here."""
    with matplotlib.rc_context(_rc(round(fig.bbox.width), round(fig.bbox.height))):
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=DPI, facecolor="white", metadata={"Software": None})
        return buf.getvalue()


def _renderer(fig: Figure, *, layout: bool = True) -> Any:
    """The canvas renderer; with `layout` after a draw that renders nothing (the layout and every artist's
    position, without rasterising them: a rendered draw here made each pie chart half again as slow), so that
    positions (not only sizes) are final."""
    if layout:
        fig.draw_without_rendering()
    return fig.canvas.get_renderer()  # type: ignore[attr-defined]


def _fit_title(fig: Figure, title: str) -> None:
    """Shrink the title down to the minimum font size, then wrap it at its parenthesis, until it fits."""
    size = _font_pt(int(fig.bbox.width), int(fig.bbox.height)) * 1.15
    text = fig.suptitle(title, fontsize=size)
    room = fig.bbox.width * 0.96
    renderer = _renderer(fig, layout=False)  # a text's size does not depend on where it is
    while text.get_window_extent(renderer).width > room and size > MIN_PT:
        size = max(MIN_PT, size - 0.5)
        text.set_fontsize(size)
    if text.get_window_extent(renderer).width > room and "（" in title:
        head, _, tail = title.partition("（")
        text.set_text(f"{head}\n（{tail}")


def _yen(value: float, _pos: object = None) -> str:
    return f"{int(value):,}"


def _drop_overlapping(texts: Iterable[Text], renderer: Any) -> None:
    """Hide each text that overlaps one kept before it (callers pass the most important first)."""
    kept: list[Any] = []
    for text in texts:
        if not text.get_visible() or not text.get_text():
            continue
        box = text.get_window_extent(renderer)
        if any(box.overlaps(other) for other in kept):
            text.set_visible(False)
        else:
            kept.append(box)


def _legend_fitting(
    fig: Figure, handles: list[Any], labels: list[str], loc: Literal["outside right center", "outside lower center"]
) -> Legend:
    """A figure legend outside the axes; under the axes, in as many columns as the width allows."""
    if loc == "outside right center":
        return fig.legend(handles, labels, loc=loc, frameon=False)
    for ncols in range(len(labels), 0, -1):
        legend = fig.legend(handles, labels, loc=loc, ncols=ncols, frameon=False)
        if ncols == 1 or legend.get_window_extent(_renderer(fig, layout=False)).width <= fig.bbox.width * 0.98:
            return legend
        legend.remove()
    raise AssertionError("unreachable")


def category_figure(title: str, labels: list[str], values: list[int], kind: str, width: int, height: int) -> Figure:
    """A month's spending by category, largest first: pie (shares) or bar (yen). Raises ValueError when there is
    nothing to draw.

    A pie has at most MAX_SLICES slices, and either kind shows no more categories than the canvas has rows for
    (the legend's beside a pie, the bars' labels): the smallest are summed into その他. Measured after a first
    layout, so the second one is only paid when something had to go."""
    if not any(v > 0 for v in values):
        raise ValueError("no spending to draw")  # matplotlib's pie would fail with "All wedge sizes are zero"
    labels, values = _folded(labels, values, MAX_SLICES if kind == "pie" else len(labels))
    with matplotlib.rc_context(_rc(width, height)):
        fig = _category_figure(title, labels, values, kind, width, height)
        rows = _rows(fig, kind, len(labels))
        if rows < len(labels):
            labels, values = _folded(labels, values, rows)
            fig = _category_figure(title, labels, values, kind, width, height)
        return fig


def _folded(labels: list[str], values: list[int], rows: int) -> tuple[list[str], list[int]]:
    """At most `rows` categories (never fewer than two): the first rows - 1, then one その他 holding the rest
    (a category already named その他 included)."""
    if len(labels) <= rows:
        return labels, values
    named = [(label, value) for label, value in zip(labels, values, strict=True) if label != OTHER]
    keep = named[: max(1, rows - 1)]
    rest = sum(values) - sum(value for _, value in keep)
    return [label for label, _ in keep] + [OTHER], [value for _, value in keep] + [rest]


def _rows(fig: Figure, kind: str, count: int) -> int:
    """How many categories the laid-out figure has rows for: entries of the legend, centred beside a pie, that
    stay under the title (pie); bar labels along the axes (bar). Runs the layout, not a draw (a draw renders
    every artist: it would make each chart half again as slow)."""
    renderer = _renderer(fig, layout=False)
    engine = fig.get_layout_engine()
    assert engine is not None
    engine.execute(fig)
    if kind == "pie":
        legend = fig.legends[0].get_window_extent(renderer)
        top = min(t.get_window_extent(renderer).y0 for t in fig.texts) if fig.texts else fig.bbox.height
        half = min(top - (legend.y0 + legend.y1) / 2, (legend.y0 + legend.y1) / 2)
        return int(2 * half * 0.96 // (legend.height / count))
    ax = fig.axes[0]
    label = max(ax.get_yticklabels(), key=lambda t: t.get_window_extent(renderer).height)
    return int(ax.get_window_extent(renderer).height // (label.get_window_extent(renderer).height * 1.15))


def _category_figure(title: str, labels: list[str], values: list[int], kind: str, width: int, height: int) -> Figure:
    fig = _figure(width, height)
    ax = fig.add_subplot(1, 1, 1)
    colors = [GREY if label == OTHER else COLORS[i % (len(COLORS) - 1)] for i, label in enumerate(labels)]
    if kind == "pie":
        total = sum(values)
        wedges, _texts, autotexts = ax.pie(
            values,
            colors=colors,
            autopct=lambda p: f"{p:.1f}%",
            pctdistance=0.72,
            startangle=90,
            counterclock=False,
            wedgeprops={"linewidth": 1, "edgecolor": "white"},
            textprops={"fontsize": _font_pt(width, height) * 0.85},
        )
        ax.axis("equal")
        names = [f"{name} {v * 100 / total:.1f}%" for name, v in zip(labels, values, strict=True)]
        _legend_fitting(fig, list(wedges), names, "outside right center")
        _fit_title(fig, title)
        renderer = _renderer(fig)
        for text, wedge in zip(autotexts, wedges, strict=True):  # a percentage wider than its slice goes
            if not _inside(text, wedge, renderer):
                text.set_visible(False)
        _drop_overlapping(autotexts, renderer)
    else:
        positions = list(range(len(labels)))
        ax.barh(positions, values, color=colors)
        ax.set_yticks(positions, labels)
        ax.invert_yaxis()
        ax.set_xlabel("金額（円）")
        ax.xaxis.set_major_formatter(FuncFormatter(_yen))
        ax.xaxis.set_major_locator(MaxNLocator(nbins=max(3, width // 120)))
        ax.grid(axis="x", alpha=0.3)
        _fit_title(fig, title)
    return fig


def _inside(text: Text, wedge: Any, renderer: Any) -> bool:
    """True when the text's box lies within its wedge (all four corners)."""
    box = text.get_window_extent(renderer)
    path = wedge.get_path().transformed(wedge.get_transform())
    corners = [(box.x0, box.y0), (box.x0, box.y1), (box.x1, box.y0), (box.x1, box.y1)]
    return bool(path.contains_points(corners).all())


def trend_figure(
    title: str,
    month_labels: list[str],
    series: dict[str, list[int | None]],
    kind: str,
    width: int,
    height: int,
    averages: dict[str, list[int | None]] | None = None,
) -> Figure:
    """Monthly spending per category over time: line, area or grouped bar; dashed 12-month averages on line."""
    with matplotlib.rc_context(_rc(width, height)):
        fig = _figure(width, height)
        ax = fig.add_subplot(1, 1, 1)
        x = list(range(len(month_labels)))
        n = max(len(series), 1)
        for i, (name, values) in enumerate(series.items()):
            color = COLORS[i % len(COLORS)]
            ys = [float("nan") if v is None else v for v in values]
            if kind == "bar":
                w = 0.8 / n
                ax.bar(
                    [p - 0.4 + w * (i + 0.5) for p in x],
                    [0 if v is None else v for v in values],
                    width=w,
                    color=color,
                    label=name,
                )
            elif kind == "area":
                ax.fill_between(x, [0 if v is None else v for v in values], alpha=0.35, color=color)
                ax.plot(x, ys, color=color, label=name, linewidth=1.8)
            else:
                ax.plot(x, ys, color=color, label=name, marker="o", markersize=3, linewidth=2)
                if averages and name in averages:
                    ma = [float("nan") if v is None else v for v in averages[name]]
                    ax.plot(x, ma, color=color, linestyle="--", linewidth=1)
        _month_ticks(fig, ax, x, month_labels)
        ax.set_ylabel("金額（円）")
        ax.yaxis.set_major_formatter(FuncFormatter(_yen))
        ax.yaxis.set_major_locator(MaxNLocator(nbins=max(3, height // 80)))
        ax.grid(alpha=0.3)
        handles, names = ax.get_legend_handles_labels()
        if kind == "line" and averages:  # one entry says what every dashed line is: the series' own colour
            handles.append(Line2D([], [], color=AVERAGE_KEY, linestyle="--", linewidth=1))
            names.append("12か月平均")
        _legend_fitting(fig, handles, names, "outside lower center")
        _fit_title(fig, title)
        return fig


def _month_ticks(fig: Figure, ax: Any, x: list[int], labels: list[str]) -> None:
    """Label every k-th month, k the smallest that leaves a gap between neighbours.

    Measured on one probe text before any layout (a label's size does not depend on where it is), against the
    axes' width under the default subplot margins, which constrained layout only widens; ticks are made once,
    for the labels kept (making a tick per month costs more than drawing the chart).
    """
    if not labels:
        return
    probe = ax.text(0, 0, max(labels, key=len), fontsize=matplotlib.rcParams["xtick.labelsize"])
    widest = probe.get_window_extent(_renderer(fig, layout=False)).width
    probe.remove()
    room = ax.get_position().width * fig.bbox.width
    fits = max(1, int(room // (widest * 1.3 + 1)))
    step = max(1, math.ceil(len(x) / fits))
    ax.set_xticks(x[::step], labels[::step])
