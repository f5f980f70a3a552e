"""yana's tables on the storage layer (kumitate.storage): the only module of yana that writes SQL.

Both engines hold the same rows; they differ only in how "which documents contain this
substring" is answered: SQLite through an FTS5 trigram index (`yana_label_docs` is the FTS5
table, its rowid the label's pk), PostgreSQL through pg_trgm GIN indexes serving
`LIKE '%…%'` (see the migration handlers/yana/migrations/yana_0001_labels.py).
Both are exact substring tests over the same folded text, so both return the same rows, and
everything after that (scores, bm25, ranking) is pure Python: the same hits on either engine.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import (
    Column,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    bindparam,
    delete,
    exc,
    func,
    insert,
    or_,
    select,
    text,
)
from sqlalchemy import Connection as Connection  # what KnowledgeBase.read() yields: core/ hands it back to the store
from sqlalchemy.sql.elements import BindParameter, ColumnElement

from kumitate.storage import Database

#: a statement that failed (a database lost, locked or broken): core/ answers RAG_UNAVAILABLE for it
StorageError = exc.SQLAlchemyError

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
LABEL_FIELDS = (
    "id",
    "brand_name",
    "product_name",
    "brewery",
    "region",
    "category",
    "label_features",
    "file_path",
    "hash_sha1",
    "phash",
    "source",
)

SETUP_LOCK_ID = 0x79616E61  # "yana": one PostgreSQL advisory lock for first-start loading

metadata = MetaData()
labels = Table(
    "yana_labels",
    metadata,
    Column("pk", Integer, primary_key=True, autoincrement=True),
    *(
        Column(name, String if name in ("id", "category", "hash_sha1", "phash", "source") else Text)
        for name in LABEL_FIELDS
    ),
    Column("doc_len", Integer, nullable=False),
)
docs = Table(
    "yana_label_docs", metadata, Column("rowid", Integer, primary_key=True), *(Column(c, Text) for c in DOC_COLUMNS)
)
region_terms = Table("yana_region_terms", metadata, Column("label_pk", Integer), Column("term", Text))
meta = Table("yana_meta", metadata, Column("key", String, primary_key=True), Column("value", Text))


_FTS_QUERY_ERRORS = ("fts5: syntax error", "unterminated string", "unknown special query", "parser stack overflow")


GROUP_FIELDS = {"brand_name": "brand_name", "brewery": "brewery"}
"""The label fields a LabelGroup is formed by (a whitelist: they name columns)."""


class UnsearchableQuery(Exception):
    """FTS5 refused the MATCH expression built from the query (client input, not a broken database)."""


def is_fts_query_error(error: BaseException) -> bool:
    message = str(error).lower()
    return any(marker in message for marker in _FTS_QUERY_ERRORS)


def fts_expression(values: Sequence[str], columns: Sequence[str]) -> str:
    """An FTS5 MATCH: any of `values` as a quoted phrase (a substring, with the trigram tokenizer) in `columns`."""
    phrases = " OR ".join('"' + v.replace('"', '""') + '"' for v in values)
    return "{" + " ".join(columns) + "} : (" + phrases + ")"


def _escape_like(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class LabelStore:
    """Queries over yana's tables; every method takes the connection of the caller's transaction.

    Statements are built once (bound parameters, expanding IN lists): building SQLAlchemy
    expressions per search cost more than running them.
    """

    def __init__(self, db: Database) -> None:
        self.db = db
        self.postgres = db.dialect == "postgresql"
        pks: BindParameter[list[int]] = bindparam("pks", expanding=True)
        self._count = select(func.count()).select_from(labels)
        self._stats = select(func.count(), func.coalesce(func.sum(labels.c.doc_len), 0))
        self._labels = select(labels)
        self._labels_in = select(labels).where(labels.c.pk.in_(pks))
        self._docs_in = select(docs).where(docs.c.rowid.in_(pks))
        self._terms_in = select(region_terms.c.label_pk, region_terms.c.term).where(region_terms.c.label_pk.in_(pks))
        self._by_sha1 = select(labels.c.id, labels.c.phash).where(labels.c.hash_sha1 == bindparam("sha1"))
        self._phashes = select(labels.c.id, labels.c.phash).where(labels.c.phash.is_not(None))
        self._meta = select(meta.c.value).where(meta.c.key == bindparam("key"))
        query: BindParameter[str] = bindparam("query")
        spoken: BindParameter[str] = bindparam("spoken")
        d = docs.c
        self._named = select(d.rowid).where(
            or_(
                (func.length(d.brand_name) >= 2) & self._occurs(d.brand_name, query),
                (func.length(d.brewery) >= 2) & self._occurs(d.brewery, query),
                (func.length(d.brand_r) >= 3) & self._occurs(d.brand_r, spoken),
                (func.length(d.brewery_r) >= 3) & self._occurs(d.brewery_r, spoken),
            )
        )
        self._named_terms = select(region_terms.c.label_pk).where(self._occurs(region_terms.c.term, query))
        self._match = text("SELECT rowid FROM yana_label_docs WHERE yana_label_docs MATCH :e")
        self._substring: dict[tuple[tuple[str, ...], int, str], Any] = {}

    # reading --------------------------------------------------------------------------------------

    def count(self, conn: Connection) -> int:
        return int(conn.execute(self._count).scalar_one())

    def stats(self, conn: Connection) -> tuple[int, float]:
        """(number of labels, mean document length in trigrams): the corpus figures bm25 needs."""
        n, total = conn.execute(self._stats).one()
        return int(n), (float(total) / n if n else 0.0)

    def labels(self, conn: Connection, pks: Iterable[int] | None = None) -> list[dict[str, Any]]:
        """Label rows as dicts (all of them when `pks` is None), in no particular order."""
        if pks is None:
            return [dict(r._mapping) for r in conn.execute(self._labels)]
        return [dict(r._mapping) for r in conn.execute(self._labels_in, {"pks": list(pks)})]

    def names(self, conn: Connection, field: str, prefix: str) -> list[str]:
        """Distinct non-empty values of `field` (brand_name or brewery) that start with `prefix`, sorted."""
        column = labels.c[GROUP_FIELDS[field]]
        pattern = _escape_like(prefix) + "%"
        found = select(column).distinct().where(column != "", column.like(pattern, escape="\\")).order_by(column)
        return [str(v) for v in conn.execute(found).scalars()]

    def group(self, conn: Connection, field: str, value: str) -> list[dict[str, Any]]:
        """The labels whose `field` is exactly `value`, by id (the fields of a LabelGroup entry)."""
        c = labels.c
        rows = conn.execute(
            select(c.id, c.brand_name, c.product_name, c.brewery, c.region, c.category)
            .where(c[GROUP_FIELDS[field]] == value)
            .order_by(c.id)
        )
        return [dict(r._mapping) for r in rows]

    def documents(self, conn: Connection, pks: Iterable[int]) -> dict[int, dict[str, str]]:
        rows = conn.execute(self._docs_in, {"pks": list(pks)})
        return {int(r.rowid): {c: r._mapping[c] or "" for c in DOC_COLUMNS} for r in rows}

    def region_terms(self, conn: Connection, pks: Iterable[int]) -> dict[int, list[str]]:
        found: dict[int, list[str]] = {}
        for pk, term in conn.execute(self._terms_in, {"pks": list(pks)}):
            found.setdefault(int(pk), []).append(term)
        return found

    def by_sha1(self, conn: Connection, sha1: str) -> dict[str, Any] | None:
        row = conn.execute(self._by_sha1, {"sha1": sha1}).first()
        return dict(row._mapping) if row else None

    def phashes(self, conn: Connection) -> list[tuple[str, str]]:
        return sorted((r.id, r.phash) for r in conn.execute(self._phashes))

    def meta(self, conn: Connection, key: str) -> str | None:
        return conn.execute(self._meta, {"key": key}).scalar_one_or_none()

    # substring search -------------------------------------------------------------------------------

    def containing(self, conn: Connection, values: Sequence[str], columns: Sequence[str]) -> set[int]:
        """Labels whose document holds one of `values` (≥ 3 characters) as a substring in one of `columns`."""
        if not values:
            return set()
        if self.postgres:
            found: set[int] = set()
            for value in values:
                found |= self._like(conn, columns, f"%{_escape_like(value)}%", padded=False)
            return found
        try:
            return {int(r[0]) for r in conn.execute(self._match, {"e": fts_expression(values, columns)})}
        except exc.OperationalError as error:
            if is_fts_query_error(error):  # the client's text, not the knowledge base
                raise UnsearchableQuery from None
            raise

    def containing_short(self, conn: Connection, value: str, columns: Sequence[str]) -> set[int]:
        """Labels with a 1–2 character `value` in one of `columns`; one character only as a whole token."""
        if len(value) == 1:
            return self._like(conn, columns, f"% {_escape_like(value)} %", padded=True)
        return self._like(conn, columns, f"%{_escape_like(value)}%", padded=False)

    def _like(self, conn: Connection, columns: Sequence[str], pattern: str, *, padded: bool) -> set[int]:
        """Rows where one of `columns` (with a space on each side when `padded`) is LIKE `pattern`."""
        key = (tuple(columns), int(padded), "like")
        statement = self._substring.get(key)
        if statement is None:
            p: BindParameter[str] = bindparam("p")
            tests = ((" " + docs.c[c] + " ") if padded else docs.c[c] for c in columns)
            statement = select(docs.c.rowid).where(or_(*(t.like(p, escape="\\") for t in tests)))
            self._substring[key] = statement
        return {int(r[0]) for r in conn.execute(statement, {"p": pattern})}

    def named_in(self, conn: Connection, query: str, spoken: str) -> set[int]:
        """Labels whose brand/brewery (or its reading of ≥ 3 kana) or a region term occurs in the query."""
        found = {int(r[0]) for r in conn.execute(self._named, {"query": query, "spoken": spoken})}
        return found | {int(r[0]) for r in conn.execute(self._named_terms, {"query": query})}

    def _occurs(self, needle: ColumnElement[Any], haystack: Any) -> ColumnElement[bool]:
        position = func.strpos if self.postgres else func.instr
        return position(haystack, needle) > 0

    # writing ----------------------------------------------------------------------------------------

    def insert_label(
        self, conn: Connection, values: Mapping[str, Any], document: Mapping[str, str], terms: Iterable[str]
    ) -> int | None:
        """One label with its document and region terms; None (nothing written) when its id or sha1 exists."""
        statement = self.db.insert_ignore(labels, {**values, "doc_len": doc_length(document)}).returning(labels.c.pk)
        pk = conn.execute(statement).scalar_one_or_none()
        if pk is None:
            return None
        conn.execute(insert(docs).values(rowid=pk, **document))
        rows = [{"label_pk": pk, "term": term} for term in terms]
        if rows:
            conn.execute(insert(region_terms), rows)
        return int(pk)

    def replace_documents(self, conn: Connection, documents: Mapping[int, Mapping[str, str]]) -> None:
        """Rebuild every search document (after the folding or readings changed)."""
        conn.execute(delete(docs))
        for pk, document in documents.items():
            conn.execute(insert(docs).values(rowid=pk, **document))
            conn.execute(labels.update().where(labels.c.pk == pk).values(doc_len=doc_length(document)))

    def set_meta(self, conn: Connection, key: str, value: str) -> None:
        conn.execute(delete(meta).where(meta.c.key == key))
        conn.execute(insert(meta).values(key=key, value=value))

    def lock_for_setup(self, conn: Connection) -> None:
        """Serialise first-start loading across processes (SQLite: BEGIN IMMEDIATE already does)."""
        if self.postgres:
            conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": SETUP_LOCK_ID})


def doc_length(document: Mapping[str, str]) -> int:
    """Trigrams in a document: the length bm25 normalises by."""
    return sum(max(len(document.get(c, "")) - 2, 0) for c in DOC_COLUMNS)


def features_of(row: Mapping[str, Any]) -> list[str]:
    return list(json.loads(row["label_features"]))
