"""Signed links' marks and the recent resolutions of each workflow (feature row B4, the inspector).

Revision ID: 0007
Revises: 0004

Frozen copy of the ``link_marks`` and ``resolution_log`` tables of
:mod:`docbinder.adapters.sql.schema` at this revision. InnoDB, utf8mb4,
utf8mb4_bin on MariaDB/MySQL; ``record`` is ``LONGTEXT`` there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0004"
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
    """Create ``link_marks`` and ``resolution_log`` with their indexes."""
    op.create_table(
        "link_marks",
        sa.Column("link_id", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("expires_at", _utc(), nullable=False),
        sa.Column("marked_at", _utc(), nullable=False),
        sa.PrimaryKeyConstraint("link_id", "kind", name="pk_link_marks"),
        **MYSQL_OPTIONS,
    )
    op.create_index("ix_link_marks_expires", "link_marks", ["expires_at"])
    op.create_table(
        "resolution_log",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("workflow_id", sa.String(128), nullable=False),
        sa.Column("recorded_at", _utc(), nullable=False),
        sa.Column(
            "record", sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb"), nullable=False
        ),
        sa.PrimaryKeyConstraint("id", name="pk_resolution_log"),
        **MYSQL_OPTIONS,
    )
    op.create_index("ix_resolution_log_workflow", "resolution_log", ["workflow_id", "id"])


def downgrade() -> None:
    """Drop both tables (revocations are lost: revoked links that have not expired work again)."""
    op.drop_index("ix_resolution_log_workflow", table_name="resolution_log")
    op.drop_table("resolution_log")
    op.drop_index("ix_link_marks_expires", table_name="link_marks")
    op.drop_table("link_marks")
