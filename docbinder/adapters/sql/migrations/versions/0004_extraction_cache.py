"""Extraction cache: content parts by content hash and extractor version (feature B10).

Revision ID: 0004
Revises: 0003

Frozen copy of the ``extraction_cache`` table of
:mod:`docbinder.adapters.sql.schema` at this revision. ``payload`` is
``LONGBLOB`` on MariaDB/MySQL, ``version`` ``LONGTEXT``; the table is InnoDB,
utf8mb4, utf8mb4_bin there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
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
    """Create ``extraction_cache`` and its eviction index."""
    op.create_table(
        "extraction_cache",
        sa.Column("sha256", sa.CHAR(64), nullable=False),
        sa.Column("version_key", sa.CHAR(64), nullable=False),
        sa.Column(
            "version", sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb"), nullable=False
        ),
        sa.Column(
            "payload",
            sa.LargeBinary().with_variant(mysql.LONGBLOB(), "mysql", "mariadb"),
            nullable=False,
        ),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("created_at", _utc(), nullable=False),
        sa.Column("used_at", _utc(), nullable=False),
        sa.PrimaryKeyConstraint("sha256", "version_key", name="pk_extraction_cache"),
        **MYSQL_OPTIONS,
    )
    op.create_index("ix_extraction_cache_used", "extraction_cache", ["used_at"])


def downgrade() -> None:
    """Drop ``extraction_cache`` (a cache: nothing is lost but work)."""
    op.drop_index("ix_extraction_cache_used", table_name="extraction_cache")
    op.drop_table("extraction_cache")
