"""The label knowledge base on the storage layer: labels, their search documents, first-start loading.

Each label is indexed twice per field: its folded text (NFKC, casefold, katakana → hiragana:
see handlers.yana.japanese) and its folded hiragana reading (獺祭 → だっさい, 林檎 → りんご),
so kana variants, kanji forms and readings of a name all find it. The tables live in the
storage layer's database (kumitate.storage: the SQLite file under the data directory, or
PostgreSQL with KUMITATE_DATABASE_URL); handlers.yana.store.labels holds the SQL.

First start is safe with several processes on one database: the bundled labels are upserted
(ON CONFLICT DO NOTHING) inside one transaction that holds the setup lock (SQLite's BEGIN
IMMEDIATE, a PostgreSQL advisory lock), so the second process waits for the first and then
finds nothing left to add. Documents built by an older version (index_version in yana_meta
below INDEX_VERSION) are rebuilt from the labels in the same way. Ingested labels of a
pre-storage-layer `yana.db` (SQLite, under the yana state directory) are imported once.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image
from sqlalchemy import Connection

from handlers.yana.japanese import fold, reading
from handlers.yana.store.labels import DOC_COLUMNS, LabelStore, features_of
from handlers.yana.text import region_terms
from kumitate.storage import Database, SchemaMismatchError, carry

INDEX_VERSION = 3
TEXT_FIELDS = ("brand_name", "product_name", "brewery", "region", "features", "category_words")
READING_FIELDS = ("brand_r", "product_r", "brewery_r", "region_r", "features_r")
assert TEXT_FIELDS + READING_FIELDS == DOC_COLUMNS
CATEGORY_WORDS = {"sake": "日本酒 清酒 酒 お酒 地酒 sake", "juice": "ジュース 果汁 飲料 ドリンク juice"}
HIT_FIELDS = ("id", "brand_name", "product_name", "brewery", "region", "category", "label_features", "file_path")
LEGACY_DB = "yana.db"


@dataclass(frozen=True, slots=True)
class ImageHashes:
    sha1: str
    phash: str


def hash_image(data: bytes, image: Image.Image) -> ImageHashes:
    """sha1 of the exact bytes (identity) and a 64-bit DCT pHash (visual similarity)."""
    import imagehash  # with numpy and scipy ~0.5 s: paid by the first image hashed, not by every start

    return ImageHashes(hashlib.sha1(data).hexdigest(), str(imagehash.phash(image)))


class KnowledgeBase:
    """The labels in the storage layer's database; loads the bundled labels on first open."""

    def __init__(self, db: Database, sample_dir: Path, state_dir: Path | None = None) -> None:
        self.db = db
        self.store = LabelStore(db)
        self.sample_dir = sample_dir  # data/ (the parent of data/yana)
        self._prepare(state_dir / LEGACY_DB if state_dir else None)

    def _prepare(self, legacy: Path | None) -> None:
        """Rebuild outdated documents, load missing bundled labels, import a legacy file (idempotent)."""
        if not (legacy and legacy.is_file()):
            legacy = None
        with self.db.read() as conn:
            if legacy is None and self._ready(conn):
                return
        bundled = self._bundled()  # images are hashed before the setup lock is taken
        imported = 0
        notes: list[str] = []
        with self.db.transaction() as conn:
            self.store.lock_for_setup(conn)
            stored_version = self.store.meta(conn, "index_version")
            _refuse_newer(stored_version)
            if stored_version != str(INDEX_VERSION):
                rows = self.store.labels(conn)
                self.store.replace_documents(conn, {r["pk"]: index_document(row_to_label(r)) for r in rows})
                self.store.set_meta(conn, "index_version", str(INDEX_VERSION))
                if rows:
                    done = f"rebuilt the search documents of {len(rows)} labels"
                    notes.append(f"{done} (index version {stored_version} -> {INDEX_VERSION})")
            loaded = sum(insert_label(self.store, conn, label, h, source="bundled") is not None for label, h in bundled)
            if loaded:
                notes.append(f"loaded {loaded} bundled labels from {self.sample_dir / 'yana'}")
            for label, found in legacy_labels(legacy) if legacy is not None else []:
                imported += insert_label(self.store, conn, label, found, source="ingest") is not None
        for note in notes:
            carry.announce("yana", note)
        if legacy is not None and (kept := carry.keep_original(legacy)) is not None:
            carry.announce(
                "yana",
                f"copied {imported} ingested labels from {legacy} into the storage layer (their images stay"
                f" where they are); the original is kept as {kept.name}",
                rows=imported,
                kept=str(kept),
            )

    def _ready(self, conn: Connection) -> bool:
        """True when the documents are current and at least one label exists (nothing to load)."""
        return self.store.meta(conn, "index_version") == str(INDEX_VERSION) and self.store.count(conn) > 0

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
    def read(self) -> Iterator[Connection]:
        with self.db.read() as conn:
            yield conn

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """Writes that commit together at the end, through the call's commit gate."""
        with self.db.transaction() as conn:
            yield conn

    def bundled_file(self, file_path: str) -> Path:
        """data/yana/images/x.png (as stored) → the file under the configured sample_dir."""
        return self.sample_dir / Path(file_path).relative_to("data")

    def count(self) -> int:
        with self.db.read() as conn:
            return self.store.count(conn)

    def names(self, field: str, prefix: str = "") -> list[str]:
        """Distinct non-empty values of `field` (brand_name or brewery) that start with `prefix`, sorted."""
        with self.read() as conn:
            return self.store.names(conn, field, prefix)

    def group(self, field: str, value: str) -> list[dict[str, Any]]:
        """The labels whose `field` is exactly `value`, by id (the fields of a LabelGroup entry)."""
        with self.read() as conn:
            return self.store.group(conn, field, value)


