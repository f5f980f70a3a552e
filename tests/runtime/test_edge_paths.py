"""kumitate.transports.edge.paths: the router sees the segments the caller sent, a `%2F` inside its segment."""

from __future__ import annotations

from typing import Any

import pytest

from kumitate.transports.edge.paths import EncodedSlashes, routed_path, segment_text


@pytest.mark.parametrize(
    ("raw", "routed", "value"),
    [
        (b"/files/borders%2Feurope.geojson", "/files/borders%2Feurope.geojson", "borders/europe.geojson"),
        (b"/files/a%2fb", "/files/a%2Fb", "a/b"),
        (b"/files/m%C3%BCnster%20x.shp", "/files/münster x.shp", "münster x.shp"),
        (b"/files/100%25%2F2", "/files/100%25%2F2", "100%/2"),
        (b"/files/%252F", "/files/%252F", "%2F"),  # the text `%2F`, not an encoded `/`
        (b"/files/50%", "/files/50%25", "50%"),  # a bare `%` is the text `%`
        (b"/files/a%2Fb?x=%2F", "/files/a%2Fb", "a/b"),  # the query is not the path's
    ],
)
def test_the_routed_path_keeps_the_callers_segments_and_each_reads_back_as_sent(
    raw: bytes, routed: str, value: str
) -> None:
    assert routed_path(raw) == routed
    assert segment_text(routed.removeprefix("/files/")) == value


@pytest.mark.anyio
async def test_only_a_path_with_a_percent_is_re_decoded() -> None:
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["path"])

    layer = EncodedSlashes(app)
    await layer({"type": "http", "path": "/files/a/b", "raw_path": b"/files/a%2Fb"}, None, None)
    await layer({"type": "http", "path": "/files/a b", "raw_path": b"/files/a b"}, None, None)
    await layer({"type": "http", "path": "/files/x"}, None, None)  # no raw_path: as the server gave it
    assert seen == ["/files/a%2Fb", "/files/a b", "/files/x"]
