"""The label knowledge base: SQLite with an FTS5 trigram index over folded text and readings.

Each label is indexed twice per field: its folded text (NFKC, casefold, katakana → hiragana:
see handlers.yana.japanese) and its folded hiragana reading (獺祭 → だっさい, 林檎 → りんご),
so kana variants, kanji forms and readings of a name all find it. Trigram tokenisation needs
no word breaks; 1–2 character terms go through LIKE (which the trigram tokenizer also serves).
One connection per call keeps the worker threads independent; WAL lets readers run while an
ingest writes.

First start is safe with several processes on one data directory: the bundled labels are
upserted (ON CONFLICT DO NOTHING) inside one BEGIN IMMEDIATE transaction, so the second
process waits for the first and then finds nothing left to add. An index built by an older
version (PRAGMA user_version < INDEX_VERSION) is rebuilt from the labels table in the same way.
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

from handlers.yana.japanese import fold, reading
from handlers.yana.text import region_terms
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
"""
FTS_SCHEMA = """
CREATE VIRTUAL TABLE labels_fts USING fts5(
    brand_name, product_name, brewery, region, features, category_words,
    brand_r, product_r, brewery_r, region_r, features_r, tokenize = 'trigram'
);
"""
INDEX_VERSION = 2
TEXT_FIELDS = ("brand_name", "product_name", "brewery", "region", "features", "category_words")
READING_FIELDS = ("brand_r", "product_r", "brewery_r", "region_r", "features_r")
CATEGORY_WORDS = {"sake": "日本酒 清酒 酒 お酒 地酒 sake", "juice": "ジュース 果汁 飲料 ドリンク juice"}
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
        self._prepare()

    def _prepare(self) -> None:
        """Create the schema, rebuild an outdated index and load missing bundled labels (idempotent)."""
        conn = sqlite3.connect(self.db_path, timeout=60.0, isolation_level=None)
        conn.row_factory = sqlite3.Row
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            if self._ready(conn):
                return
            bundled = self._bundled()  # images are hashed before the write lock is taken
            conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                if conn.execute("PRAGMA user_version").fetchone()[0] < INDEX_VERSION:
                    conn.execute("DROP TABLE IF EXISTS labels_fts")
                    conn.execute(FTS_SCHEMA)
                    for row in conn.execute("SELECT * FROM labels").fetchall():
                        index_label(conn, int(row["rowid"]), row_to_label(row))
                    conn.execute(f"PRAGMA user_version = {INDEX_VERSION}")
                for label, hashes in bundled:
                    insert_label(conn, label, hashes, source="bundled")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        finally:
            conn.close()

    def _ready(self, conn: sqlite3.Connection) -> bool:
        """True when the index is current and at least one label exists (nothing to load)."""
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            return version >= INDEX_VERSION and conn.execute("SELECT count(*) FROM labels").fetchone()[0] > 0
        except sqlite3.OperationalError:  # no table yet
            return False

    def _bundled(self) -> list[tuple[dict[str, Any], ImageHashes]]:
        doc = json.loads((self.sample_dir / "yana" / "labels.json").read_text(encoding="utf-8"))
        out = []
        for label in doc["labels"]:
            path = self.bundled_file(label["file_path"])
            data = path.read_bytes()
            with Image.open(path) as img:
                out.append((label, hash_image(data, img)))
        return out

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

    def count(self) -> int:
        with self.connect() as conn:
            return int(conn.execute("SELECT count(*) FROM labels").fetchone()[0])

    def names(self, field: str, prefix: str = "") -> list[str]:
        """Distinct non-empty values of `field` (brand_name or brewery) that start with `prefix`, sorted."""
        column = GROUP_FIELDS[field]
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        sql = f"SELECT DISTINCT {column} FROM labels WHERE {column} != '' AND {column} LIKE ? ESCAPE '\\' ORDER BY 1"
        with self.connect() as conn:
            return [str(r[0]) for r in conn.execute(sql, (pattern,))]

    def group(self, field: str, value: str) -> list[dict[str, Any]]:
        """The labels whose `field` is exactly `value`, by id (the fields of a LabelGroup entry)."""
        column = GROUP_FIELDS[field]
        sql = (
            f"SELECT id, brand_name, product_name, brewery, region, category FROM labels WHERE {column} = ? ORDER BY id"
        )
        with self.connect() as conn:
            return [dict(r) for r in conn.execute(sql, (value,))]


GROUP_FIELDS = {"brand_name": "brand_name", "brewery": "brewery"}
"""The label fields a LabelGroup is formed by (a whitelist: column names go into SQL)."""


def insert_label(
    conn: sqlite3.Connection, label: dict[str, Any], hashes: ImageHashes | None, *, source: str
) -> int | None:
    """Insert one label into the table, the FTS index and the region-term side table.

    An upsert that does nothing when the id or the image hash is already there (returns None),
    so loading the bundled labels twice, or from two processes at once, is harmless.
    """
    features = [str(f) for f in label.get("label_features", [])]
    cur = conn.execute(
        "INSERT INTO labels (id, brand_name, product_name, brewery, region, category, label_features, file_path,"
        " hash_sha1, phash, source) VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
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
    if cur.rowcount == 0:
        return None
    rowid = int(cur.lastrowid or 0)
    index_label(conn, rowid, label)
    conn.executemany(
        "INSERT INTO region_terms (label_rowid, term) VALUES (?, ?)",
        [(rowid, term) for term in region_terms(label.get("region", ""))],
    )
    return rowid


def index_document(label: dict[str, Any]) -> dict[str, str]:
    """The FTS columns of a label: folded text and folded reading of each field."""
    features = " ".join(str(f) for f in label.get("label_features", []))
    text = {
        "brand_name": label["brand_name"],
        "product_name": label.get("product_name", ""),
        "brewery": label.get("brewery", ""),
        "region": label.get("region", ""),
        "features": features,
    }
    doc = {field: fold(value) for field, value in text.items()}
    doc["category_words"] = fold(CATEGORY_WORDS[label["category"]])
    for field, column in zip(
        ("brand_name", "product_name", "brewery", "region", "features"), READING_FIELDS, strict=True
    ):
        doc[column] = reading(text[field])
    return doc


def index_label(conn: sqlite3.Connection, rowid: int, label: dict[str, Any]) -> None:
    doc = index_document(label)
    columns = TEXT_FIELDS + READING_FIELDS
    conn.execute(
        f"INSERT INTO labels_fts (rowid, {', '.join(columns)}) VALUES (?{', ?' * len(columns)})",
        (rowid, *(doc[c] for c in columns)),
    )


def row_to_label(row: sqlite3.Row) -> dict[str, Any]:
    """A labels row as the label dict `index_document` reads."""
    return {**dict(row), "label_features": json.loads(row["label_features"])}


def row_to_hit(row: sqlite3.Row) -> dict[str, Any]:
    """A labels row as the `Hit` object of the API (see types/yana.json)."""
    hit = {field: row[field] for field in HIT_FIELDS}
    hit["label_features"] = json.loads(row["label_features"])
    return hit
