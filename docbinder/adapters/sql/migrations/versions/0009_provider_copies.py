"""Copies of FileItems in model providers' Files APIs (B22).

Revision ID: 0009
Revises: 0008

Frozen copy of what :mod:`docbinder.adapters.sql.schema` adds at this
revision: the table ``provider_copies`` (ADR 0105), one row per content,
provider, account and tenant, keyed by all four.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
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
        "provider_copies",
        sa.Column("sha256", sa.CHAR(64), nullable=False),
        sa.Column("provider", sa.String(16), nullable=False),
        sa.Column("account", sa.String(128), nullable=False),
        sa.Column("mandate_id", sa.String(128), nullable=False),
        sa.Column("feature_key", sa.String(128), nullable=False),
        sa.Column("feature_instance_id", sa.String(128), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("claim", sa.String(128), nullable=False),
        sa.Column("claimed_at", _utc(), nullable=False),
        sa.Column("file_id", sa.String(1024), nullable=True),
        sa.Column("uri", sa.String(1024), nullable=True),
        sa.Column("uploaded_at", _utc(), nullable=True),
        sa.Column("expires_at", _utc(), nullable=True),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "sha256", "provider", "account", "mandate_id", "feature_key", name="pk_provider_copies"
        ),
        **MYSQL_OPTIONS,
    )
    op.create_index("ix_provider_copies_state", "provider_copies", ["state", "claimed_at"])


def downgrade() -> None:
    """Drop the table (the record of provider copies is lost; the copies stay at the providers)."""
    op.drop_table("provider_copies")
