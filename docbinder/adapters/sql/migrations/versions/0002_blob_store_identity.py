"""Blob-store identity on FileItems, missing-blob marks for gc, documents by file, database id.

Revision ID: 0002
Revises: 0001

Frozen (no import of the live schema). Adds ``file_items.blob_store`` (the
identity of the store holding the bytes; ``NULL`` for existing rows, which
``gc`` adopts once it finds their blob in the store it is connected to), the
table ``gc_marks`` (mark, then sweep: a FileItem whose blob is missing is
removed only by a later ``gc`` run) and the index ``ix_chat_documents_file_id``
(``files rm`` counts the documents that refer to a file), and the table
``docbinder_meta`` (the database's own identity, recorded by blob stores).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MYSQL_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}


def _utc() -> sa.types.TypeEngine[Any]:
    return sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def upgrade() -> None:
    """Add the column, the tables and the index."""
    with op.batch_alter_table("file_items") as batch:
        batch.add_column(sa.Column("blob_store", sa.String(128), nullable=True))
    op.create_index("ix_chat_documents_file_id", "chat_documents", ["file_id"])
    op.create_table(
        "gc_marks",
        sa.Column("file_id", sa.String(128), nullable=False),
        sa.Column("blob_key", sa.String(255), nullable=False),
        sa.Column("marked_at", _utc(), nullable=False),
        sa.PrimaryKeyConstraint("file_id", name="pk_gc_marks"),
        **MYSQL_OPTIONS,
    )
    op.create_table(
        "docbinder_meta",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("value", sa.String(128), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_docbinder_meta"),
        **MYSQL_OPTIONS,
    )


def downgrade() -> None:
    """Drop what :func:`upgrade` added."""
    op.drop_table("docbinder_meta")
    op.drop_table("gc_marks")
    op.drop_index("ix_chat_documents_file_id", table_name="chat_documents")
    with op.batch_alter_table("file_items") as batch:
        batch.drop_column("blob_store")
