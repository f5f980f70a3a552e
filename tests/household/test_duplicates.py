"""Duplicate detection: hand-computed scores, window search == pairwise, atomic confirm/restore."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from handlers.household.core.duplicates import Item, find_candidates, find_candidates_pairwise, similarity
from handlers.household.records import Options
from kumitate.errors import ToolError

from .conftest import row, sql, write_export


def test_similarity_scores() -> None:
    same = Item(1, 100, -1000)
    assert similarity(same, Item(2, 100, -1000), Options()) == 1.0
    # 1 of 2 tolerated days, 10 yen of 1000: 0.4 × (1 − 1/4) + 0.6 × 0.99
    assert similarity(same, Item(2, 101, -990), Options(date_tolerance_days=2)) == 0.894
    # at the edge of the date tolerance the date part is ½, not 0
    assert similarity(same, Item(2, 101, -1000), Options(date_tolerance_days=1)) == 0.8
    # 0.4 + 0.6 × (1 − 40/1040) = 0.97692… → 0.9769
    assert similarity(same, Item(2, 100, -1040), Options(amount_tolerance_pct=5)) == 0.9769
    # 0.4 + 0.6 × (1 − 30/1030) = 0.98252… → 0.9825
    assert similarity(same, Item(2, 100, -1030), Options(amount_tolerance_abs=50)) == 0.9825


def test_income_and_expense_never_pair() -> None:
    # a same-day refund: amounts differ in sign only; by absolute value the score would be 1.0
    expense, refund = Item(1, 100, -5000), Item(2, 100, 5000)
    loose = Options(amount_tolerance_abs=10000)
    assert find_candidates([expense, refund], loose) == []
    assert find_candidates_pairwise([expense, refund], loose) == []
    assert find_candidates([expense, refund], Options(amount_tolerance_pct=199)) == []
    # near zero the tolerance band crosses 0: still no pair across the sign (0 yen pairs only with 0 yen)
    assert find_candidates([Item(1, 100, -10), Item(2, 100, 10), Item(3, 100, 0)], loose) == []
    assert [(c.id_1, c.id_2) for c in find_candidates([expense, Item(2, 100, -4000)], loose)] == [(1, 2)]


def test_transfers_pair_only_with_transfers() -> None:
    # a card settlement (振替) and a purchase of the same amount on the same day are not one another's duplicate
    items = [Item(1, 100, -30000, kind=1), Item(2, 100, -30000), Item(3, 100, -30000, kind=1)]
    for opts in (Options(), Options(amount_tolerance_abs=100)):
        assert [(c.id_1, c.id_2) for c in find_candidates(items, opts)] == [(1, 3)]
        assert find_candidates(items, opts) == find_candidates_pairwise(items, opts)


def test_tolerances() -> None:
    items = [Item(1, 100, -1000), Item(2, 100, -1030), Item(3, 101, -1000), Item(4, 100, -1060), Item(5, 100, 1000)]
    pairs = lambda opts: [(c.id_1, c.id_2, c.score) for c in find_candidates(items, opts)]  # noqa: E731
    assert pairs(Options()) == []  # exact amounts on the same day only
    assert pairs(Options(date_tolerance_days=1, min_similarity_score=0.5)) == [(1, 3, 0.8)]
    assert pairs(Options(amount_tolerance_abs=50)) == [(2, 4, 0.9830), (1, 2, 0.9825)]
    assert pairs(Options(amount_tolerance_pct=5)) == [(2, 4, 0.983), (1, 2, 0.9825)]
    assert pairs(Options(amount_tolerance_pct=6.5)) == [(2, 4, 0.983), (1, 2, 0.9825), (1, 4, 0.966)]
    # both tolerances set: both must hold (60 yen > 50)
    assert pairs(Options(amount_tolerance_abs=50, amount_tolerance_pct=6.5)) == [(2, 4, 0.983), (1, 2, 0.9825)]


@pytest.mark.parametrize("tolerance", [1, 2, 3, 7, 31])
def test_equal_amounts_anywhere_inside_the_date_tolerance_pass_the_default_threshold(tolerance: int) -> None:
    """The seed's 1 − Δ/max(tol, 1) scored the edge 0.6: a ±1-day search never found a pair one day apart."""
    items = [Item(1, 100, -1000), *(Item(1 + d, 100 + d, -1000) for d in range(1, tolerance + 1))]
    found = {(c.id_1, c.id_2): c.score for c in find_candidates(items, Options(date_tolerance_days=tolerance))}
    edge = (1, 1 + tolerance)
    assert found[edge] == 0.8  # 0.4 × ½ + 0.6 × 1
    assert all(found[(1, 1 + d)] > 0.8 for d in range(1, tolerance))  # nearer days rank higher
    assert find_candidates(items, Options(date_tolerance_days=tolerance)) == find_candidates_pairwise(
        items, Options(date_tolerance_days=tolerance)
    )


