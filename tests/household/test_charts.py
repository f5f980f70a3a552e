"""Charts: real PNGs of the requested size, not blank, cached with a TTL, served by id."""

from __future__ import annotations

import io
import logging
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from PIL import Image, ImageStat

from handlers.household.core.chart_cache import ChartCache
from handlers.household.core.chartout import parse_image_size
from handlers.household.core.charts import font_path
from kumitate.cache import MemoryCache
from kumitate.context import CallContext, Principal
from kumitate.errors import ToolError

from .conftest import call_context, row, write_export


def check_png(png: bytes, size: tuple[int, int]) -> None:
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    assert image.size == size
    stat = ImageStat.Stat(image.convert("L"))
    assert stat.var[0] > 100  # not a blank canvas


def test_font_comes_from_the_package() -> None:
    path = font_path()
    assert path.name == "ipaexg.ttf" and path.is_file()
    assert "matplotlib_fontja" in str(path)


@pytest.mark.parametrize("graph_type,size", [("pie", (800, 600)), ("bar", (1920, 1080))])
def test_monthly_chart(reading_trend_service, ctx, graph_type: str, size: tuple[int, int]) -> None:
    out = reading_trend_service.get_monthly_household(
        {
            "year": 2025,
            "month": 1,
            "output_format": "image",
            "graph_type": graph_type,
            "image_size": f"{size[0]}x{size[1]}",
        },
        ctx,
    )
    chart = out["chart"]
    assert (chart["width"], chart["height"], chart["mime_type"], chart["graph_type"]) == (
        *size,
        "image/png",
        graph_type,
    )
    assert chart["url"] == f"http://127.0.0.1:8000/api/charts/{chart['chart_id']}"
    assert len(ctx.attachments) == 1 and ctx.attachments[0].mime_type == "image/png"
    check_png(ctx.attachments[0].data, size)
    assert reading_trend_service.read_chart(ctx, chart_id=chart["chart_id"]) == ctx.attachments[0].data


@pytest.mark.parametrize("graph_type", ["line", "area", "bar"])
def test_trend_chart(reading_trend_service, ctx, graph_type: str) -> None:
    out = reading_trend_service.get_category_trend(
        {"output_format": "image", "graph_type": graph_type, "image_size": "640x480"}, ctx
    )
    check_png(reading_trend_service.read_chart(ctx, chart_id=out["chart"]["chart_id"]), (640, 480))
    assert out["text"]  # the text answer is always there


def test_text_output_has_no_chart(reading_trend_service, ctx) -> None:
    out = reading_trend_service.get_monthly_household({"year": 2025, "month": 1}, ctx)
    assert "chart" not in out and ctx.attachments == []


def test_image_size_limits(reading_trend_service, ctx) -> None:
    for bad in ["1921x1080", "800x1081", "100x100", "800*600", "199x150", "200x149"]:
        with pytest.raises(ToolError) as err:  # the schema's pattern refuses them before the handler runs
            reading_trend_service.get_monthly_household(
                {"year": 2025, "month": 1, "output_format": "image", "image_size": bad}, ctx
            )
        assert err.value.code == "BAD_REQUEST"
        with pytest.raises(ToolError) as err:  # and the handler's own check, should the pattern ever loosen
            parse_image_size(bad)
        assert err.value.code == "VALIDATION_ERROR"


def test_unknown_and_expired_chart(tmp_path: Path, trend_service, ctx) -> None:
    with pytest.raises(ToolError) as err:
        trend_service.read_chart(ctx, chart_id="0" * 32)
    assert err.value.code == "CHART_NOT_FOUND"
    with pytest.raises(ToolError):
        trend_service.read_chart(ctx, chart_id="../../etc/passwd")
    offset = [0.0]
    clock = lambda: time.time() + offset[0]  # noqa: E731
    cache = ChartCache(tmp_path / "c", MemoryCache(clock=clock), ttl_seconds=60, clock=clock)
    chart_id = cache.put(b"\x89PNG fake", "alice")
    assert cache.get(chart_id) == (b"\x89PNG fake", {"alice"})
    assert ChartCache(tmp_path / "c", MemoryCache(), ttl_seconds=60).get(chart_id) == (
        b"\x89PNG fake",
        {"alice"},
    )  # from the file
    offset[0] = 61
    assert cache.get(chart_id) is None
    assert not (tmp_path / "c" / f"{chart_id}.png").exists()


@contextmanager
def font_problems(caplog: pytest.LogCaptureFixture) -> Iterator[list[str]]:
    """Collects matplotlib's missing-glyph warnings (tofu) and font-fallback log lines raised inside the block."""
    found: list[str] = []
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING, logger="matplotlib"):
        warnings.simplefilter("always")
        yield found
    found += [str(w.message) for w in caught if "Glyph" in str(w.message) or "font" in str(w.message).lower()]
    found += [r.getMessage() for r in caplog.records if r.name.startswith("matplotlib")]


