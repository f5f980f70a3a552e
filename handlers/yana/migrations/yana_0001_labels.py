"""yana's label knowledge base: labels, their search documents, region terms, the index version

On SQLite the search documents are an FTS5 table with the trigram tokenizer (its rowid is the
label's pk); on PostgreSQL a plain table with one pg_trgm GIN index per column, which serves the
same substring tests (`LIKE '%…%'`). pg_trgm ships in Debian's postgresql package (contrib) and
is a trusted extension since PostgreSQL 13, so the database owner may create it.

Revision ID: yana_0001
Revises:
Create Date: 2026-11-24 (as 0005_yana of the runtime; its own branch since 2026-12-07)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "yana_0001"
down_revision = None
branch_labels = ("yana",)
depends_on = None
replaces = "0005_yana"
"""The revision of the runtime's one chain that created these tables before the services owned their
migrations: a database found at it is read as at the runtime's `0001` (kumitate.storage.migrate)."""

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


def _adopted(table: str) -> bool:
    """The table exists already: a release before the services owned their migrations created it (its
    revision 0005_yana); it is adopted as it is, every row kept."""
    return sa.inspect(op.get_bind()).has_table(table)


def upgrade() -> None:
    if _adopted("yana_labels"):
        return
    op.create_table(
        "yana_labels",
        sa.Column("pk", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("id", sa.String(100), nullable=False, unique=True),
        sa.Column("brand_name", sa.Text, nullable=False),
        sa.Column("product_name", sa.Text, nullable=False),
        sa.Column("brewery", sa.Text, nullable=False),
        sa.Column("region", sa.Text, nullable=False),
        sa.Column("category", sa.String(10), nullable=False),
        sa.Column("label_features", sa.Text, nullable=False, comment="JSON array of strings"),
        sa.Column("file_path", sa.Text, nullable=False),
        sa.Column("hash_sha1", sa.String(40), nullable=True, unique=True),
        sa.Column("phash", sa.String(16), nullable=True),
        sa.Column("source", sa.String(10), nullable=False, comment="bundled | ingest"),
        sa.Column("doc_len", sa.Integer, nullable=False, server_default="0", comment="trigrams in the document"),
        sa.CheckConstraint("category IN ('sake', 'juice')", name="yana_labels_category"),
    )
    op.create_table(
        "yana_region_terms",
        sa.Column("label_pk", sa.Integer, sa.ForeignKey("yana_labels.pk"), nullable=False),
        sa.Column("term", sa.Text, nullable=False),
    )
    op.create_index("yana_region_terms_label", "yana_region_terms", ["label_pk"])
    op.create_table(
        "yana_meta",
        sa.Column("key", sa.String(50), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f"CREATE VIRTUAL TABLE yana_label_docs USING fts5({', '.join(DOC_COLUMNS)}, tokenize = 'trigram')")
        return
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    op.create_table(
        "yana_label_docs",
        sa.Column("rowid", sa.Integer, sa.ForeignKey("yana_labels.pk"), primary_key=True),
        *(sa.Column(c, sa.Text, nullable=False, server_default="") for c in DOC_COLUMNS),
    )
    for column in DOC_COLUMNS:
        op.execute(f"CREATE INDEX yana_label_docs_{column}_trgm ON yana_label_docs USING gin ({column} gin_trgm_ops)")


def downgrade() -> None:
    op.drop_table("yana_label_docs")
    op.drop_table("yana_meta")
    op.drop_index("yana_region_terms_label", table_name="yana_region_terms")
    op.drop_table("yana_region_terms")
    op.drop_table("yana_labels")
