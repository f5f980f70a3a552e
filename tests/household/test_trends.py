"""Exact trend figures on a hand-computed 15-month fixture (see conftest.FOOD)."""

from __future__ import annotations

import pytest

from handlers.household import months
from handlers.household.core.formatting import pct, yen
from handlers.household.core.trends import compute_metrics, pct_change
from kumitate.errors import ToolError


def metric(result: dict, category: str, month: str) -> dict:
    block = next(b for b in result["categories"] if b["category"] == category)
    return next(m for m in block["months"] if m["month"] == month)


def test_formatting() -> None:
    assert yen(62500) == "62,500円"
    assert pct(-6.7) == "-6.7%"
    assert pct(3.2) == "+3.2%"
    assert pct(0.0) == "0.0%"
    assert pct(None) == "N/A"
    # nothing that shows as zero carries a sign
    assert [pct(v) for v in (-0.0, -0.04, 0.04, -1e-12)] == ["0.0%"] * 4
    assert pct(-0.1) == "-0.1%"


def test_pct_change_rounds_half_up_and_handles_missing() -> None:
    assert pct_change(1001, 1000) == 0.1
    assert pct_change(10005, 10000) == 0.1  # 0.05 → 0.1 (half-up, not banker's)
    assert pct_change(9995, 10000) == -0.1
    assert pct_change(5, 0) is None
    assert pct_change(None, 5) is None
    assert pct_change(5, None) is None
    tiny = pct_change(99999, 100000)  # −0.001 % rounds to −0.0: stored and shown as 0.0
    assert tiny == 0.0 and str(tiny) == "0.0" and pct(tiny) == "0.0%"


def test_pure_metrics_reach_before_window() -> None:
    start, end = months.parse("2024-01"), months.parse("2024-03")
    amounts = {months.parse("2023-01"): 100, start: 200, start + 1: 300, start + 2: 0}
    present = {months.parse("2023-01"), start, start + 1, start + 2}
    got = compute_metrics(amounts, present, start, end)
    assert [m.year_over_year_pct for m in got] == [100.0, None, None]  # 2024-01 vs 2023-01 (before the window)
    assert got[0].moving_average_12m == 200 and got[0].moving_average_months == 1  # 2023-01 is outside 12 months
    assert [m.month_over_month_pct for m in got] == [None, 50.0, -100.0]


def test_single_category_window(reading_trend_service, ctx) -> None:
    out = reading_trend_service.get_category_trend(
        {"category": "食費", "start_month": "2025-01", "end_month": "2025-02"}, ctx
    )
    jan, feb = metric(out, "食費", "2025-01"), metric(out, "食費", "2025-02")
    assert jan == {
        "month": "2025-01",
        "amount": 15000,
        "month_over_month_pct": 15.4,
        "moving_average_12m": 10833,
        "moving_average_months": 12,
        "year_over_year_pct": 50.0,
    }
    assert feb == {
        "month": "2025-02",
        "amount": 9000,
        "month_over_month_pct": -40.0,
        "moving_average_12m": 10583,
        "moving_average_months": 12,
        "year_over_year_pct": -25.0,
    }
    assert out["categories"][0]["total"] == 24000
    assert out["categories"][0]["average_12m"] == 10583
    assert out["notes"] == []
    assert out["text"] == (
        "食費カテゴリの 2025年01月〜2025年02月の推移です。\n"
        "- 2025年01月: 15,000円 （前月比 +15.4%, 前年同月比 +50.0%）\n"
        "- 2025年02月: 9,000円 （前月比 -40.0%, 前年同月比 -25.0%）\n"
        "- 12か月平均: 10,583円"
    )


def test_zero_month_and_month_without_data(reading_trend_service, ctx) -> None:
    out = reading_trend_service.get_category_trend(
        {"category": "食費", "start_month": "2025-03", "end_month": "2025-04"}, ctx
    )
    mar, apr = metric(out, "食費", "2025-03"), metric(out, "食費", "2025-04")
    assert mar == {
        "month": "2025-03",
        "amount": 0,
        "month_over_month_pct": -100.0,
        "moving_average_12m": 9833,
        "moving_average_months": 12,
        "year_over_year_pct": -100.0,
    }
    # 2025-04 has no data at all: N/A everywhere except the average over the 11 months that exist
    assert apr == {
        "month": "2025-04",
        "amount": None,
        "month_over_month_pct": None,
        "moving_average_12m": 9727,
        "moving_average_months": 11,
        "year_over_year_pct": None,
    }
    assert out["notes"] == [
        "過去 11 か月分のデータで計算しました",
        "過去 1 か月分のデータで計算しました（2 か月分のうちデータがあるのは 1 か月です）",
        "データのない月があります（N/A と表示）: 2025年04月",
    ]
    assert "- 2025年04月: N/A （前月比 N/A, 前年同月比 N/A）" in out["text"]


