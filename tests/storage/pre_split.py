"""A database as the release before per-service migrations left it (9785dd7, alembic_version 0007_task_input,
every bundled service's tables created by the runtime's one chain), with a row in every table.

Two ways to get one, both used by tests/storage/test_split_upgrade.py:

* `FIXTURE / "kumitate.sqlite3"`: a data dir's database written by that release itself
  (`git worktree add /tmp/oldmain 9785dd7`, its `kumitate db upgrade`, then `insert` below);
* `build(engine)`: that release's seven migration scripts, copied verbatim under `FIXTURE / "versions"`,
  applied by Alembic to any engine (PostgreSQL included), then `insert`.

`ROWS` is what every table holds; `read` gives it back from a database, for comparison.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "upgrade" / "pre_split"
OLD_HEAD = "0007_task_input"
DOC_COLUMNS = (
    "brand_name",
    "product_name",
    "brewery",
    "region",
    "features",
    "category_words",
    "brand_r",
    "product_r",
    "brewery_r",
    "region_r",
    "features_r",
)

ROWS: dict[str, list[dict[str, Any]]] = {
    "idempotency": [
        {
            "tool": "household.import_household_data",
            "principal": "alice",
            "key": "k-1",
            "fingerprint": "f" * 64,
            "status": 200,
            "body": '{"imported": 3}',
            "created_at": 1.5,
            "expires_at": 4e9,
        }
    ],
    "tasks": [
        {
            "id": "task-1",
            "tool": "analytics.export",
            "principal": "alice",
            "status": "input_required",
            "progress": '{"done": 1, "total": 2}',
            "questions": '{"q": "which?"}',
            "answers": None,
            "result": None,
            "http_status": None,
            "run_id": "run-1",
            "trace_id": "trace-1",
            "created_at": 1.0,
            "updated_at": 2.0,
            "lease_until": 3.0,
            "expires_at": 4e9,
        }
    ],
    "attendance_rules": [
        {"thread_id": "t-1", "version": 1, "rule_json": '{"type":"ALL"}', "saved_at": "2026-12-01T00:00:00.000Z"},
        {"thread_id": "t-1", "version": 2, "rule_json": '{"type":"ANY"}', "saved_at": "2026-12-02T00:00:00.000Z"},
    ],
    "analytics_exports": [
        {
            "handle": "h" * 32,
            "owner": "alice",
            "state": "ready",
            "format": "csv",
            "mime_type": "text/csv",
            "rows": 10,
            "size_bytes": 123,
            "columns": '["a", "b"]',
            "created_at": 1.0,
            "expires_at": 4e9,
        }
    ],
    "analytics_views": [
        {
            "view": "v_runs",
            "file": "v_runs.parquet",
            "rows": 5,
            "columns": '["a"]',
            "created_at": 1.0,
            "expires_at": 4e9,
        }
    ],
    "household_transactions": [
        {
            "id": 1,
            "source_file": "a.csv",
            "row_number": 1,
            "date": "2026-11-01",
            "amount": -1200,
            "description": "昼食",
            "category_major": "食費",
            "category_minor": "外食",
            "account": "財布",
            "memo": None,
            "is_target": 1,
            "is_transfer": 0,
            "external_id": "x1",
            "is_duplicate": 0,
            "duplicate_of": None,
            "duplicate_checked": 1,
            "duplicate_checked_at": "2026-11-02 00:00:00",
            "created_at": "2026-11-02 00:00:00",
            "updated_at": "2026-11-02 00:00:00",
        },
        {
            "id": 2,
            "source_file": "b.csv",
            "row_number": 1,
            "date": "2026-11-01",
            "amount": -1200,
            "description": "昼食",
            "category_major": "食費",
            "category_minor": "外食",
            "account": "財布",
            "memo": "dup",
            "is_target": 1,
            "is_transfer": 0,
            "external_id": None,
            "is_duplicate": 1,
            "duplicate_of": 1,
            "duplicate_checked": 1,
            "duplicate_checked_at": "2026-11-02 00:00:00",
            "created_at": "2026-11-02 00:00:00",
            "updated_at": "2026-11-02 00:00:00",
        },
    ],
    "household_duplicate_checks": [
        {
            "id": 1,
            "transaction_id_1": 1,
            "transaction_id_2": 2,
            "detection_date_tolerance": 0,
            "detection_amount_tolerance_abs": 0.0,
            "detection_amount_tolerance_pct": 0.0,
            "similarity_score": 0.95,
            "detected_at": "2026-11-02 00:00:00",
            "user_decision": "duplicate",
            "decided_at": "2026-11-03 00:00:00",
        }
    ],
    "household_monthly_spending": [
        {"month": "2026-11", "category_major": "食費", "category_minor": "外食", "amount": 1200}
    ],
    "household_active_months": [{"month": "2026-11"}],
    "yana_labels": [
        {
            "pk": 1,
            "id": "label_9001",
            "brand_name": "久保田",
            "product_name": "千寿",
            "brewery": "朝日酒造",
            "region": "新潟県",
            "category": "sake",
            "label_features": '["white"]',
            "file_path": "uploads/a.jpg",
            "hash_sha1": "a" * 40,
            "phash": "0123456789abcdef",
            "source": "ingest",
            "doc_len": 12,
        }
    ],
    "yana_region_terms": [{"label_pk": 1, "term": "新潟"}],
    "yana_meta": [{"key": "index_version", "value": "2"}],
    "yana_label_docs": [
        {"rowid": 1, **{c: f"{c}-text" for c in DOC_COLUMNS}},
    ],
}
"""One or two rows in every table of the five services and the runtime (foreign keys satisfied)."""


def insert(engine: Engine) -> None:
    """Store `ROWS` (the tables exist: `build`, or the old release's `kumitate db upgrade`)."""
    with engine.begin() as conn:
        for table, rows in ROWS.items():
            for row in rows:
                names = ", ".join(row)
                values = ", ".join(f":{name}" for name in row)
                conn.execute(text(f"INSERT INTO {table} ({names}) VALUES ({values})"), row)


def read(engine: Engine) -> dict[str, list[dict[str, Any]]]:
    """Every table of `ROWS`, as it is stored now (in key order)."""
    found: dict[str, list[dict[str, Any]]] = {}
    with engine.connect() as conn:
        for table, rows in ROWS.items():
            names = list(rows[0])
            order = ", ".join(names[:2])
            result = conn.execute(text(f"SELECT {', '.join(names)} FROM {table} ORDER BY {order}"))
            found[table] = [dict(zip(names, row, strict=True)) for row in result]
    return found


def build(engine: Engine) -> None:
    """The schema the release before the split made: its seven scripts (FIXTURE/versions), to 0007_task_input."""
    from alembic import command
    from alembic.config import Config

    with engine.connect() as conn:
        cfg = Config()
        cfg.set_main_option("script_location", str(FIXTURE))
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, OLD_HEAD)
        conn.commit()


if __name__ == "__main__":  # how FIXTURE/kumitate.sqlite3 was filled, after the old release created it
    import sys

    from sqlalchemy import create_engine

    insert(create_engine(f"sqlite:///{sys.argv[1]}"))
