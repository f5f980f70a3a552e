"""Import: idempotent, and a bad file or row never stops the rest."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy import insert

from handlers.household.core.csvfile import read_tuples
from handlers.household.store import refresh_aggregates
from handlers.household.store.imports import row_values
from handlers.household.store.tables import transactions
from kumitate.service import ServiceSetup
from kumitate.settings import Settings

from .conftest import HEADER, open_service, row, sql, startup_report, write_export


def good_rows() -> list[list[str]]:
    return [
        row("2025/01/05", -1200, "食費", "外食"),
        row("2025/01/06", -800, "食費", "カフェ"),
        row("2025/01/25", 300000, "収入", "給与"),
    ]


def test_first_start_creates_db_and_reimport_is_idempotent(tmp_path: Path, make_service, ctx) -> None:
    data = tmp_path / "exports"
    data.mkdir()
    write_export(data, "2025-01-01_2025-01-31", good_rows())
    svc = make_service(data)
    assert startup_report(svc)["total_imported"] == 3
    again = svc.import_household_data({}, ctx)
    assert (again["total_imported"], again["total_skipped"], again["total_errors"]) == (0, 3, 0)
    assert again["total_transactions"] == 3
    # a restart scans again and still imports nothing new
    assert startup_report(make_service(data))["total_imported"] == 0


def test_a_restart_reads_the_files_again_only_when_they_or_rows_changed(tmp_path: Path, make_service) -> None:
    """Issue 32: an unchanged restart skips the import (reading 48 files cost every start ~0.5 s); a changed
    file, or stored rows changed behind the import's back, still bring the stored rows back to the files."""
    data = tmp_path / "exports"
    data.mkdir()
    write_export(data, "2025-01-01_2025-01-31", good_rows())
    assert startup_report(make_service(data))["total_imported"] == 3
    unchanged = startup_report(make_service(data))
    assert (unchanged["files_processed"], unchanged["total_transactions"]) == (0, 3), unchanged
    svc = make_service(data)
    sql(svc, "DELETE FROM household_transactions WHERE amount = -800")
    report = startup_report(make_service(data))
    assert (report["files_processed"], report["total_imported"], report["total_transactions"]) == (1, 1, 3)
    write_export(data, "2025-01-01_2025-01-31", [*good_rows(), row("2025/01/26", -500, "食費", "外食")])
    report = startup_report(make_service(data))
    assert (report["files_processed"], report["total_imported"], report["total_transactions"]) == (1, 1, 4)
    assert startup_report(make_service(data))["files_processed"] == 0


def test_imported_rows_carry_every_default(tmp_path: Path, make_service) -> None:
    """The bulk insert goes through the driver, not SQLAlchemy: the table's defaults are still written."""
    data = tmp_path / "exports"
    data.mkdir()
    write_export(data, "2025-01-01_2025-01-31", good_rows())
    svc = make_service(data)
    stored = sql(
        svc,
        "SELECT is_duplicate, duplicate_checked, duplicate_of, created_at = updated_at, length(created_at), source_file"
        " FROM household_transactions",
    )
    assert [tuple(r[:5]) for r in stored] == [(0, 0, None, True, 19)] * 3
    assert {r[5] for r in stored} == {str((data / "収入・支出詳細_2025-01-01_2025-01-31.csv").resolve())}


