"""PNG charts with matplotlib (Agg) and the IPAexGothic font bundled in matplotlib_fontja.

The font file is loaded from the package directory explicitly (no reliance on
system fonts, so Japanese labels never render as tofu), and rc settings are
applied per figure so nothing global leaks into other services. The canvas is
exactly width × height pixels (dpi 100, no tight bbox).
"""

from __future__ import annotations

import importlib.util
import io
import threading
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
from matplotlib import font_manager
from matplotlib.figure import Figure

COLORS = ["#FF6B6B", "#4ECDC4", "#45B7D1", "#96CEB4", "#FFEAA7", "#DDA0DD", "#98D8C8", "#F7DC6F"]
DPI = 100
_LOCK = threading.Lock()
_FONT: font_manager.FontProperties | None = None


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


def _figure(width: int, height: int) -> Figure:
    fig = Figure(figsize=(width / DPI, height / DPI), dpi=DPI, facecolor="white")
    return fig


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, facecolor="white", metadata={"Software": None})
    return buf.getvalue()


def _rc() -> Any:
    name = _font().get_name()
    return {"font.family": name, "axes.unicode_minus": False, "font.size": 11}


def _yen_axis(ax: object) -> None:
    from matplotlib.ticker import FuncFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{int(v):,}"))  # type: ignore[attr-defined]


def category_chart(title: str, labels: list[str], values: list[int], kind: str, width: int, height: int) -> bytes:
    """A month's spending by category: pie (shares) or bar (yen). Raises ValueError when there is nothing to draw."""
    if not any(v > 0 for v in values):
        raise ValueError("no spending to draw")  # matplotlib's pie would fail with "All wedge sizes are zero"
    with matplotlib.rc_context(_rc()):
        fig = _figure(width, height)
        ax = fig.add_subplot(1, 1, 1)
        colors = [COLORS[i % len(COLORS)] for i in range(len(labels))]
        if kind == "pie":
            ax.pie(
                values,
                labels=labels,
                colors=colors,
                autopct="%1.1f%%",
                startangle=90,
                counterclock=False,
                wedgeprops={"linewidth": 1, "edgecolor": "white"},
            )
            ax.axis("equal")
        else:
            positions = list(range(len(labels)))
            ax.barh(positions, values, color=colors)
            ax.set_yticks(positions, labels)
            ax.invert_yaxis()
            ax.set_xlabel("金額（円）")
            from matplotlib.ticker import FuncFormatter

            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{int(v):,}"))
            ax.grid(axis="x", alpha=0.3)
        ax.set_title(title, pad=24 if kind == "pie" else 6)
        fig.tight_layout()
        return _png(fig)


def trend_chart(
    title: str,
    month_labels: list[str],
    series: dict[str, list[int | None]],
    kind: str,
    width: int,
    height: int,
    averages: dict[str, list[int | None]] | None = None,
) -> bytes:
    """Monthly spending per category over time: line, area or grouped bar; dashed 12-month averages on line."""
    with matplotlib.rc_context(_rc()):
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
        step = max(1, len(x) // 12)
        ax.set_xticks(x[::step], month_labels[::step], rotation=45, ha="right")
        ax.set_ylabel("金額（円）")
        _yen_axis(ax)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", fontsize=9)
        ax.set_title(title)
        fig.tight_layout()
        return _png(fig)
