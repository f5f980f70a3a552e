"""Import: idempotent, and a bad file or row never stops the rest."""

from __future__ import annotations

from pathlib import Path

from .conftest import HEADER, row, write_export


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
    assert (tmp_path / "var" / "household" / "household.db").is_file()
    assert svc.core.startup_report["total_imported"] == 3
    again = svc.import_household_data({}, ctx)
    assert (again["total_imported"], again["total_skipped"], again["total_errors"]) == (0, 3, 0)
    assert again["total_transactions"] == 3
    # a restart scans again and still imports nothing new
    assert make_service(data).core.startup_report["total_imported"] == 0


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
    assert svc.core.startup_report["total_imported"] == 6


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
    from handlers.household import create
    from kumitate.settings import Settings

    svc = create(Settings(data_dir=tmp_path, sample_dir=Path("data"), public_base_url="http://127.0.0.1:8000"), env={})
    report = svc.core.startup_report
    assert (report["files_processed"], report["total_errors"]) == (48, 0)
    assert report["total_imported"] == 3093