def test_bad_files_and_rows_are_reported_not_fatal(tmp_path: Path, make_service, ctx) -> None:
    data = tmp_path / "exports"
    data.mkdir()
    write_export(data, "2025-01-01_2025-01-31", good_rows())
    # truncated: the last row stops in the middle of a line
    truncated = write_export(
        data,
        "2025-02-01_2025-02-28",
        [row("2025/02/03", -500, "食費", "カフェ"), row("2025/02/04", -700, "食費", "カフェ")],
    )
    raw = truncated.read_bytes()
    truncated.write_bytes(raw[: raw.rindex("食費".encode("cp932"))])
    # bad encoding: bytes that are neither cp932 nor UTF-8 in a row
    bad = write_export(
        data,
        "2025-03-01_2025-03-31",
        [row("2025/03/03", -900, "食費", "カフェ"), row("2025/03/04", -1000, "食費", "XX")],
    )
    bad.write_bytes(bad.read_bytes().replace(b'"XX"', b'"\x81\xff"'))
    # a whole file that is not cp932 text (header unreadable)
    (data / "収入・支出詳細_2025-04-01_2025-04-30.csv").write_bytes(b"\xff\xfe\x00garbage\x80\x81\xfc\xfc\n1,2\n")
    # missing column: no 金額（円）
    header = [h for h in HEADER if h != "金額（円）"]
    write_export(
        data, "2025-05-01_2025-05-31", [["1", "2025/05/01", "店", "現金", "食費", "外食", "", "0", ""]], header=header
    )
    # bad values in single rows
    write_export(
        data,
        "2025-06-01_2025-06-30",
        [
            row("2025/06/01", -100, "食費", "外食"),
            ["1", "2025/13/40", "店", "-100", "現金", "食費", "外食", "", "0", ""],
            ["1", "2025/06/02", "店", "abc", "現金", "食費", "外食", "", "0", ""],
        ],
    )
    svc = make_service(data)
    report = svc.import_household_data({}, ctx)
    errors = {(e["file"][-15:], e["row"]): e["error"] for e in report["errors"]}
    assert report["files_processed"] == 6
    assert report["files_failed"] == 2
    assert errors[("_2025-02-28.csv", 3)].startswith("列数が不足しています")
    assert errors[("_2025-03-31.csv", 3)] == "文字コードが不正です（cp932 として読めません）"
    assert errors[("_2025-04-30.csv", None)] == "文字コードが不正です（cp932 として読めません）"
    assert errors[("_2025-05-31.csv", None)] == "必須列がありません: 金額（円）"
    assert errors[("_2025-06-30.csv", 3)].startswith("日付の形式が不正です")
    assert errors[("_2025-06-30.csv", 4)].startswith("金額の形式が不正です")
    assert report["total_errors"] == 6
    # everything readable still arrived: 3 + 1 (Feb) + 1 (Mar) + 1 (Jun), all already imported at start
    assert report["total_transactions"] == 6
    assert startup_report(svc)["total_imported"] == 6


def test_non_finite_and_huge_amounts_are_row_errors(tmp_path: Path, make_service, ctx) -> None:
    data = tmp_path / "exports"
    data.mkdir()
    bad_amounts = ["inf", "-Infinity", "nan", "1.5", "99999999999999999999999", "-1e30"]
    write_export(
        data,
        "2025-07-01_2025-07-31",
        [row("2025/07/01", -100, "食費", "外食")]
        + [["1", "2025/07/02", "店", amount, "現金", "食費", "外食", "", "0", ""] for amount in bad_amounts]
        + [row("2025/07/03", -200, "食費", "外食")],
    )
    report = make_service(data).import_household_data({}, ctx)
    assert report["total_transactions"] == 2
    assert sorted(e["row"] for e in report["errors"]) == list(range(3, 3 + len(bad_amounts)))
    assert all(e["error"].startswith("金額") for e in report["errors"])


def test_alternative_headers_and_utf8_resave(tmp_path: Path, make_service, ctx) -> None:
    data = tmp_path / "exports"
    data.mkdir()
    header = ["計算対象", "日付", "内容", "金額(円)", "保有金融機関", "大分類", "中分類", "メモ", "振替", "ID"]
    write_export(
        data, "2025-01-01_2025-01-31", [row("2025-01-05", -1234, "食費", "外食")], header=header, encoding="utf-8-sig"
    )
    svc = make_service(data)
    out = svc.get_monthly_household({"year": 2025, "month": 1}, ctx)
    assert out["total_expense"] == 1234
    assert out["transactions"][0]["category_minor"] == "外食"


