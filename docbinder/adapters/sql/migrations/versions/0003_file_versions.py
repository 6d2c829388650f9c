"""File versions: table file_versions (feature row B1, ADR 0013).

Revision ID: 0003
Revises: 0002

Frozen copy of the ``file_versions`` table of
:mod:`docbinder.adapters.sql.schema` at this revision. Existing FileItems are
not versioned and stay as they are; the upgrade only adds the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MYSQL_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}


def _id() -> sa.String:
    return sa.String(128)


def _text() -> sa.types.TypeEngine[str]:
    return sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")


def upgrade() -> None:
    """Create ``file_versions`` and its two indexes."""
    op.create_table(
        "file_versions",
        sa.Column("file_id", _id(), nullable=False),
        sa.Column("mandate_id", _id(), nullable=False),
        sa.Column("feature_instance_id", _id(), nullable=True),
        sa.Column("namespace", _text(), nullable=False),
        sa.Column("series_name", sa.String(1024), nullable=False),
        sa.Column("series_key", sa.CHAR(64), nullable=False),
        sa.Column("space_key", sa.CHAR(64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("user_metadata", _text(), nullable=False),
        sa.Column("host_data", _text(), nullable=False),
        sa.PrimaryKeyConstraint("file_id", name="pk_file_versions"),
        **MYSQL_OPTIONS,
    )
    op.create_index(
        "uq_file_versions_series", "file_versions", ["series_key", "version"], unique=True
    )
    op.create_index("ix_file_versions_space", "file_versions", ["space_key", "series_key"])


def downgrade() -> None:
    """Drop ``file_versions`` (the FileItems of the versions stay, unversioned)."""
    op.drop_table("file_versions")