def test_short_history_note_and_na(reading_trend_service, ctx) -> None:
    out = reading_trend_service.get_category_trend(
        {"category": "食費", "start_month": "2024-01", "end_month": "2024-03"}, ctx
    )
    assert [m["month_over_month_pct"] for m in out["categories"][0]["months"]] == [None, 20.0, -25.0]
    assert [m["moving_average_12m"] for m in out["categories"][0]["months"]] == [10000, 11000, 10333]
    assert [m["year_over_year_pct"] for m in out["categories"][0]["months"]] == [None, None, None]
    assert out["notes"] == ["過去 3 か月分のデータで計算しました"]
    assert out["text"].endswith("- 12か月平均: 10,333円\n\n※ 過去 3 か月分のデータで計算しました")
    assert "- 2024年01月: 10,000円 （前月比 N/A, 前年同月比 N/A）" in out["text"]


def test_minor_category_and_defaults(reading_trend_service, ctx) -> None:
    out = reading_trend_service.get_category_trend({"category": "外食"}, ctx)
    assert (out["start_month"], out["end_month"]) == ("2024-04", "2025-03")  # latest 12 months with data
    block = out["categories"][0]
    assert block["level"] == "minor"
    assert [m["amount"] for m in block["months"]][-3:] == [1000, 1000, 0]


def test_top_three_without_category(reading_trend_service, ctx) -> None:
    out = reading_trend_service.get_category_trend({"start_month": "2025-01", "end_month": "2025-03"}, ctx)
    assert [(b["category"], b["total"]) for b in out["categories"]] == [
        ("住宅", 100000),
        ("食費", 24000),
        ("交通費", 1500),
    ]
    assert out["text"].startswith(
        "2025年01月〜2025年03月の支出額上位 3 カテゴリです。\n1. 住宅: 100,000円\n"
        "2. 食費: 24,000円\n3. 交通費: 1,500円\n\n住宅カテゴリの"
    )
    # income, transfers (振替=1) and 計算対象=0 never appear as spending
    assert {b["category"] for b in out["categories"]}.isdisjoint({"収入", "現金・カード"})


def test_unknown_category_names_nearest(reading_trend_service, ctx) -> None:
    with pytest.raises(ToolError) as err:
        reading_trend_service.get_category_trend({"category": "食ひ"}, ctx)
    assert err.value.code == "VALIDATION_ERROR"
    # difflib ratio ≥ 0.4: for two-character names one shared character is enough (食)
    assert err.value.message == "該当カテゴリが見つかりません: 食ひ（候補: 食費, 外食, 食料品）"
    assert err.value.details["suggestions"] == ["食費", "外食", "食料品"]


def test_unrelated_category_gets_the_largest_spending_categories(reading_trend_service, ctx) -> None:
    with pytest.raises(ToolError) as err:
        reading_trend_service.get_category_trend({"category": "ペット"}, ctx)
    # nothing is near (difflib cutoff 0.4): offer the largest spending categories instead of noise
    assert err.value.message == "該当カテゴリが見つかりません: ペット（支出カテゴリの例: 住宅, 食費, 交通費）"
    assert err.value.details["suggestions"] == ["住宅", "食費", "交通費"]
    assert err.value.details["not_spending"] is None


@pytest.mark.parametrize(
    "category,kind,reason",
    [
        ("収入", "income", "収入のカテゴリです。推移は支出カテゴリのみ対象です"),
        ("給与", "income", "収入のカテゴリです。推移は支出カテゴリのみ対象です"),
        ("現金・カード", "transfer", "振替のカテゴリです。振替は支出に数えません"),
    ],
)
def test_hierarchy_categories_without_spending_are_explained(
    reading_trend_service, ctx, category: str, kind: str, reason: str
) -> None:
    assert "収入" in reading_trend_service.read_category_hierarchy(ctx)  # listed there ...
    with pytest.raises(ToolError) as err:  # ... but not a spending category
        reading_trend_service.get_category_trend({"category": category}, ctx)
    assert err.value.code == "VALIDATION_ERROR"
    assert (
        err.value.message
        == f"該当カテゴリが見つかりません: {category}（{reason}。支出カテゴリの例: 住宅, 食費, 交通費）"
    )
    assert err.value.details["not_spending"] == kind


