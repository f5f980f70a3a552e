"""PNG charts with matplotlib (Agg) and the IPAexGothic font bundled in matplotlib_fontja.

The font file is loaded from the package directory explicitly (no reliance on
system fonts, so Japanese labels never render as tofu), and rc settings are
applied per figure so nothing global leaks into other services. The canvas is
exactly width × height pixels (dpi 100, no tight bbox).

Layout adapts to the size (from 400x300): the font scales with the canvas, the
title shrinks (then wraps at its parenthesis) until it fits, constrained layout
keeps every label inside the canvas, month ticks are thinned to what fits side
by side, pie percentages too small for their slice are left out, and legends
sit outside the axes (right of a pie, under a trend). Colours are the
Okabe-Ito qualitative palette (distinct for colour-blind readers too), grey
last for その他.
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
from matplotlib.text import Text
from matplotlib.ticker import FuncFormatter, MaxNLocator

#: Okabe & Ito (2008) without black, then grey (the pie's その他 is the 8th slice)
COLORS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#F0E442", "#999999"]
DPI = 100
_LOCK = threading.Lock()
_FONT: font_manager.FontProperties | None = None
#: font size (pt) at 800x600 and the smallest it gets
BASE_PT, MIN_PT = 11.0, 7.0


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


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, facecolor="white", metadata={"Software": None})
    return buf.getvalue()


def _renderer(fig: Figure, *, layout: bool = True) -> Any:
    """The canvas renderer; with `layout` after a draw, so that positions (not only sizes) are final."""
    if layout:
        fig.canvas.draw()
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
    """A month's spending by category: pie (shares) or bar (yen). Raises ValueError when there is nothing to draw."""
    if not any(v > 0 for v in values):
        raise ValueError("no spending to draw")  # matplotlib's pie would fail with "All wedge sizes are zero"
    with matplotlib.rc_context(_rc(width, height)):
        fig = _figure(width, height)
        ax = fig.add_subplot(1, 1, 1)
        colors = [COLORS[i % len(COLORS)] for i in range(len(labels))]
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


def category_chart(title: str, labels: list[str], values: list[int], kind: str, width: int, height: int) -> bytes:
    with matplotlib.rc_context(_rc(width, height)):
        return _png(category_figure(title, labels, values, kind, width, height))


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
                    ax.plot(x, ma, color=color, linestyle="--", linewidth=1, label=f"{name}（12か月平均）")
        _month_ticks(fig, ax, x, month_labels)
        ax.set_ylabel("金額（円）")
        ax.yaxis.set_major_formatter(FuncFormatter(_yen))
        ax.yaxis.set_major_locator(MaxNLocator(nbins=max(3, height // 80)))
        ax.grid(alpha=0.3)
        handles, names = ax.get_legend_handles_labels()
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


def trend_chart(
    title: str,
    month_labels: list[str],
    series: dict[str, list[int | None]],
    kind: str,
    width: int,
    height: int,
    averages: dict[str, list[int | None]] | None = None,
) -> bytes:
    with matplotlib.rc_context(_rc(width, height)):
        return _png(trend_figure(title, month_labels, series, kind, width, height, averages))