def test_the_tofu_detector_detects_tofu(caplog: pytest.LogCaptureFixture) -> None:
    """Control: Japanese text in matplotlib's default font (DejaVu Sans) is reported."""
    from matplotlib.figure import Figure

    with font_problems(caplog) as problems:
        fig = Figure(figsize=(2, 1))
        fig.add_subplot(1, 1, 1).set_title("食費の推移")
        fig.savefig(io.BytesIO(), format="png")
    assert any("missing from font" in p for p in problems)


@pytest.mark.parametrize("tool", ["monthly_pie", "monthly_bar", "trend_line", "trend_bar"])
def test_japanese_chart_text_has_no_tofu(
    reading_trend_service, ctx, caplog: pytest.LogCaptureFixture, tool: str
) -> None:
    kind = tool.split("_")[1]
    with font_problems(caplog) as problems:
        if tool.startswith("monthly"):
            out = reading_trend_service.get_monthly_household(
                {"year": 2025, "month": 1, "output_format": "image", "graph_type": kind}, ctx
            )
        else:
            out = reading_trend_service.get_category_trend({"output_format": "image", "graph_type": kind}, ctx)
    assert "chart" in out and ctx.warnings == []
    assert problems == []


def test_month_with_income_but_no_spending_has_no_pie(tmp_path: Path, make_service, ctx) -> None:
    data = tmp_path / "exports"
    data.mkdir()
    write_export(data, "2025-05-01_2025-05-31", [row("2025/05/25", 300000, "収入", "給与")])
    svc = make_service(data)
    for graph_type in ("pie", "bar"):
        out = svc.get_monthly_household(
            {"year": 2025, "month": 5, "output_format": "image", "graph_type": graph_type}, ctx
        )
        assert out["total_expense"] == 0 and out["total_income"] == 300000
        assert "chart" not in out
    assert ctx.warnings == ["2025年05月は支出がないため、グラフは作成しませんでした"] * 2
    assert ctx.attachments == []
    # the trend over a window without spending: the text answer, no chart, a warning (no traceback logged)
    trend = svc.get_category_trend({"start_month": "2025-05", "end_month": "2025-05", "output_format": "image"}, ctx)
    assert "chart" not in trend and trend["text"].startswith("2025年05月の支出はありません。")
    assert ctx.warnings[-1] == "対象期間に支出がないため、グラフは作成しませんでした"


def test_pie_of_zeros_is_refused_by_the_renderer() -> None:
    from handlers.household.core.charts import category_figure

    with pytest.raises(ValueError):
        category_figure("t", ["食費"], [0], "pie", 400, 300)


def _as(principal: str, *scopes: str) -> CallContext:
    return call_context(principal=Principal(principal, frozenset(scopes)))


def test_a_chart_is_readable_by_its_creator_and_admin_only(trend_service) -> None:
    """Before: any principal holding the household scope read any chart id it saw."""
    alice, bob = _as("alice", "household"), _as("bob", "household")
    args = {"year": 2025, "month": 1, "output_format": "image"}
    chart_id = trend_service.get_monthly_household(args, alice)["chart"]["chart_id"]
    assert trend_service.read_chart(alice, chart_id=chart_id).startswith(b"\x89PNG")
    for reader in (_as("admin-user", "admin"), _as("root", "*")):
        assert trend_service.read_chart(reader, chart_id=chart_id).startswith(b"\x89PNG")
    with pytest.raises(ToolError) as err:
        trend_service.read_chart(bob, chart_id=chart_id)
    assert err.value.code == "CHART_NOT_FOUND"  # the same answer as an unknown id: nothing leaks
    # bob rendering the very same chart (he holds those bytes then) gets the same id and may read it; carol may not
    assert trend_service.get_monthly_household(args, bob)["chart"]["chart_id"] == chart_id
    assert trend_service.read_chart(bob, chart_id=chart_id).startswith(b"\x89PNG")
    assert trend_service.read_chart(alice, chart_id=chart_id).startswith(b"\x89PNG")
    with pytest.raises(ToolError):
        trend_service.read_chart(_as("carol", "household"), chart_id=chart_id)
    # a chart only bob rendered stays his
    bobs = trend_service.get_monthly_household({**args, "graph_type": "bar"}, bob)["chart"]["chart_id"]
    with pytest.raises(ToolError):
        trend_service.read_chart(alice, chart_id=bobs)


def test_chart_owners_survive_a_restart(tmp_path: Path) -> None:
    ChartCache(tmp_path / "c", MemoryCache()).put(b"\x89PNG fake", "alice")
    ChartCache(tmp_path / "c", MemoryCache()).put(b"\x89PNG fake", "bob")  # another worker: adds to the owners on disk
    chart_id = next((tmp_path / "c").glob("*.png")).stem
    assert ChartCache(tmp_path / "c", MemoryCache()).get(chart_id) == (b"\x89PNG fake", {"alice", "bob"})
    (tmp_path / "c" / f"{chart_id}.owners").unlink()
    assert ChartCache(tmp_path / "c", MemoryCache()).get(chart_id) is None  # no owners on disk: nobody's chart
