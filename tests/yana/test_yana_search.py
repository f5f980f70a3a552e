"""Search: Japanese substring matching, filters, ranking bonus, paging stability, de-duplication."""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest
from conftest import REPO, ctx
from PIL import Image

from handlers.yana import YanaHandlers


@pytest.fixture()
def yana(yana_each_engine: YanaHandlers) -> YanaHandlers:
    """Every test here runs on SQLite and on PostgreSQL (the shared read-only service of each)."""
    return yana_each_engine


def ids(result: dict[str, Any]) -> list[str]:
    return [h["id"] for h in result["hits"]]


def test_trigram_matches_japanese_substring_without_word_breaks(yana: YanaHandlers) -> None:
    result = yana.search({"query_text": "大吟醸", "k": 20}, ctx())
    assert result["total"] == 10  # every label with 大吟醸 in its product name or features
    assert all("大吟醸" in "".join(h["label_features"]) + h["product_name"] for h in result["hits"])


def test_two_character_term_uses_like_fallback(yana: YanaHandlers) -> None:
    result = yana.search({"query_text": "八海", "k": 5}, ctx())
    assert ids(result) == ["label_0009", "label_0010"]
    # 八海 starts the brand token 八海山 (0.8) + the best bm25 (0.1 * 1.0); no bonus: the brand is not named
    assert result["debug"]["hits"][0] == {"id": "label_0009", "score": 0.82, "text_score": 0.82, "meta_bonus": 0.0}


def test_one_character_brand_counts_only_as_a_whole_term(yana: YanaHandlers) -> None:
    result = yana.search({"query_text": "作", "k": 5}, ctx())
    assert ids(result)[:2] == ["label_0025", "label_0026"]  # 作 玄乃智 / 穂乃智
    assert result["debug"]["meta_bonus"] == 0.2


def test_conversational_query_finds_the_named_brand(yana: YanaHandlers) -> None:
    result = yana.search({"query_text": "獺祭ってどんなお酒？", "k": 3}, ctx())
    assert ids(result) == ["label_0001", "label_0002", "label_0003"]
    assert result["debug"]["meta_bonus"] == 0.2


def test_region_and_particles(yana: YanaHandlers) -> None:
    result = yana.search({"query_text": "岩国の純米", "k": 5}, ctx())
    assert all(h["region"] == "山口県岩国市" for h in result["hits"])
    assert {h["brewery"] for h in result["hits"]} == {"旭酒造", "八百新酒造", "酒井酒造"}
    assert result["hits"][0]["brewery"] == "八百新酒造"  # 雁木 純米: 純米 as a whole word beats 純米大吟醸
    assert result["debug"]["meta_bonus"] == 0.1


def test_full_width_and_case_are_normalised(yana: YanaHandlers) -> None:
    assert ids(yana.search({"query_text": "ｐｏｍ"}, ctx())) == ids(yana.search({"query_text": "POM"}, ctx()))
    assert ids(yana.search({"query_text": "POM"}, ctx())) == ["label_0219", "label_0220"]


def test_filters_category_region_brewery(yana: YanaHandlers) -> None:
    otaru = yana.search({"filters": {"category": "sake", "region": "小樽", "brewery": ""}}, ctx())
    assert [(h["brand_name"], h["brewery"]) for h in otaru["hits"]] == [("宝川", "田中酒造")]
    juice = yana.search({"query_text": "りんご", "filters": {"category": "juice"}}, ctx())
    assert sorted(ids(juice)) == ["label_0223", "label_0224", "label_0225"]
    brewery = yana.search({"filters": {"brewery": "山本酒造店"}}, ctx())
    assert [h["brand_name"] for h in brewery["hits"]] == ["山本", "白瀑"]
    none = yana.search({"query_text": "獺祭", "filters": {"category": "juice"}}, ctx())
    assert none["hits"] == [] and none["next_page"] is None and none["debug"]["score"] == 0.0


def test_brewery_named_in_query_gets_bonus(yana: YanaHandlers) -> None:
    result = yana.search({"query_text": "旭酒造の純米大吟醸", "k": 3}, ctx())
    assert ids(result) == ["label_0001", "label_0002", "label_0003"]
    assert result["debug"]["meta_bonus"] == 0.15


