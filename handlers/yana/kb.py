"""The label knowledge base: SQLite with an FTS5 trigram index.

Trigram tokenisation needs no word breaks, so 純米大吟醸 is found inside
獺祭 純米大吟醸 45 without a Japanese tokenizer. It only indexes runs of three
characters or more, so 1–2 character terms go through LIKE (which FTS5's trigram
tokenizer also serves, by scanning). One connection per call keeps the worker
threads independent; WAL lets readers run while an ingest writes.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import imagehash
from PIL import Image

from handlers.yana.text import normalize, region_terms
from kumitate.context import commit_gate

SCHEMA = """
CREATE TABLE IF NOT EXISTS labels (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    brand_name TEXT NOT NULL,
    product_name TEXT NOT NULL,
    brewery TEXT NOT NULL,
    region TEXT NOT NULL,
    category TEXT NOT NULL CHECK (category IN ('sake', 'juice')),
    label_features TEXT NOT NULL,          -- JSON array of strings
    file_path TEXT NOT NULL,
    hash_sha1 TEXT,
    phash TEXT,
    source TEXT NOT NULL                   -- 'bundled' | 'ingest'
);
CREATE UNIQUE INDEX IF NOT EXISTS labels_sha1 ON labels(hash_sha1) WHERE hash_sha1 IS NOT NULL;
CREATE TABLE IF NOT EXISTS region_terms (
    label_rowid INTEGER NOT NULL REFERENCES labels(rowid),
    term TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS region_terms_label ON region_terms(label_rowid);
CREATE VIRTUAL TABLE IF NOT EXISTS labels_fts USING fts5(
    brand_name, product_name, brewery, region, features, category_words, tokenize = 'trigram'
);
"""
CATEGORY_WORDS = {"sake": "日本酒 清酒 お酒 sake", "juice": "ジュース 果汁 飲料 juice"}
HIT_FIELDS = ("id", "brand_name", "product_name", "brewery", "region", "category", "label_features", "file_path")


@dataclass(frozen=True, slots=True)
class ImageHashes:
    sha1: str
    phash: str


def hash_image(data: bytes, image: Image.Image) -> ImageHashes:
    """sha1 of the exact bytes (identity) and a 64-bit DCT pHash (visual similarity)."""
    return ImageHashes(hashlib.sha1(data).hexdigest(), str(imagehash.phash(image)))


class KnowledgeBase:
    """Owns the SQLite file; loads the bundled labels on first open."""

    def __init__(self, db_path: Path, sample_dir: Path) -> None:
        self.db_path = db_path
        self.sample_dir = sample_dir  # data/ (the parent of data/yana)
        self.write_lock = threading.Lock()
        with self.connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(SCHEMA)
            if conn.execute("SELECT count(*) FROM labels").fetchone()[0] == 0:
                self._load_bundled(conn)

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """A connection whose writes commit together at the end (through the call's commit gate)."""
        conn = sqlite3.connect(self.db_path, timeout=5.0)
        conn.row_factory = sqlite3.Row
        try:
            yield conn
            if conn.in_transaction:
                with commit_gate():
                    conn.commit()
        except BaseException:
            conn.rollback()
            raise
        finally:
            conn.close()

    def bundled_file(self, file_path: str) -> Path:
        """data/yana/images/x.png (as stored) → the file under the configured sample_dir."""
        return self.sample_dir / Path(file_path).relative_to("data")

    def _load_bundled(self, conn: sqlite3.Connection) -> None:
        doc = json.loads((self.sample_dir / "yana" / "labels.json").read_text(encoding="utf-8"))
        for label in doc["labels"]:
            path = self.bundled_file(label["file_path"])
            data = path.read_bytes()
            with Image.open(path) as img:
                hashes = hash_image(data, img)
            insert_label(conn, label, hashes, source="bundled")

    def count(self) -> int:
        with self.connect() as conn:
            return int(conn.execute("SELECT count(*) FROM labels").fetchone()[0])


def insert_label(conn: sqlite3.Connection, label: dict[str, Any], hashes: ImageHashes | None, *, source: str) -> int:
    """Insert one label into the table, the FTS index and the region-term side table."""
    features = [str(f) for f in label.get("label_features", [])]
    cur = conn.execute(
        "INSERT INTO labels (id, brand_name, product_name, brewery, region, category, label_features, file_path,"
        " hash_sha1, phash, source) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (
            label["id"],
            label["brand_name"],
            label.get("product_name", ""),
            label.get("brewery", ""),
            label.get("region", ""),
            label["category"],
            json.dumps(features, ensure_ascii=False),
            label["file_path"],
            hashes.sha1 if hashes else None,
            hashes.phash if hashes else None,
            source,
        ),
    )
    rowid = int(cur.lastrowid or 0)
    conn.execute(
        "INSERT INTO labels_fts (rowid, brand_name, product_name, brewery, region, features, category_words)"
        " VALUES (?,?,?,?,?,?,?)",
        (
            rowid,
            normalize(label["brand_name"]),
            normalize(label.get("product_name", "")),
            normalize(label.get("brewery", "")),
            normalize(label.get("region", "")),
            normalize(" ".join(features)),
            CATEGORY_WORDS[label["category"]],
        ),
    )
    conn.executemany(
        "INSERT INTO region_terms (label_rowid, term) VALUES (?, ?)",
        [(rowid, term) for term in region_terms(label.get("region", ""))],
    )
    return rowid


def row_to_hit(row: sqlite3.Row) -> dict[str, Any]:
    """A labels row as the `Hit` object of the API (see types/yana.json)."""
    hit = {field: row[field] for field in HIT_FIELDS}
    hit["label_features"] = json.loads(row["label_features"])
    return hit


def search_text(row: sqlite3.Row) -> str:
    """Everything a query term may match in a row, normalised (for term coverage)."""
    return normalize(
        " ".join(
            [
                row["brand_name"],
                row["product_name"],
                row["brewery"],
                row["region"],
                " ".join(json.loads(row["label_features"])),
                CATEGORY_WORDS[row["category"]],
            ]
        )
    )
