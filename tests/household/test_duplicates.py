"""Duplicate detection: hand-computed scores, window search == pairwise, atomic confirm/restore."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from handlers.household.duplicates import Item, Options, find_candidates, find_candidates_pairwise, similarity
from kumitate.errors import ToolError

from .conftest import row, write_export


def test_similarity_scores() -> None:
    same = Item(1, 100, -1000)
    assert similarity(same, Item(2, 100, -1000), Options()) == 1.0
    # 1 of 2 tolerated days, 10 yen of 1000: 0.4 × 0.5 + 0.6 × 0.99
    assert similarity(same, Item(2, 101, -990), Options(date_tolerance_days=2)) == 0.794
    # at the edge of the date tolerance the date part is 0
    assert similarity(same, Item(2, 101, -1000), Options(date_tolerance_days=1)) == 0.6
    # 0.4 + 0.6 × (1 − 40/1040) = 0.97692… → 0.9769
    assert similarity(same, Item(2, 100, -1040), Options(amount_tolerance_pct=5)) == 0.9769
    # 0.4 + 0.6 × (1 − 30/1030) = 0.98252… → 0.9825
    assert similarity(same, Item(2, 100, -1030), Options(amount_tolerance_abs=50)) == 0.9825


def test_tolerances() -> None:
    items = [Item(1, 100, -1000), Item(2, 100, -1030), Item(3, 101, -1000), Item(4, 100, -1060), Item(5, 100, 1000)]
    pairs = lambda opts: [(c.id_1, c.id_2, c.score) for c in find_candidates(items, opts)]  # noqa: E731
    assert pairs(Options()) == []  # exact amounts on the same day only
    assert pairs(Options(date_tolerance_days=1, min_similarity_score=0.5)) == [(1, 3, 0.6)]
    assert pairs(Options(amount_tolerance_abs=50)) == [(2, 4, 0.9830), (1, 2, 0.9825)]
    assert pairs(Options(amount_tolerance_pct=5)) == [(2, 4, 0.983), (1, 2, 0.9825)]
    assert pairs(Options(amount_tolerance_pct=6.5)) == [(2, 4, 0.983), (1, 2, 0.9825), (1, 4, 0.966)]
    # both tolerances set: both must hold (60 yen > 50)
    assert pairs(Options(amount_tolerance_abs=50, amount_tolerance_pct=6.5)) == [(2, 4, 0.983), (1, 2, 0.9825)]


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
    items = [Item(i, rng.randint(0, 60), rng.choice([-1, -1, -1, 1]) * rng.randint(1, 60) * 50) for i in range(1, 700)]
    assert find_candidates(items, opts) == find_candidates_pairwise(items, opts)


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
        "checked_transactions": 4,
        "message": "1件の重複候補が見つかりました",
    }
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
    with svc.core.db.connect() as con:
        con.execute(
            "INSERT INTO duplicate_checks (transaction_id_1, transaction_id_2, detection_date_tolerance, "
            "detection_amount_tolerance_abs, detection_amount_tolerance_pct, similarity_score) "
            "VALUES (3, 2, 5, 0, 0, 0.5)"
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
    ]:
        with pytest.raises(ToolError) as err:
            call(args, ctx)
        assert err.value.code == code
