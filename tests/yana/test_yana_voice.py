"""yana's reply policy: aizuchi choice, one aizuchi only, ≤ 5 sentences, no URLs, provenance."""

from __future__ import annotations

from handlers.yana.core.voice import apply_policy, choose_aizuchi, provenance, split_sentences, strip_urls

HIT = {"brand_name": "獺祭", "brewery": "旭酒造", "region": "山口県岩国市"}


def test_aizuchi_choice() -> None:
    assert choose_aizuchi("獺祭って美味しいよね") == "せやせや"
    assert choose_aizuchi("田酒はええ酒やんな？") == "せやせや"
    assert choose_aizuchi("これ辛口でしょ？") == "せやせや"
    assert choose_aizuchi("獺祭ってどんなお酒？") == "せやなー"
    assert choose_aizuchi("おすすめ教えて") == "せやなー"


def test_exactly_one_aizuchi_even_if_the_llm_wrote_several() -> None:
    reply, warnings = apply_policy("せやせや！せやなー、ええお酒やで。せやなぁ、冷やがええな。", "教えて")
    assert reply == "せやなー、ええお酒やで。冷やがええな。"
    assert warnings == []


def test_trim_to_five_sentences_with_warning() -> None:
    body = "一。二。三！四？五。六。七。"
    reply, warnings = apply_policy(body, "教えて")
    assert reply == "せやなー、一。二。三！四？五。"
    assert warnings == ["trimmed_to_5_sentences"]


def test_urls_are_removed_everywhere() -> None:
    reply, warnings = apply_policy(
        "詳しくは https://example.com/sake?x=1 を見てな。www.evil.test もあるで。",
        "教えて",
        source_hits=[{**HIT, "brand_name": "獺祭 http://x.test"}],
    )
    assert "http" not in reply and "www." not in reply
    assert reply == "せやなー、詳しくは を見てな。もあるで。（参考：獺祭/旭酒造/山口県岩国市）"
    assert warnings == ["urls_removed"]


def test_provenance_is_appended_and_not_counted_as_a_sentence() -> None:
    reply, warnings = apply_policy("一。二。三。四。（参考：偽物/どこか）", "教えて", source_hits=[HIT])
    assert reply == "せやなー、一。二。三。四。（参考：獺祭/旭酒造/山口県岩国市）"
    assert len(split_sentences(reply)) == 4
    assert warnings == []


def test_provenance_lists_at_most_two_distinct_hits() -> None:
    other = {"brand_name": "雁木", "brewery": "八百新酒造", "region": "山口県岩国市"}
    assert provenance([HIT, HIT, other, other]) == "（参考：獺祭/旭酒造/山口県岩国市）"
    assert provenance([HIT, other, HIT]) == "（参考：獺祭/旭酒造/山口県岩国市、雁木/八百新酒造/山口県岩国市）"
    assert provenance([]) == ""


def test_split_sentences_keeps_closers_and_line_breaks() -> None:
    assert split_sentences("「ほんま？」と聞いた。次\n最後") == ["「ほんま？」", "と聞いた。", "次", "最後"]


def test_empty_after_cleaning_returns_empty() -> None:
    assert apply_policy("せやなー。 https://x.test", "教えて") == ("", ["urls_removed"])


def test_bare_domains_full_width_urls_emails_and_links_are_removed() -> None:
    cases = {
        "詳しくはexample.com/sakeを見てな。": "詳しくはを見てな。",
        "蔵のサイトはasahishuzo.ne.jpやで。": "蔵のサイトはやで。",
        "ＨＴＴＰＳ：／／ｅｘａｍｐｌｅ．ｃｏｍ／ｓａｋｅ を見て。": " を見て。",
        "ｗｗｗ．ｅｖｉｌ．ｔｅｓｔ！ええで。": "！ええで。",
        "問い合わせは info@asahishuzo.ne.jp まで。": "問い合わせは まで。",
        "メールは mailto:a@b.jp やで。": "メールは やで。",
        "[公式](https://asahishuzo.ne.jp)を見てな。": "公式を見てな。",
        "[公式]()を見てな。": "公式を見てな。",
        "［公式］（ｈｔｔｐｓ：／／ｘ．ｃｏｍ）を見てな。": "公式を見てな。",
        '<a href="https://x.com">ここ</a>を見てな。': "ここを見てな。",
        "公式サイト（https://x.com）があるで。": "公式サイトがあるで。",
        "見てな: https://x.com/a?b=1。次や。": "見てな: 。次や。",
    }
    for text, expected in cases.items():
        assert strip_urls(text) == (expected, True), text


def test_ordinary_text_is_not_mistaken_for_a_link() -> None:
    for text in ["精米歩合45.5%で、3.14や No.1 やで。", "e.g. 獺祭。", "獺祭 純米大吟醸45。", "ver.2 の話。"]:
        assert strip_urls(text) == (text, False), text


def test_policy_strips_every_kind_of_link_with_one_warning() -> None:
    reply, warnings = apply_policy(
        "公式はasahishuzo.ne.jpやで。[蔵の案内](https://x.test)もええよ。問い合わせは a@b.co.jp まで。",
        "教えて",
        source_hits=[{**HIT, "brewery": "旭酒造 asahishuzo.ne.jp"}],
    )
    assert reply == "せやなー、公式はやで。蔵の案内もええよ。問い合わせは まで。（参考：獺祭/旭酒造/山口県岩国市）"
    assert warnings == ["urls_removed"]
