"""A month exported again: identified by the exporter's ID (or by content), replaced atomically, changes reported.

Before: rows were keyed by (file, row number), so an edited amount kept the old one, a new row on top shifted
every row (the salary imported twice, the new purchase lost), and nothing said so.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from .conftest import is_sqlite, row, sql, startup_report, write_export

JAN = "2025-01-01_2025-01-31"
#: a trigger that makes every INSERT into the transactions fail, per engine
BOOM = {
    "sqlite": [
        "CREATE TRIGGER boom BEFORE INSERT ON household_transactions BEGIN SELECT RAISE(ABORT, 'disk trouble'); END"
    ],
    "postgresql": [
        "CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'disk trouble'; END $$",
        "CREATE TRIGGER boom BEFORE INSERT ON household_transactions FOR EACH ROW EXECUTE FUNCTION boom()",
    ],
}


def january(*, with_ids: bool) -> list[list[str]]:
    ids = ("mf-a", "mf-b", "mf-c") if with_ids else ("", "", "")
    return [
        row("2025/01/25", 300000, "収入", "給与", content="給与", rid=ids[0]),
        row("2025/01/10", -5000, "食費", "食料品", content="スーパー", rid=ids[1]),
        row("2025/01/05", -1200, "食費", "外食", content="カフェ", rid=ids[2]),
    ]


def month(svc, ctx) -> tuple[int, int, int]:
    out = svc.get_monthly_household({"year": 2025, "month": 1}, ctx)
    return out["total_expense"], out["total_income"], out["transaction_count"]


def counts(report: dict) -> tuple[int, int, int, int]:
    return report["total_imported"], report["total_changed"], report["total_removed"], report["total_skipped"]


@pytest.mark.parametrize("with_ids", [True, False])
def test_an_edited_amount_replaces_the_old_one(tmp_path: Path, make_service, ctx, with_ids: bool) -> None:
    data = tmp_path / "exports"
    data.mkdir()
    rows = january(with_ids=with_ids)
    write_export(data, JAN, rows)
    svc = make_service(data)
    assert month(svc, ctx) == (6200, 300000, 2)
    rows[1] = row("2025/01/10", -5500, "食費", "食料品", content="スーパー", rid=rows[1][9])
    write_export(data, JAN, rows)
    report = svc.import_household_data({}, ctx)
    assert counts(report) == (0, 1, 0, 2)
    assert month(svc, ctx) == (6700, 300000, 2)
    trend = svc.get_category_trend({"category": "食費", "start_month": "2025-01", "end_month": "2025-01"}, ctx)
    assert trend["categories"][0]["total"] == 6700  # the monthly aggregate follows too
    assert report["changed_files"] == [
        {"file": f"収入・支出詳細_{JAN}.csv", "added": 0, "changed": 1, "removed": 0, "months": ["2025-01"]}
    ]
    assert "変更1件" in report["message"]
    # and again: nothing left to do
    assert counts(svc.import_household_data({}, ctx)) == (0, 0, 0, 3)


@pytest.mark.parametrize("with_ids", [True, False])
def test_a_new_row_on_top_shifts_nothing(tmp_path: Path, make_service, ctx, with_ids: bool) -> None:
    data = tmp_path / "exports"
    data.mkdir()
    rows = january(with_ids=with_ids)
    write_export(data, JAN, rows)
    svc = make_service(data)
    ids_before = {r[0]: r[1] for r in sql(svc, "SELECT description, id FROM household_transactions")}
    new = row("2025/01/31", -800, "食費", "カフェ", content="新しいカフェ", rid="mf-d" if with_ids else "")
    write_export(data, JAN, [new, *rows])  # MoneyForward lists the newest first
    report = svc.import_household_data({}, ctx)
    assert counts(report) == (1, 0, 0, 3)
    assert month(svc, ctx) == (7000, 300000, 3)  # the salary once, the new purchase in
    stored = {r[0]: (r[1], r[2]) for r in sql(svc, "SELECT description, id, row_number FROM household_transactions")}
    assert {k: v[0] for k, v in stored.items() if k in ids_before} == ids_before  # same ids: decisions survive
    assert stored["新しいカフェ"][1] == 2 and stored["給与"][1] == 3  # row numbers follow the file


def test_a_removed_row_is_removed_with_its_duplicate_checks(tmp_path: Path, make_service, ctx) -> None:
    data = tmp_path / "exports"
    data.mkdir()
    rows = january(with_ids=True)
    twin = row("2025/01/10", -5000, "食費", "食料品", content="スーパー", rid="mf-twin")
    write_export(data, JAN, [*rows, twin])
    svc = make_service(data)
    assert svc.detect_duplicates({}, ctx)["candidates_count"] == 1
    svc.confirm_duplicate({"check_id": 1, "decision": "duplicate"}, ctx)
    assert month(svc, ctx) == (6200, 300000, 2)
    write_export(data, JAN, rows)  # the exporter dropped the double entry itself
    report = svc.import_household_data({}, ctx)
    assert counts(report) == (0, 0, 1, 3)
    assert month(svc, ctx) == (6200, 300000, 2)
    assert svc.get_duplicate_stats({}, ctx)["total_checks"] == 0
    # removing the kept one clears the mark on the other
    write_export(data, JAN, [*rows, twin])
    svc.import_household_data({}, ctx)
    svc.detect_duplicates({}, ctx)
    check = svc.list_duplicate_candidates({}, ctx)["candidates"][0]
    svc.confirm_duplicate({"check_id": check["check_id"], "decision": "duplicate"}, ctx)
    write_export(data, JAN, [rows[0], rows[2], twin])
    assert counts(svc.import_household_data({}, ctx)) == (0, 0, 1, 3)
    assert month(svc, ctx) == (6200, 300000, 2)  # the twin counts again: its original is gone


def test_identical_rows_stay_two_transactions(tmp_path: Path, make_service, ctx) -> None:
    data = tmp_path / "exports"
    data.mkdir()
    same = row("2025/01/10", -300, "食費", "カフェ", content="コーヒー")
    write_export(data, JAN, [same, same])
    svc = make_service(data)
    assert month(svc, ctx)[0] == 600
    write_export(data, JAN, [same, same, same])
    assert counts(svc.import_household_data({}, ctx)) == (1, 0, 0, 2)
    assert month(svc, ctx)[0] == 900


def test_a_second_export_of_the_month_in_the_same_folder_replaces_the_first(tmp_path: Path, make_service, ctx) -> None:
    """A browser saves the re-export as '… (1).csv' beside the first: the newer file is the month."""
    data = tmp_path / "exports"
    data.mkdir()
    rows = january(with_ids=True)
    first = write_export(data, JAN, rows)
    svc = make_service(data)
    newer = [*rows, row("2025/01/31", -800, "食費", "カフェ", content="新しいカフェ", rid="mf-d")]
    second = write_export(data, f"{JAN} (1)", newer)
    past = time.time() - 60
    os.utime(first, (past, past))
    report = svc.import_household_data({}, ctx)
    assert counts(report) == (1, 0, 0, 3)
    assert month(svc, ctx) == (7000, 300000, 3)
    assert report["superseded_files"] == [{"file": first.name, "by": second.name}]
    assert counts(svc.import_household_data({}, ctx)) == (0, 0, 0, 4)


def test_a_failed_import_changes_nothing(tmp_path: Path, make_service, ctx) -> None:
    """The replacement is one transaction: a failure part-way leaves the month as it was."""
    data = tmp_path / "exports"
    data.mkdir()
    rows = january(with_ids=True)
    write_export(data, JAN, rows)
    svc = make_service(data)
    rows[1] = row("2025/01/10", -5500, "食費", "食料品", content="スーパー", rid="mf-b")
    write_export(data, JAN, [row("2025/01/31", -1, "食費", "カフェ", rid="mf-new"), *rows])
    for statement in BOOM[svc.core.store.dialect]:  # make the INSERT fail after the updates ran
        sql(svc, statement)
    with pytest.raises(Exception, match="disk trouble"):
        svc.import_household_data({}, ctx)
    assert month(svc, ctx) == (6200, 300000, 2)
    sql(svc, "DROP TRIGGER boom" + (" ON household_transactions" if not is_sqlite(svc) else ""))
    assert counts(svc.import_household_data({}, ctx)) == (1, 1, 0, 2)


def test_a_reexport_with_a_bad_row_removes_nothing(tmp_path: Path, make_service, ctx) -> None:
    """The unreadable row may be one of the stored ones: keep them, still apply what can be read."""
    data = tmp_path / "exports"
    data.mkdir()
    rows = january(with_ids=False)
    write_export(data, JAN, rows)
    svc = make_service(data)
    bad = row("2025/01/31", -800, "食費", "カフェ")
    bad[3] = "八百円"
    new = row("2025/01/30", -700, "食費", "カフェ", content="パン")
    write_export(data, JAN, [new, bad, rows[0], rows[2]])  # the 5,000 row is gone, or is it the bad one?
    report = svc.import_household_data({}, ctx)
    assert counts(report) == (1, 0, 0, 2) and report["total_errors"] == 1
    assert month(svc, ctx) == (6900, 300000, 3)
    numbers = sorted(r[0] for r in sql(svc, "SELECT row_number FROM household_transactions"))
    assert numbers == [2, 4, 5, 6]  # the kept row is placed after the file's last row


def test_an_edited_row_loses_its_pending_pairs_but_keeps_decided_ones(tmp_path: Path, make_service, ctx) -> None:
    data = tmp_path / "exports"
    data.mkdir()
    rows = january(with_ids=True)
    twins = [row("2025/01/12", -900, "食費", "外食", content="定食", rid=f"mf-t{i}") for i in range(3)]
    write_export(data, JAN, [*rows, *twins])
    svc = make_service(data)
    assert svc.detect_duplicates({}, ctx)["candidates_count"] == 3  # (t0,t1) (t0,t2) (t1,t2)
    first = svc.list_duplicate_candidates({}, ctx)["candidates"][0]
    assert (first["transaction_1"]["description"], first["transaction_2"]["description"]) == ("定食", "定食")
    t2 = max(c["transaction_2"]["id"] for c in svc.list_duplicate_candidates({}, ctx)["candidates"])
    assert t2 not in (first["transaction_1"]["id"], first["transaction_2"]["id"])  # (t0, t1)
    svc.confirm_duplicate({"check_id": first["check_id"], "decision": "not_duplicate"}, ctx)
    edited = [*twins[:2], row("2025/01/12", -950, "食費", "外食", content="定食", rid="mf-t2")]
    write_export(data, JAN, [*rows, *edited])
    assert counts(svc.import_household_data({}, ctx)) == (0, 1, 0, 5)
    stats = svc.get_duplicate_stats({}, ctx)
    # t2's two pending pairs went with its old amount; the decided (t0, t1) stays
    assert (stats["total_checks"], stats["confirmed_not_duplicate"], stats["pending_checks"]) == (1, 1, 0)


def test_only_copies_of_an_export_supersede_it(tmp_path: Path, make_service, ctx) -> None:
    """'… (2).csv' and '… - コピー.csv' are copies; '…_card.csv' is a file of its own and is read too."""
    data = tmp_path / "exports"
    data.mkdir()
    old = write_export(data, JAN, january(with_ids=True)[:1])
    copy = write_export(data, f"{JAN} - コピー", january(with_ids=True)[:1])
    newest = write_export(data, f"{JAN} (2)", january(with_ids=True))
    own = write_export(data, f"{JAN}_card", [row("2025/01/20", -3000, "日用品", "ドラッグストア", rid="card-1")])
    for age, path in ((300, old), (200, copy), (0, newest), (400, own)):
        os.utime(path, (time.time() - age, time.time() - age))
    report = startup_report(make_service(data))
    assert sorted(f["file"] for f in report["superseded_files"]) == sorted([old.name, copy.name])
    assert {f["by"] for f in report["superseded_files"]} == {newest.name}
    assert report["total_transactions"] == 4  # the three of the newest copy and the card file's one


def test_a_file_resaved_without_its_id_column_is_the_same_month(tmp_path: Path, make_service, ctx) -> None:
    data = tmp_path / "exports"
    data.mkdir()
    rows = january(with_ids=True)
    write_export(data, JAN, rows)
    svc = make_service(data)
    before = sorted(r[0] for r in sql(svc, "SELECT id FROM household_transactions"))
    header = ["計算対象", "日付", "内容", "金額（円）", "保有金融機関", "大項目", "中項目", "メモ", "振替"]
    write_export(data, JAN, [r[:9] for r in reversed(rows)], header=header, encoding="utf-8")
    assert counts(svc.import_household_data({}, ctx)) == (0, 0, 0, 3)
    assert sorted(r[0] for r in sql(svc, "SELECT id FROM household_transactions")) == before
    assert month(svc, ctx) == (6200, 300000, 2)