def test_paging_is_stable_and_complete(yana: YanaHandlers) -> None:
    whole = yana.search({"query_text": "純米", "k": 20, "page_size": 20}, ctx())
    assert whole["total"] == 20 and whole["next_page"] is None
    pages, page = [], 1
    while page is not None:
        result = yana.search({"query_text": "純米", "k": 20, "page": page, "page_size": 6}, ctx())
        pages.append(ids(result))
        page = result["next_page"]
    assert [len(p) for p in pages] == [6, 6, 6, 2]
    assert [i for p in pages for i in p] == ids(whole)
    again = yana.search({"query_text": "純米", "k": 20, "page": 2, "page_size": 6}, ctx())
    assert ids(again) == pages[1]
    beyond = yana.search({"query_text": "純米", "k": 20, "page": 9, "page_size": 6}, ctx())
    assert beyond["hits"] == [] and beyond["next_page"] is None


def test_ties_break_on_id(yana: YanaHandlers) -> None:
    result = yana.search({"query_text": "山廃", "k": 20}, ctx())
    scores = [(d["score"], d["id"]) for d in result["debug"]["hits"]]
    assert scores == sorted(scores, key=lambda s: (-s[0], s[1]))


def test_sort_by_brand_name(yana: YanaHandlers) -> None:
    result = yana.search({"filters": {"region": "会津若松"}, "sort_by": "brand_name", "k": 20}, ctx())
    names = [h["brand_name"] for h in result["hits"]]
    assert names == sorted(names) and len(names) == 5


def _jpeg_copy(path: str) -> str:
    """The same label, re-encoded: different bytes (sha1), nearly the same pHash."""
    buf = io.BytesIO()
    with Image.open(REPO / path) as img:
        img.convert("RGB").save(buf, format="JPEG", quality=85)
    return base64.b64encode(buf.getvalue()).decode()


def test_visual_near_duplicate_is_suppressed(fresh: YanaHandlers) -> None:
    added = fresh.ingest(
        {
            "image": _jpeg_copy("data/yana/images/label_0205.png"),
            "brand_name": "宝川",
            "product_name": "純米 (再撮影)",
            "brewery": "田中酒造",
            "region": "北海道小樽市",
        },
        ctx(),
    )
    assert added["dedup"] is False and added["near_duplicates"] == ["label_0205"]
    result = fresh.search({"query_text": "宝川"}, ctx())
    assert ids(result) == ["label_0205"]
    assert result["debug"]["suppressed"] == 1 and result["debug"]["candidates"] == 2


def test_textual_near_duplicate_is_suppressed(fresh: YanaHandlers) -> None:
    other = _jpeg_copy("data/yana/images/label_0100.png")  # a different picture …
    fresh.ingest(
        {"image": other, "brand_name": "宝川", "product_name": "純米", "brewery": "田中酒造", "region": "北海道小樽市"},
        ctx(),
    )  # … with the same brand + product + brewery
    result = fresh.search({"filters": {"region": "小樽"}}, ctx())
    assert ids(result) == ["label_0205"] and result["debug"]["suppressed"] == 1


def test_near_identical_text_is_suppressed(fresh: YanaHandlers) -> None:
    """Formatting differences do not make a new label: width, case, spaces, punctuation, kana type, 株式会社."""
    fresh.ingest(
        {
            "image": _jpeg_copy("data/yana/images/label_0100.png"),  # a different picture
            "brand_name": "宝川",
            "product_name": " 純米・",
            "brewery": "田中酒造 株式会社",
            "region": "北海道小樽市",
        },
        ctx(),
    )
    fresh.ingest(
        {
            "image": _jpeg_copy("data/yana/images/label_0150.png"),
            "brand_name": "ﾀｶﾗｶﾞﾜ",  # half-width katakana of a brand written in kana elsewhere
            "product_name": "純米",
            "brewery": "(株)田中酒造",
            "region": "北海道小樽市",
        },
        ctx(),
    )
    fresh.ingest(
        {
            "image": _jpeg_copy("data/yana/images/label_0151.png"),
            "brand_name": "たからがわ",
            "product_name": "純米",
            "brewery": "田中酒造",
            "region": "北海道小樽市",
        },
        ctx(),
    )
    result = fresh.search({"filters": {"region": "小樽"}}, ctx())
    assert [h["brand_name"] for h in result["hits"]] == ["宝川", "ﾀｶﾗｶﾞﾜ"] and result["debug"]["suppressed"] == 2


def test_one_character_apart_is_still_a_different_product(yana: YanaHandlers) -> None:
    """No edit-distance merging: 作 玄乃智 / 穂乃智 and 久保田 千寿 / 百寿 / 萬寿 are distinct labels."""
    assert [h["product_name"] for h in yana.search({"query_text": "作", "k": 2}, ctx())["hits"]] == ["玄乃智", "穂乃智"]
    kubota = yana.search({"query_text": "久保田", "k": 10}, ctx())
    assert {"千寿", "百寿", "萬寿"} <= {h["product_name"] for h in kubota["hits"]}
    assert kubota["debug"]["suppressed"] == 0