def test_bundled_sample_loads(tmp_path: Path) -> None:
    setup = ServiceSetup.open("household", Settings.from_env({"KUMITATE_DATA_DIR": str(tmp_path)}))
    try:
        report = startup_report(open_service(setup))
    finally:
        setup.close()
    assert (report["files_processed"], report["total_errors"]) == (48, 0)
    assert report["total_imported"] == 3093


JUNE = "2025-06-01_2025-06-30"


def june_rows(amounts: list[int]) -> list[list[str]]:
    return [row(f"2025/06/{i + 1:02d}", a, "食費", "食料品") for i, a in enumerate(amounts)]


def samples_dir(tmp_path: Path) -> Path:
    path = tmp_path / "samples" / "household"  # the make_service fixture's sample directory
    path.mkdir(parents=True, exist_ok=True)
    return path


def june_total(svc, ctx) -> int:
    return int(svc.get_monthly_household({"year": 2025, "month": 6}, ctx)["total_expense"])


def test_real_export_does_not_collide_with_a_sample_of_the_same_name(tmp_path: Path, make_service, ctx) -> None:
    write_export(samples_dir(tmp_path), JUNE, june_rows([-100, -200, -300]))
    data = tmp_path / "exports"
    data.mkdir()
    write_export(data, JUNE, june_rows([-1000, -2000, -3000, -4000]))
    # without HOUSEHOLD_DATA_DIR: the samples
    assert june_total(make_service(), ctx) == 600
    # with it: only the user's exports, and the sample rows stored by the start above are removed
    svc = make_service(data)
    assert june_total(svc, ctx) == 10000
    report = startup_report(svc)
    assert (report["total_imported"], report["total_transactions"]) == (4, 4)
    assert "サンプルデータ3件を削除しました" in report["message"]
    again = svc.import_household_data({}, ctx)
    assert (again["total_imported"], again["total_skipped"], again["total_transactions"]) == (0, 4, 4)
    # explicitly both: two sources, every row of each (no row of one hides the row of the same number of the other)
    both = make_service(data, HOUSEHOLD_INCLUDE_SAMPLES="1")
    assert june_total(both, ctx) == 10600
    assert both.import_household_data({}, ctx)["total_skipped"] == 7
    stored = {r[0] for r in sql(both, "SELECT DISTINCT source_file FROM household_transactions")}
    assert stored == {f"sample:収入・支出詳細_{JUNE}.csv", str((data / f"収入・支出詳細_{JUNE}.csv").resolve())}


def test_same_file_name_in_two_data_directories(tmp_path: Path, make_service, ctx) -> None:
    first, second = tmp_path / "bank", tmp_path / "card"
    first.mkdir()
    second.mkdir()
    write_export(first, JUNE, june_rows([-1000, -2000]))
    write_export(second, JUNE, june_rows([-30, -40, -50]))
    svc = make_service(Path(f"{first}{os.pathsep}{second}"))
    assert june_total(svc, ctx) == 3120
    assert svc.import_household_data({}, ctx)["total_imported"] == 0


def test_a_moved_export_directory_is_not_imported_twice(tmp_path: Path, make_service, ctx) -> None:
    old = tmp_path / "exports"
    old.mkdir()
    write_export(old, JUNE, june_rows([-1000, -2000]))
    svc = make_service(old)
    svc.detect_duplicates({"amount_tolerance_abs": 5000, "date_tolerance_days": 1, "min_similarity_score": 0}, ctx)
    svc.confirm_duplicate({"check_id": 1, "decision": "not_duplicate"}, ctx)
    new = tmp_path / "moved"
    old.rename(new)
    moved = make_service(new)
    report = startup_report(moved)
    assert (report["total_imported"], report["total_skipped"], report["total_transactions"]) == (0, 2, 2)
    assert june_total(moved, ctx) == 3000
    detail = moved.get_duplicate_candidate_detail({"check_id": 1}, ctx)  # same ids, decision kept
    assert detail["user_decision"] == "not_duplicate"
    assert detail["transaction_1"]["source_file"] == str((new / f"収入・支出詳細_{JUNE}.csv").resolve())


