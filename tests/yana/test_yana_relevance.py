"""Japanese search quality: the graded relevance set (tests/yana/relevance.json) and the issue's own cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ctx

from handlers.yana import YanaHandlers
from handlers.yana.japanese import fold, query_words, reading

QUERIES = json.loads((Path(__file__).with_name("relevance.json")).read_text(encoding="utf-8"))["queries"]


@pytest.fixture()
def yana(yana_each_engine: YanaHandlers) -> YanaHandlers:
    """Every test here runs on SQLite and on PostgreSQL (the shared read-only service of each)."""
    return yana_each_engine


def top(yana: YanaHandlers, query: str, k: int = 5) -> list[str]:
    return [h["id"] for h in yana.search({"query_text": query, "k": k}, ctx())["hits"]]


def test_relevance_set_meets_the_targets(yana: YanaHandlers) -> None:
    assert len(QUERIES) >= 60
    recalls, reciprocal = [], []
    for q in QUERIES:
        hits, relevant = top(yana, q["query"], 10), q["relevant"]
        recalls.append(sum(1 for h in hits[:5] if h in relevant) / min(5, len(relevant)))
        rank = next((i for i, h in enumerate(hits, start=1) if h in relevant), None)
        reciprocal.append(1 / rank if rank else 0.0)
    assert sum(recalls) / len(recalls) >= 0.9
    assert sum(reciprocal) / len(reciprocal) >= 0.8


@pytest.mark.parametrize(
    ("variants", "expected"),
    [
        (["りんご", "リンゴ", "林檎", "ﾘﾝｺﾞ"], {"label_0223", "label_0224", "label_0225"}),
        (["みかん", "ミカン", "蜜柑"], {"label_0219", "label_0220", "label_0221", "label_0222"}),
        (["とまと", "トマト"], {"label_0231", "label_0234"}),
        (["ゆず", "柚子"], {"label_0226"}),
        (["だっさい", "ダッサイ", "獺祭"], {"label_0001", "label_0002", "label_0003"}),
        (["くぼた", "久保田"], {"label_0006", "label_0007", "label_0008"}),
        (["はっかいさん", "八海山"], {"label_0009", "label_0010"}),
    ],
)
def test_kana_kanji_and_readings_find_the_same_labels(
    yana: YanaHandlers, variants: list[str], expected: set[str]
) -> None:
    for query in variants:
        assert set(top(yana, query)) == expected, query


def test_conversational_question_is_cut_into_content_words(yana: YanaHandlers) -> None:
    words = [w.text for w in query_words("辛口の純米酒でおすすめは？")]
    assert words == ["辛口", "純米酒"]  # particles, おすすめ and the question mark are gone
    hits = yana.search({"query_text": "辛口の純米酒でおすすめは？", "k": 3}, ctx())["hits"]
    assert all("辛口" in " ".join(h["label_features"]) + h["product_name"] for h in hits)


def test_compound_finds_its_style(yana: YanaHandlers) -> None:
    hits = yana.search({"query_text": "山廃仕込み", "k": 5}, ctx())["hits"]
    assert len(hits) == 5 and all("山廃" in " ".join(h["label_features"]) + h["product_name"] for h in hits)


def test_place_name_inside_a_query_word_does_not_outrank_the_real_match(yana: YanaHandlers) -> None:
    assert top(yana, "塩竈市のお酒")[0] == "label_0107"  # 浦霞 (宮城県塩竈市), not a label with 塩 or 市 in it
    assert top(yana, "塩竈のお酒")[0] == "label_0107"


def test_field_match_beats_an_incidental_substring(yana: YanaHandlers) -> None:
    # 旭 is the brewery 旭酒造 (獺祭), not 旭川 (a place) nor any label merely containing the character
    assert top(yana, "旭酒造", 3) == ["label_0001", "label_0002", "label_0003"]


def test_folding_and_readings_are_pure_functions() -> None:
    assert fold("ﾘﾝｺﾞ ＰＯＭ") == fold("りんご pom") == "りんご pom"
    assert reading("林檎") == reading("リンゴ") == "りんご"
    assert reading("八海山") == "はっかいさん"  # curated: the dictionary says はちかいざん
