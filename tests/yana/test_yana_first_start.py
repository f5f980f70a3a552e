"""First start on one database: concurrent processes (issue 20, on both engines), documents from an
older version, and the ingested labels of a yana.db from before the storage layer."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, ctx, make_settings
from sqlalchemy import create_engine, text

from handlers.yana.store.kb import INDEX_VERSION
from tests.servers import fresh_pg_database

OpenYana = Callable[..., Any]

CHILD = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    go = Path(sys.argv[2])
    go.with_name(f"ready-{os.getpid()}").touch()
    while not go.exists():
        time.sleep(0.005)
    from handlers.yana import create
    from kumitate.service import ServiceSetup
    from kumitate.settings import Settings
    env = dict(a.split("=", 1) for a in sys.argv[4:])
    setup = ServiceSetup.open("yana", Settings.from_env(env, data_dir=sys.argv[1], sample_dir=sys.argv[3]))
    print(create(setup).kb.count())
    setup.close()
    """
)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """No variable (the SQLite file under the data dir) or KUMITATE_DATABASE_URL of a fresh database."""
    if request.param == "sqlite":
        return {}
    return {"KUMITATE_DATABASE_URL": fresh_pg_database(request.getfixturevalue("postgres_url"), tmp_path.name)}


def _engine_url(tmp_path: Path, env: dict[str, str]) -> str:
    url = env.get("KUMITATE_DATABASE_URL")
    return (
        url.replace("postgresql://", "postgresql+psycopg://")
        if url
        else f"sqlite:///{tmp_path / 'data' / 'kumitate.sqlite3'}"
    )


def test_processes_starting_at_once_load_the_labels_once(tmp_path: Path, database_env: dict[str, str]) -> None:
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = [str(tmp_path / "data"), str(go), str(REPO / "data"), *(f"{k}={v}" for k, v in database_env.items())]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, *args], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(3)
    ]
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("ready-*"))) < len(procs):  # every child is at the gate
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "a child did not reach the gate"
        time.sleep(0.01)
    go.touch()
    outputs = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err.decode()[-2000:]
        assert out.decode().strip() == "234"
    engine = create_engine(_engine_url(tmp_path, database_env))
    with engine.connect() as conn:
        counts = conn.execute(text("SELECT count(*), count(DISTINCT hash_sha1) FROM yana_labels")).one()
        assert tuple(counts) == (234, 234)
        assert conn.execute(text("SELECT count(*) FROM yana_label_docs")).scalar_one() == 234
        assert conn.execute(text("SELECT count(*) FROM yana_region_terms")).scalar_one() >= 234
    engine.dispose()


def test_documents_from_an_older_version_are_rebuilt_and_labels_kept(tmp_path: Path, open_yana: OpenYana) -> None:
    first = open_yana(make_settings(tmp_path))
    with first.kb.transaction() as conn:  # what an older version left: other documents, its version
        conn.exec_driver_sql("UPDATE yana_label_docs SET brand_r = '', brewery_r = ''")
        conn.exec_driver_sql("UPDATE yana_meta SET value = '2' WHERE key = 'index_version'")
    first.close()
    again = open_yana(make_settings(tmp_path))
    assert again.kb.count() == 234  # the bundled labels are upserted, not duplicated
    with again.kb.read() as conn:
        assert again.kb.store.meta(conn, "index_version") == str(INDEX_VERSION)
    hits = again.search({"query_text": "はっかいさん"}, ctx())["hits"]
    assert [h["id"] for h in hits] == ["label_0009", "label_0010"]  # readings are indexed again


def test_ingested_labels_of_a_legacy_yana_db_are_imported_once(tmp_path: Path, open_yana: OpenYana) -> None:
    legacy = tmp_path / "yana" / "yana.db"
    legacy.parent.mkdir(parents=True)
    with sqlite3.connect(legacy) as conn:  # the tables of the SQLite-only version (bundled rows are reloaded)
        conn.execute(
            "CREATE TABLE labels (rowid INTEGER PRIMARY KEY, id TEXT, brand_name TEXT, product_name TEXT,"
            " brewery TEXT, region TEXT, category TEXT, label_features TEXT, file_path TEXT, hash_sha1 TEXT,"
            " phash TEXT, source TEXT)"
        )
        rows = [
            (
                "label_0001",
                "獺祭",
                "",
                "旭酒造",
                "山口県岩国市",
                "sake",
                "[]",
                "data/yana/images/label_0001.png",
                "x" * 40,
                "0" * 16,
                "bundled",
            ),
            (
                "label_u_0123456789abcdef",
                "試験銘柄",
                "特別純米",
                "試験酒造",
                "新潟県長岡市",
                "sake",
                json.dumps(["辛口"], ensure_ascii=False),
                "uploads/" + "a" * 40 + ".png",
                "a" * 40,
                "f" * 16,
                "ingest",
            ),
        ]
        conn.executemany("INSERT INTO labels VALUES (NULL,?,?,?,?,?,?,?,?,?,?,?)", rows)
    yana = open_yana(make_settings(tmp_path))
    assert yana.kb.count() == 235
    assert not legacy.exists() and len(list(legacy.parent.glob("yana.db.imported-*"))) == 1
    hits = yana.search({"query_text": "試験銘柄"}, ctx())["hits"]
    assert [(h["id"], h["brewery"], h["label_features"]) for h in hits] == [
        ("label_u_0123456789abcdef", "試験酒造", ["辛口"])
    ]
    yana.close()
    assert open_yana(make_settings(tmp_path)).kb.count() == 235  # imported once
