"""First start on one data directory: concurrent processes (issue 20) and an index from an older version."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from conftest import REPO, ctx, make_settings

from handlers.yana import create
from handlers.yana.kb import INDEX_VERSION

CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    go = Path(sys.argv[2])
    while not go.exists():
        time.sleep(0.005)
    from handlers.yana import create
    from kumitate.settings import Settings
    settings = Settings(data_dir=Path(sys.argv[1]), sample_dir=Path(sys.argv[3]), public_base_url="http://127.0.0.1")
    print(create(settings, env={}).kb.count())
    """
)


def test_two_processes_starting_at_once_load_the_labels_once(tmp_path: Path) -> None:
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = [str(tmp_path / "data"), str(go), str(REPO / "data")]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, *args], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(3)
    ]
    time.sleep(1.5)  # let every child import everything and wait at the gate
    go.touch()
    outputs = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err.decode()[-2000:]
        assert out.decode().strip() == "234"
    with sqlite3.connect(tmp_path / "data" / "yana" / "yana.db") as conn:
        assert conn.execute("SELECT count(*), count(DISTINCT hash_sha1) FROM labels").fetchone() == (234, 234)
        assert conn.execute("SELECT count(*) FROM labels_fts").fetchone()[0] == 234


def test_an_index_from_an_older_version_is_rebuilt_and_labels_kept(tmp_path: Path) -> None:
    first = create(make_settings(tmp_path), env={})
    with first.kb.connect() as conn:  # what version 1 left: its FTS table and no user_version
        conn.execute("DROP TABLE labels_fts")
        conn.execute(
            "CREATE VIRTUAL TABLE labels_fts USING fts5(brand_name, product_name, brewery, region, features,"
            " category_words, tokenize = 'trigram')"
        )
        conn.execute("PRAGMA user_version = 1")
    again = create(make_settings(tmp_path), env={})
    assert again.kb.count() == 234  # the bundled labels are upserted, not duplicated
    with again.kb.connect() as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == INDEX_VERSION
    hits = again.search({"query_text": "はっかいさん"}, ctx())["hits"]
    assert [h["id"] for h in hits] == ["label_0009", "label_0010"]  # readings are indexed now