def insert_label(
    store: LabelStore, conn: Connection, label: dict[str, Any], hashes: ImageHashes | None, *, source: str
) -> int | None:
    """Insert one label with its search document and region terms.

    An upsert that does nothing when the id or the image hash is already there (returns None),
    so loading the bundled labels twice, or from two processes at once, is harmless.
    """
    features = [str(f) for f in label.get("label_features", [])]
    values = {
        "id": label["id"],
        "brand_name": label["brand_name"],
        "product_name": label.get("product_name", ""),
        "brewery": label.get("brewery", ""),
        "region": label.get("region", ""),
        "category": label["category"],
        "label_features": json.dumps(features, ensure_ascii=False),
        "file_path": label["file_path"],
        "hash_sha1": hashes.sha1 if hashes else None,
        "phash": hashes.phash if hashes else None,
        "source": source,
    }
    return store.insert_label(conn, values, index_document(label), region_terms(label.get("region", "")))


def index_document(label: dict[str, Any]) -> dict[str, str]:
    """The search document of a label: folded text and folded reading of each field."""
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


def row_to_label(row: dict[str, Any]) -> dict[str, Any]:
    """A labels row as the label dict `index_document` reads."""
    return {**row, "label_features": features_of(row)}


def row_to_hit(row: dict[str, Any]) -> dict[str, Any]:
    """A labels row as the `Hit` object of the API (see types/yana.json)."""
    hit = {field: row[field] for field in HIT_FIELDS}
    hit["label_features"] = features_of(row)
    return hit


def _refuse_newer(stored: str | None) -> None:
    """Search documents built by a newer release are not rebuilt down: refuse to start, change nothing."""
    if stored is not None and stored.isdigit() and int(stored) > INDEX_VERSION:
        raise SchemaMismatchError(
            f"yana's search index is at version {stored}, newer than this kumitate's {INDEX_VERSION}:"
            " upgrade kumitate on every instance, or point it at another data directory"
        )


def legacy_labels(path: Path) -> list[tuple[dict[str, Any], ImageHashes | None]]:
    """The ingested labels of a `yana.db` from before the storage layer (the bundled ones reload anyway)."""
    conn = sqlite3.connect(path)  # read-write: a left-over write-ahead log is folded in when it closes
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute("SELECT * FROM labels WHERE source = 'ingest' ORDER BY rowid").fetchall()
    except sqlite3.Error:
        return []
    finally:
        conn.close()
    out: list[tuple[dict[str, Any], ImageHashes | None]] = []
    for row in rows:
        hashes = ImageHashes(row["hash_sha1"], row["phash"]) if row["hash_sha1"] and row["phash"] else None
        out.append((row_to_label(dict(row)), hashes))
    return out