def legacy_database(make_service, files: list[Path]):
    """A store as the old importer left it: rows keyed by bare file name; the first file wins a row number."""
    svc = make_service()  # creates the schema
    with svc.core.store.write() as con:
        con.execute(transactions.delete())
        taken: set[int] = set()
        for path in files:
            rows, _ = read_tuples(path)
            fresh = [r for r in rows if r[0] not in taken]
            taken |= {r[0] for r in rows}
            if fresh:
                con.execute(insert(transactions), [row_values(path.name, r) for r in fresh])
        refresh_aggregates(con)
    return svc


@pytest.mark.parametrize("include_samples", [False, True], ids=["samples_off", "samples_on"])
@pytest.mark.parametrize("sample_first", [True, False], ids=["sample_first", "real_first"])
def test_legacy_rows_keyed_by_file_name_are_migrated(
    tmp_path: Path, make_service, ctx, include_samples: bool, sample_first: bool
) -> None:
    sample = write_export(samples_dir(tmp_path), JUNE, june_rows([-100, -200, -300]))
    data = tmp_path / "exports"
    data.mkdir()
    real = write_export(data, JUNE, june_rows([-1000, -2000, -3000, -4000, -5000]))
    old = legacy_database(make_service, [sample, real] if sample_first else [real, sample])
    # the old collision: whichever came first owns rows 2-4; the real file alone has rows 5 and 6
    assert tuple(sql(old, "SELECT -SUM(amount), COUNT(*) FROM household_transactions")[0]) == (
        (9600 if sample_first else 15000),
        5,
    )
    real_ids = [r[0] for r in sql(old, "SELECT id FROM household_transactions WHERE amount <= -1000 ORDER BY id")]
    env = {"HOUSEHOLD_INCLUDE_SAMPLES": "1"} if include_samples else {}
    svc = make_service(data, **env)
    report = startup_report(svc)
    assert june_total(svc, ctx) == (15600 if include_samples else 15000)
    assert report["total_transactions"] == (8 if include_samples else 5)
    # rows that came from the real file are adopted (not imported again); only the missing ones are imported
    assert report["total_imported"] == (3 if sample_first or include_samples else 0)
    query = "SELECT id FROM household_transactions WHERE source_file = :source ORDER BY id"
    adopted = [r[0] for r in sql(svc, query, source=str(real.resolve()))]
    assert adopted[: len(real_ids)] == real_ids  # the same ids (and so the same duplicate decisions)
    assert sql(svc, query, source=real.name) == []
    assert svc.import_household_data({}, ctx)["total_imported"] == 0


def test_a_field_over_the_csv_limit_is_a_row_error(tmp_path: Path, make_service, ctx) -> None:
    import csv

    data = tmp_path / "exports"
    data.mkdir()
    huge_memo = "メモ" * 70_000  # 140,000 characters: over csv.field_size_limit() (131,072)
    big = row("2025/06/02", -999, "食費", "外食")
    big[7] = huge_memo
    write_export(data, JUNE, [row("2025/06/01", -100, "食費", "外食"), big, row("2025/06/03", -200, "食費", "外食")])
    limit = csv.field_size_limit()
    svc = make_service(data)
    report = startup_report(svc)
    assert csv.field_size_limit() == limit  # the process-wide limit is not touched
    assert (report["files_failed"], report["total_imported"], report["total_errors"]) == (0, 2, 1)
    error = report["errors"][0]
    assert error["row"] == 3 and error["error"].startswith("行を読み込めません（欄が長すぎるか、CSVの形式が不正です）")
    assert june_total(svc, ctx) == 300