@pytest.mark.parametrize(
    "opts",
    [
        Options(),
        Options(date_tolerance_days=2, min_similarity_score=0.5),
        Options(amount_tolerance_abs=30),
        Options(date_tolerance_days=1, amount_tolerance_pct=3, min_similarity_score=0.6),
        Options(date_tolerance_days=3, amount_tolerance_abs=100, amount_tolerance_pct=10, min_similarity_score=0.0),
    ],
)
def test_window_search_equals_pairwise(opts: Options) -> None:
    rng = random.Random(7)
    items = [
        Item(i, rng.randint(0, 60), rng.choice([-1, -1, -1, 1]) * rng.randint(0, 60) * 50, kind=int(rng.random() < 0.2))
        for i in range(1, 700)
    ]
    found = find_candidates(items, opts)
    assert found == find_candidates_pairwise(items, opts)
    by_id = {t.id: t for t in items}
    assert all(by_id[c.id_1].kind == by_id[c.id_2].kind for c in found)
    assert all((by_id[c.id_1].amount < 0) == (by_id[c.id_2].amount < 0) for c in found)


@pytest.fixture
def dup_service(tmp_path: Path, make_service):
    data = tmp_path / "exports"
    data.mkdir()
    write_export(
        data,
        "2025-01-01_2025-01-31",
        [
            row("2025/01/10", -5000, "食費", "食料品", content="スーパーマーケット A店"),
            row("2025/01/10", -5000, "食費", "食料品", content="スーパーマーケット A店"),
            row("2025/01/12", -1200, "食費", "外食"),
            row("2025/01/25", 300000, "収入", "給与"),
        ],
    )
    return make_service(data)


def test_detect_confirm_restore_changes_aggregates(dup_service, ctx) -> None:
    svc = dup_service
    before = svc.get_monthly_household({"year": 2025, "month": 1}, ctx)["total_expense"]
    assert before == 11200
    detected = svc.detect_duplicates({}, ctx)
    assert detected == {
        "candidates_count": 1,
        "new_candidates": 1,
        "removed_candidates": 0,
        "checked_transactions": 4,
        "stored_candidates": 1,
        "candidates_truncated": False,
        "message": "1件の重複候補が見つかりました",
    }
    assert ctx.warnings == []
    assert svc.detect_duplicates({}, ctx)["new_candidates"] == 0  # idempotent
    listed = svc.list_duplicate_candidates({}, ctx)
    assert listed["total"] == 1
    cand = listed["candidates"][0]
    assert (cand["transaction_1"]["id"], cand["transaction_2"]["id"], cand["similarity_score"]) == (1, 2, 1.0)
    assert (cand["transaction_1"]["row_number"], cand["transaction_2"]["row_number"]) == (2, 3)
    detail = svc.get_duplicate_candidate_detail({"check_id": cand["check_id"]}, ctx)
    assert detail["detection_params"] == {
        "date_tolerance_days": 0,
        "amount_tolerance_abs": 0.0,
        "amount_tolerance_pct": 0.0,
    }

    confirmed = svc.confirm_duplicate({"check_id": cand["check_id"], "decision": "duplicate"}, ctx)
    assert confirmed["marked_transaction_id"] == 2
    assert confirmed["message"] == "重複として記録しました。取引ID 2 にフラグが設定されました。"
    assert svc.get_monthly_household({"year": 2025, "month": 1}, ctx)["total_expense"] == 6200
    trend = svc.get_category_trend({"category": "食費", "start_month": "2025-01", "end_month": "2025-01"}, ctx)
    assert trend["categories"][0]["total"] == 6200
    assert svc.list_duplicate_candidates({}, ctx)["total"] == 0
    stats = svc.get_duplicate_stats({}, ctx)
    assert (stats["marked_duplicates"], stats["confirmed_duplicate"], stats["duplicate_rate"]) == (1, 1, 25.0)

    restored = svc.restore_duplicate({"transaction_id": 2}, ctx)
    assert restored["message"] == "取引ID 2 を復元しました。"
    assert svc.get_monthly_household({"year": 2025, "month": 1}, ctx)["total_expense"] == 11200
    stats = svc.get_duplicate_stats({}, ctx)
    assert (stats["marked_duplicates"], stats["confirmed_not_duplicate"]) == (0, 1)