def test_window_with_fewer_months_of_data_than_asked_is_noted(reading_trend_service, ctx) -> None:
    # 24 months asked, 15 hold data; the 12-month average at the end is full: only the window note
    out = reading_trend_service.get_category_trend(
        {"category": "食費", "start_month": "2023-04", "end_month": "2025-03"}, ctx
    )
    assert out["notes"][0] == "過去 15 か月分のデータで計算しました（24 か月分のうちデータがあるのは 15 か月です）"
    assert out["notes"][1].startswith("データのない月があります（N/A と表示）: 2023年04月, ")
    assert out["text"].count("※ 過去 15 か月分のデータで計算しました") == 1
    # the same count for the window and the average: said once
    out = reading_trend_service.get_category_trend(
        {"category": "食費", "start_month": "2023-11", "end_month": "2024-03"}, ctx
    )
    assert out["notes"][0] == "過去 3 か月分のデータで計算しました（5 か月分のうちデータがあるのは 3 か月です）"
    assert sum("か月分のデータで計算しました" in n for n in out["notes"]) == 1


def test_default_window_starts_at_the_first_month_with_data(tmp_path, make_service, ctx) -> None:
    from .conftest import trend_rows, write_export

    data = tmp_path / "short"
    data.mkdir()
    for month, rows in list(trend_rows().items())[:5]:  # 2024-01..2024-05 only
        write_export(data, f"{month}-01_{month}-28", rows)
    svc = make_service(data)
    out = svc.get_category_trend({"category": "食費"}, ctx)
    assert (out["start_month"], out["end_month"]) == ("2024-01", "2024-05")  # not 2023-06.. with 7 N/A months
    assert [m["month"] for m in out["categories"][0]["months"]] == [f"2024-0{i}" for i in range(1, 6)]
    assert out["notes"] == ["過去 5 か月分のデータで計算しました（12 か月分のうちデータがあるのは 5 か月です）"]
    summary = svc.read_category_trend_summary(ctx)
    assert (summary["start_month"], summary["end_month"]) == ("2024-01", "2024-05")
    assert summary["notes"] == out["notes"]
    # an explicit start is kept as asked
    asked = svc.get_category_trend({"category": "食費", "start_month": "2023-11", "end_month": "2024-05"}, ctx)
    assert asked["start_month"] == "2023-11" and asked["categories"][0]["months"][0]["amount"] is None


def test_window_errors(reading_trend_service, ctx) -> None:
    with pytest.raises(ToolError) as err:
        reading_trend_service.get_category_trend({"start_month": "2019-01", "end_month": "2019-12"}, ctx)
    assert err.value.code == "DATA_NOT_FOUND"
    assert err.value.message == (
        "対象期間のデータが不足しています: 2019年01月〜2019年12月（データがあるのは 2024年01月〜2025年03月）"
    )
    with pytest.raises(ToolError) as err:
        reading_trend_service.get_category_trend({"start_month": "2025-03", "end_month": "2025-01"}, ctx)
    assert err.value.code == "VALIDATION_ERROR"


def test_monthly_household(reading_trend_service, ctx) -> None:
    out = reading_trend_service.get_monthly_household({"year": 2025, "month": 1}, ctx)
    assert out["total_expense"] == 65500
    assert out["total_income"] == 200000
    assert out["transaction_count"] == 4
    assert [(c["category_major"], c["amount"], c["share_pct"]) for c in out["categories"]] == [
        ("住宅", 50000, 76.3),
        ("食費", 15000, 22.9),
        ("交通費", 500, 0.8),
    ]
    assert out["text"].splitlines()[0] == "2025年01月の支出合計: 65,500円（4件）"
    with pytest.raises(ToolError) as err:
        reading_trend_service.get_monthly_household({"year": 2030, "month": 1}, ctx)
    assert err.value.code == "DATA_NOT_FOUND"


def test_resources(reading_trend_service, ctx) -> None:
    months_out = reading_trend_service.read_available_months(ctx)
    assert (months_out["count"], months_out["earliest"], months_out["latest"]) == (15, "2024-01", "2025-03")
    tree = reading_trend_service.read_category_hierarchy(ctx)
    assert tree["食費"] == ["外食", "食料品"]
    summary = reading_trend_service.read_category_trend_summary(ctx)
    assert (summary["start_month"], summary["end_month"]) == ("2024-04", "2025-03")
    assert [b["category"] for b in summary["categories"]] == ["住宅", "食費", "交通費"]
