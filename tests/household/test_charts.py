"""Charts: real PNGs of the requested size, not blank, cached with a TTL, served by id."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from PIL import Image, ImageStat

from handlers.household.chart_cache import ChartCache
from handlers.household.charts import font_path
from kumitate.errors import ToolError


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
def test_monthly_chart(trend_service, ctx, graph_type: str, size: tuple[int, int]) -> None:
    out = trend_service.get_monthly_household(
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
    assert trend_service.read_chart(ctx, chart_id=chart["chart_id"]) == ctx.attachments[0].data


@pytest.mark.parametrize("graph_type", ["line", "area", "bar"])
def test_trend_chart(trend_service, ctx, graph_type: str) -> None:
    out = trend_service.get_category_trend(
        {"output_format": "image", "graph_type": graph_type, "image_size": "640x480"}, ctx
    )
    check_png(trend_service.read_chart(ctx, chart_id=out["chart"]["chart_id"]), (640, 480))
    assert out["text"]  # the text answer is always there


def test_text_output_has_no_chart(trend_service, ctx) -> None:
    out = trend_service.get_monthly_household({"year": 2025, "month": 1}, ctx)
    assert "chart" not in out and ctx.attachments == []


def test_image_size_limits(trend_service, ctx) -> None:
    for bad in ["1921x1080", "800x1081", "100x100", "800*600"]:
        with pytest.raises(ToolError) as err:
            trend_service.get_monthly_household(
                {"year": 2025, "month": 1, "output_format": "image", "image_size": bad}, ctx
            )
        assert err.value.code == "VALIDATION_ERROR"


def test_unknown_and_expired_chart(tmp_path: Path, trend_service, ctx) -> None:
    with pytest.raises(ToolError) as err:
        trend_service.read_chart(ctx, chart_id="0" * 32)
    assert err.value.code == "CHART_NOT_FOUND"
    with pytest.raises(ToolError):
        trend_service.read_chart(ctx, chart_id="../../etc/passwd")
    offset = [0.0]
    cache = ChartCache(tmp_path / "c", ttl_seconds=60, clock=lambda: time.time() + offset[0])
    chart_id = cache.put(b"\x89PNG fake")
    assert cache.get(chart_id) == b"\x89PNG fake"
    assert ChartCache(tmp_path / "c", ttl_seconds=60).get(chart_id) == b"\x89PNG fake"  # from the file
    offset[0] = 61
    assert cache.get(chart_id) is None
    assert not (tmp_path / "c" / f"{chart_id}.png").exists()
