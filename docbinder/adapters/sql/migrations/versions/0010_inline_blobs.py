"""The inline tier of the blob store: small blobs in the metadata database (ADR 0110).

Revision ID: 0010
Revises: 0009

Frozen copy of what :mod:`docbinder.adapters.sql.schema` adds at this
revision: the table ``inline_blobs`` (one row per blob of at most
``inline_blob_limit`` bytes: key, bytes, size, provenance mark, commit record,
time written). ``data`` is ``BYTEA``/``BLOB``, ``LONGBLOB`` on MariaDB/MySQL.
Existing blobs stay where they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
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
    """Add the table."""
    op.create_table(
        "inline_blobs",
        sa.Column("blob_key", sa.String(255), nullable=False),
        sa.Column(
            "data",
            sa.LargeBinary().with_variant(mysql.LONGBLOB(), "mysql", "mariadb"),
            nullable=False,
        ),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("origin", sa.String(255), nullable=True),
        sa.Column("committed", sa.SmallInteger(), nullable=False),
        sa.Column("created_at", _utc(), nullable=False),
        sa.PrimaryKeyConstraint("blob_key", name="pk_inline_blobs"),
        **MYSQL_OPTIONS,
    )


def downgrade() -> None:
    """Drop the table (inline blobs are lost: move them out first)."""
    op.drop_table("inline_blobs")
