"""A household.db of an earlier release (its own SQLite file) is copied into the storage layer once."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from .conftest import row, sql, startup_report, write_export

#: the schema the earlier release created in var/household/household.db (handlers/household/db.py then)
OLD_SCHEMA = """
CREATE TABLE transactions (
    id INTEGER PRIMARY KEY AUTOINCREMENT, source_file TEXT NOT NULL, row_number INTEGER NOT NULL,
    date DATE NOT NULL, amount DECIMAL(12, 2) NOT NULL, description TEXT, category_major TEXT,
    category_minor TEXT, account TEXT, memo TEXT, is_target INTEGER DEFAULT 1, is_transfer INTEGER DEFAULT 0,
    external_id TEXT, is_duplicate INTEGER DEFAULT 0, duplicate_of INTEGER, duplicate_checked INTEGER DEFAULT 0,
    duplicate_checked_at TIMESTAMP, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, UNIQUE(source_file, row_number),
    FOREIGN KEY(duplicate_of) REFERENCES transactions(id)
);
CREATE TABLE duplicate_checks (
    id INTEGER PRIMARY KEY AUTOINCREMENT, transaction_id_1 INTEGER NOT NULL, transaction_id_2 INTEGER NOT NULL,
    detection_date_tolerance INTEGER, detection_amount_tolerance_abs DECIMAL(12, 2),
    detection_amount_tolerance_pct DECIMAL(5, 2), similarity_score DECIMAL(5, 4),
    detected_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, user_decision TEXT, decided_at TIMESTAMP,
    UNIQUE(transaction_id_1, transaction_id_2)
);
CREATE TABLE monthly_spending (month TEXT, category_major TEXT, category_minor TEXT, amount INTEGER);
CREATE TABLE active_months (month TEXT PRIMARY KEY);
"""
JAN = "2025-01-01_2025-01-31"


def old_file(tmp_path: Path, source: str) -> Path:
    """Three rows of January; row 3 (id 7) marked as a duplicate of row 2 (id 5, a later id would do too)."""
    path = tmp_path / "var" / "household" / "household.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path, isolation_level=None)) as con:
        con.executescript(OLD_SCHEMA)
        tx = (
            "INSERT INTO transactions (id, source_file, row_number, date, amount, description, category_major, "
            "category_minor, account, memo, is_target, is_transfer, external_id, is_duplicate, duplicate_of) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, '現金', '', 1, 0, '', ?, ?)"
        )
        con.execute(tx, (3, source, 2, "2025-01-25", 300000, "給与", "収入", "給与", 0, None))
        con.execute(tx, (7, source, 4, "2025-01-10", -5000, "スーパー", "食費", "食料品", 1, 5))
        con.execute(tx, (5, source, 3, "2025-01-10", -5000, "スーパー", "食費", "食料品", 0, None))
        con.execute(
            "INSERT INTO duplicate_checks (id, transaction_id_1, transaction_id_2, detection_date_tolerance, "
            "detection_amount_tolerance_abs, detection_amount_tolerance_pct, similarity_score, user_decision, "
            "decided_at) VALUES (9, 5, 7, 0, 0, 0, 1.0, 'duplicate', '2025-02-01 10:00:00')"
        )
    return path


def exports(tmp_path: Path) -> Path:
    data = tmp_path / "exports"
    data.mkdir()
    rows = [
        row("2025/01/25", 300000, "収入", "給与", content="給与"),
        row("2025/01/10", -5000, "食費", "食料品", content="スーパー"),
        row("2025/01/10", -5000, "食費", "食料品", content="スーパー"),
    ]
    return write_export(data, JAN, rows).parent


def test_an_old_household_file_is_copied_once_with_its_ids_and_decisions(tmp_path: Path, make_service, ctx) -> None:
    data = exports(tmp_path)
    path = old_file(tmp_path, str((data / f"収入・支出詳細_{JAN}.csv").resolve()))
    svc = make_service(data)
    assert not path.exists() and len(list(path.parent.glob("household.db.imported-*"))) == 1  # kept as a backup
    assert startup_report(svc)["total_imported"] == 0  # the same rows: nothing imported twice
    assert startup_report(svc)["total_transactions"] == 3
    assert sorted(r[0] for r in sql(svc, "SELECT id FROM household_transactions")) == [3, 5, 7]
    detail = svc.get_duplicate_candidate_detail({"check_id": 9}, ctx)
    assert (detail["user_decision"], detail["decided_at"]) == ("duplicate", "2025-02-01 10:00:00")
    assert detail["transaction_2"]["is_duplicate"] is True and detail["transaction_2"]["duplicate_of"] == 5
    month = svc.get_monthly_household({"year": 2025, "month": 1}, ctx)
    assert (month["total_expense"], month["total_income"]) == (5000, 300000)  # aggregates rebuilt, mark kept
    # new rows get new ids (the sequences moved past the copied ones), and a restart copies nothing again
    write_export(data, "2025-02-01_2025-02-28", [row("2025/02/01", -100, "食費", "外食")])
    assert svc.import_household_data({}, ctx)["total_imported"] == 1
    assert max(r[0] for r in sql(svc, "SELECT id FROM household_transactions")) > 7
    assert startup_report(make_service(data))["total_transactions"] == 4


def test_an_old_file_is_left_alone_when_the_store_already_holds_rows(tmp_path: Path, make_service, ctx) -> None:
    data = exports(tmp_path)
    make_service(data)  # the store is filled from the exports first
    path = old_file(tmp_path, "elsewhere.csv")
    svc = make_service(data)
    assert path.is_file()  # not copied, not renamed: a warning is logged instead
    assert startup_report(svc)["total_transactions"] == 3
    assert sql(svc, "SELECT COUNT(*) FROM household_transactions WHERE source_file = 'elsewhere.csv'")[0][0] == 0