def test_confirm_is_atomic_and_errors(dup_service, ctx) -> None:
    svc = dup_service
    svc.detect_duplicates({}, ctx)
    svc.confirm_duplicate({"check_id": 1, "decision": "duplicate"}, ctx)
    # a second pair marking the same transaction → CONFLICT, and nothing of it is kept
    sql(
        svc,
        "INSERT INTO household_duplicate_checks (transaction_id_1, transaction_id_2, detection_date_tolerance, "
        "detection_amount_tolerance_abs, detection_amount_tolerance_pct, similarity_score, detected_at) "
        "VALUES (3, 2, 5, 0, 0, 0.5, '2025-01-01 00:00:00')",
    )
    with pytest.raises(ToolError) as err:
        svc.confirm_duplicate({"check_id": 2, "decision": "duplicate"}, ctx)
    assert err.value.code == "CONFLICT"
    assert err.value.message == "この取引は既に重複としてマークされています（取引ID 2）"
    assert svc.get_duplicate_candidate_detail({"check_id": 2}, ctx)["user_decision"] is None  # rolled back
    # changing the first decision undoes the mark
    out = svc.confirm_duplicate({"check_id": 1, "decision": "not_duplicate"}, ctx)
    assert out["message"] == "「重複ではない」として記録しました。取引ID 2 の重複フラグを解除しました。"
    assert svc.get_monthly_household({"year": 2025, "month": 1}, ctx)["total_expense"] == 11200
    for call, args, code in [
        (svc.confirm_duplicate, {"check_id": 99, "decision": "skip"}, "NOT_FOUND"),
        (svc.get_duplicate_candidate_detail, {"check_id": 99}, "NOT_FOUND"),
        (svc.restore_duplicate, {"transaction_id": 99}, "NOT_FOUND"),
        (svc.restore_duplicate, {"transaction_id": 1}, "CONFLICT"),
        # ids past 64 bits (they used to crash the driver: INTERNAL) are refused by the schema, as on the wire;
        # the store's own guard (NOT_FOUND) is tested in test_id_bounds.py
        (svc.restore_duplicate, {"transaction_id": 2**64}, "BAD_REQUEST"),
        (svc.get_duplicate_candidate_detail, {"check_id": 2**64}, "BAD_REQUEST"),
        (svc.confirm_duplicate, {"check_id": 2**64, "decision": "skip"}, "BAD_REQUEST"),
    ]:
        with pytest.raises(ToolError) as err:
            call(args, ctx)
        assert err.value.code == code


