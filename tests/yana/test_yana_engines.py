"""yana on both storage engines: PostgreSQL gives the same hits as SQLite for the same knowledge base,
and ingest writes labels PostgreSQL then finds (issue 17 items 1-2)."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import ctx, make_settings
from PIL import Image

from handlers.yana import YanaHandlers
from tests.servers import fresh_pg_database

pytestmark = pytest.mark.postgres

QUERIES = [q["query"] for q in json.loads(Path(__file__).with_name("relevance.json").read_text("utf-8"))["queries"]]
MORE: list[dict[str, Any]] = [
    {"query_text": "純米", "k": 20, "page_size": 20},
    {"query_text": "お酒", "k": 20, "page_size": 7, "page": 2},
    {"query_text": "八海", "k": 10},
    {"query_text": "作", "k": 5},
    {"query_text": "りんご", "filters": {"category": "juice"}},
    {"filters": {"category": "sake", "region": "小樽", "brewery": ""}},
    {"filters": {"region": "会津若松"}, "sort_by": "brand_name", "k": 20},
    {"query_text": "山廃", "k": 20, "sort_by": "recency"},
    {"query_text": "100%_ジュース", "k": 5},
    {"query_text": '"獺祭" OR', "k": 5},
]


def _everything(result: dict[str, Any]) -> dict[str, Any]:
    return {key: result[key] for key in ("hits", "next_page", "total", "debug")}


@pytest.mark.parametrize("params", [{"query_text": q, "k": 10} for q in QUERIES] + MORE, ids=repr)
def test_postgresql_gives_the_same_hits_and_scores_as_sqlite(
    yana_sqlite: YanaHandlers, yana_pg: YanaHandlers, params: dict[str, Any]
) -> None:
    assert yana_pg.database.dialect == "postgresql" and yana_sqlite.database.dialect == "sqlite"
    assert _everything(yana_pg.search(params, ctx())) == _everything(yana_sqlite.search(params, ctx()))


def test_chat_grounds_on_the_same_hits(yana_sqlite: YanaHandlers, yana_pg: YanaHandlers) -> None:
    for text in ("獺祭ってどんなお酒？", "小樽のお酒ある？", "甘いりんごジュースが好き"):
        pg, lite = yana_pg.chat({"user_text": text}, ctx()), yana_sqlite.chat({"user_text": text}, ctx())
        assert (pg["reply"], pg["hits"]) == (lite["reply"], lite["hits"])


@pytest.fixture()
def fresh_pg(tmp_path: Path, postgres_url: str, open_yana: Callable[..., YanaHandlers]) -> Callable[[], YanaHandlers]:
    url = fresh_pg_database(postgres_url, tmp_path.name)
    return lambda: open_yana(make_settings(tmp_path, {"KUMITATE_DATABASE_URL": url}))


def test_ingest_on_postgresql_is_stored_deduplicated_and_found_by_another_instance(
    fresh_pg: Callable[[], YanaHandlers],
) -> None:
    one, two = fresh_pg(), fresh_pg()  # two instances on one database: the second loads nothing
    buf = io.BytesIO()
    Image.new("RGB", (64, 80), (20, 140, 60)).save(buf, format="PNG")
    image = base64.b64encode(buf.getvalue()).decode()
    meta = {"brand_name": "試験銘柄", "brewery": "試験酒造", "region": "北海道小樽市", "label_features": ["辛口"]}
    first = one.ingest({"image": image, **meta}, ctx())
    assert first["dedup"] is False
    again = two.ingest({"image": image, **meta}, ctx())
    assert again == {**first, "dedup": True, "near_duplicates": []}
    assert two.kb.count() == 235
    hits = two.search({"query_text": "試験銘柄"}, ctx())["hits"]
    assert [h["id"] for h in hits] == [first["id"]]