def test_refund_and_card_settlement_are_not_candidates(tmp_path: Path, make_service, ctx) -> None:
    """Through the store: the sign and 振替 reach the search (before the fix both pairs scored 1.0)."""
    data = tmp_path / "exports"
    data.mkdir()
    write_export(
        data,
        "2025-03-01_2025-03-31",
        [
            row("2025/03/10", -5000, "衣服・美容", "衣服", content="ショップ"),
            row("2025/03/10", 5000, "衣服・美容", "衣服", content="ショップ 返品"),
            row("2025/03/10", -30000, "現金・カード", "カード引き落とし", transfer=1),
            row("2025/03/10", -30000, "住宅", "家具"),
        ],
    )
    svc = make_service(data)
    for opts in ({}, {"date_tolerance_days": 1, "amount_tolerance_abs": 10000}):
        out = svc.detect_duplicates(opts, ctx)
        assert (out["candidates_count"], out["checked_transactions"]) == (0, 4)
    assert svc.list_duplicate_candidates({}, ctx)["total"] == 0


def test_a_stricter_run_replaces_undecided_candidates(dup_service, ctx) -> None:
    svc = dup_service
    loose = svc.detect_duplicates(
        {"date_tolerance_days": 3, "amount_tolerance_abs": 5000, "min_similarity_score": 0.0}, ctx
    )
    assert (loose["candidates_count"], loose["new_candidates"], loose["removed_candidates"]) == (3, 3, 0)
    pairs = {
        (c["transaction_1"]["id"], c["transaction_2"]["id"]): c["check_id"]
        for c in svc.list_duplicate_candidates({"limit": 10}, ctx)["candidates"]
    }
    assert set(pairs) == {(1, 2), (1, 3), (2, 3)}
    svc.confirm_duplicate({"check_id": pairs[(1, 3)], "decision": "not_duplicate"}, ctx)

    strict = svc.detect_duplicates({}, ctx)
    # (2, 3) was only a loose candidate and is undecided: gone; (1, 2) is found again and keeps its id
    assert (strict["candidates_count"], strict["new_candidates"], strict["removed_candidates"]) == (1, 0, 1)
    listed = svc.list_duplicate_candidates({"skip_checked": False}, ctx)["candidates"]
    assert {(c["check_id"], c["user_decision"]) for c in listed} == {
        (pairs[(1, 2)], None),
        (pairs[(1, 3)], "not_duplicate"),
    }
    stats = svc.get_duplicate_stats({}, ctx)
    assert (stats["total_checks"], stats["pending_checks"], stats["confirmed_not_duplicate"]) == (2, 1, 1)

    # a run over some transactions only replaces the pending pairs among those
    svc.detect_duplicates({"date_tolerance_days": 3, "amount_tolerance_abs": 5000, "min_similarity_score": 0.0}, ctx)
    limited = svc.detect_duplicates({"transaction_ids": [2, 3]}, ctx)
    assert (limited["candidates_count"], limited["removed_candidates"]) == (0, 1)  # (2, 3) only; (1, 2) stays
    left = {
        (c["transaction_1"]["id"], c["transaction_2"]["id"])
        for c in svc.list_duplicate_candidates({}, ctx)["candidates"]
    }
    assert left == {(1, 2)}


def test_a_confirmed_duplicate_leaves_every_resource(tmp_path: Path, make_service, ctx) -> None:
    """The only February row, and the only 趣味・娯楽 row, duplicates a January purchase (±1 day)."""
    data = tmp_path / "exports"
    data.mkdir()
    write_export(data, "2025-01-01_2025-01-31", [row("2025/01/31", -3000, "日用品", "ドラッグストア", content="薬局")])
    write_export(data, "2025-02-01_2025-02-28", [row("2025/02/01", -3000, "趣味・娯楽", "本", content="薬局")])
    svc = make_service(data)

    def state() -> tuple[list[str | None], dict[str, list[str]], list[str]]:
        months_out = svc.read_available_months(ctx)
        summary = svc.read_category_trend_summary(ctx)
        return (
            [months_out["earliest"], months_out["latest"]],
            svc.read_category_hierarchy(ctx),
            [b["category"] for b in summary["categories"]],
        )

    before = state()
    assert before == (
        ["2025-01", "2025-02"],
        {"日用品": ["ドラッグストア"], "趣味・娯楽": ["本"]},
        ["日用品", "趣味・娯楽"],
    )
    assert svc.detect_duplicates({"date_tolerance_days": 1, "min_similarity_score": 0.5}, ctx)["candidates_count"] == 1
    assert svc.confirm_duplicate({"check_id": 1, "decision": "duplicate"}, ctx)["marked_transaction_id"] == 2
    assert state() == (["2025-01", "2025-01"], {"日用品": ["ドラッグストア"]}, ["日用品"])
    with pytest.raises(ToolError) as err:
        svc.get_category_trend({"category": "趣味・娯楽"}, ctx)
    assert err.value.code == "VALIDATION_ERROR"
    with pytest.raises(ToolError) as err:
        svc.get_monthly_household({"year": 2025, "month": 2}, ctx)
    assert err.value.code == "DATA_NOT_FOUND"
    svc.restore_duplicate({"transaction_id": 2}, ctx)
    assert state() == before


def test_a_huge_tolerance_stores_only_the_best_candidates_and_warns(tmp_path: Path, make_service, ctx) -> None:
    """Before the cap, a loose search stored every pair (100k+ on real data) with no word about it."""
    data = tmp_path / "exports"
    data.mkdir()
    rows = [row(f"2025/01/{1 + i % 20:02d}", -1000 - i, "食費", "食料品") for i in range(12)]
    write_export(data, "2025-01-01_2025-01-31", rows)
    svc = make_service(data, HOUSEHOLD_MAX_CANDIDATES="5")
    loose = {"date_tolerance_days": 31, "amount_tolerance_abs": 100, "min_similarity_score": 0}
    out = svc.detect_duplicates(loose, ctx)
    assert (out["candidates_count"], out["stored_candidates"], out["candidates_truncated"]) == (66, 5, True)
    assert "66件" in out["message"] and "5件" in out["message"]
    assert len(ctx.warnings) == 1 and "5件" in ctx.warnings[0]
    listed = svc.list_duplicate_candidates({"limit": 100}, ctx)
    assert listed["total"] == 5
    best = sorted((c["similarity_score"] for c in listed["candidates"]), reverse=True)
    assert best[0] >= best[-1] and all(s >= best[-1] for s in best)
    # the stored five are the five best of the 66
    ids = {(c["transaction_1"]["id"], c["transaction_2"]["id"]) for c in listed["candidates"]}
    from handlers.household.core.duplicates import Item, find_candidates
    from handlers.household.records import Options

    with_items = [Item(i + 1, 739000 + (1 + i % 20), -1000 - i) for i in range(12)]
    top = find_candidates(with_items, Options(31, 100, 0, 0))[:5]
    assert ids == {(c.id_1, c.id_2) for c in top}
    # a stricter run under the cap: no warning
    ctx.warnings.clear()
    assert svc.detect_duplicates({}, ctx)["candidates_truncated"] is False
    assert ctx.warnings == []


def test_skip_then_duplicate_then_restore_gives_the_month_back(dup_service, ctx) -> None:
    """The stateful fuzz's sequence: a check decided 'skip', then 'duplicate', then the marked row restored."""
    svc = dup_service
    svc.detect_duplicates({}, ctx)
    check_id = svc.list_duplicate_candidates({}, ctx)["candidates"][0]["check_id"]
    svc.confirm_duplicate({"check_id": check_id, "decision": "skip"}, ctx)
    before = svc.get_monthly_household({"year": 2025, "month": 1}, ctx)
    marked = svc.confirm_duplicate({"check_id": check_id, "decision": "duplicate"}, ctx)["marked_transaction_id"]
    svc.restore_duplicate({"transaction_id": marked}, ctx)
    after = svc.get_monthly_household({"year": 2025, "month": 1}, ctx)
    figures = ("total_expense", "total_income", "transaction_count")
    assert [after[k] for k in figures] == [before[k] for k in figures]
