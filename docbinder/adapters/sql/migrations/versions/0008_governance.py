"""Governance: provenance, quotas, the audit log, retention and legal holds (B5, B9, B11, B12).

Revision ID: 0008
Revises: 0004

Frozen copy of what :mod:`docbinder.adapters.sql.schema` adds at this
revision: ``file_items.provenance`` (a JSON object as text, ``NULL`` when the
producer declared nothing; existing rows get ``NULL``) and the table
``quotas`` (limits and usage per mandate / feature instance, ADR 0090) and
``audit_events`` (the hash-chained audit log, ADR 0092).
Existing files count from the moment a quota is set: ``quota set`` counts
them then.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MYSQL_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}


def _long_text() -> sa.types.TypeEngine[Any]:
    return sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")


def _utc() -> sa.types.TypeEngine[Any]:
    return sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def upgrade() -> None:
    """Add the column and the tables."""
    with op.batch_alter_table("file_items") as batch:
        batch.add_column(sa.Column("provenance", _long_text(), nullable=True))
    op.create_table(
        "quotas",
        sa.Column("mandate_id", sa.String(128), nullable=False),
        sa.Column("feature_key", sa.String(128), nullable=False),
        sa.Column("feature_instance_id", sa.String(128), nullable=True),
        sa.Column("max_bytes", sa.BigInteger(), nullable=True),
        sa.Column("max_files", sa.BigInteger(), nullable=True),
        sa.Column("max_file_size", sa.BigInteger(), nullable=True),
        sa.Column("used_bytes", sa.BigInteger(), nullable=False),
        sa.Column("used_files", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("mandate_id", "feature_key", name="pk_quotas"),
        **MYSQL_OPTIONS,
    )

    op.create_table(
        "audit_events",
        sa.Column("seq", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("id", sa.String(128), nullable=False),
        sa.Column("at", _utc(), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("outcome", sa.String(64), nullable=False),
        sa.Column("principal", sa.String(128), nullable=True),
        sa.Column("mandate_id", sa.String(128), nullable=True),
        sa.Column("file_id", sa.String(128), nullable=True),
        sa.Column("document_id", sa.String(128), nullable=True),
        sa.Column("workflow_id", sa.String(128), nullable=True),
        sa.Column("detail", _long_text(), nullable=False),
        sa.Column("prev_hash", sa.CHAR(64), nullable=False),
        sa.Column("hash", sa.CHAR(64), nullable=False),
        sa.PrimaryKeyConstraint("seq", name="pk_audit_events"),
        **MYSQL_OPTIONS,
    )
    op.create_index("ix_audit_events_file", "audit_events", ["file_id", "seq"])
    op.create_index("ix_audit_events_principal", "audit_events", ["principal", "seq"])
    op.create_index("ix_audit_events_at", "audit_events", ["at"])
    op.create_table(
        "retention_policies",
        sa.Column("mandate_id", sa.String(128), nullable=False),
        sa.Column("feature_key", sa.String(128), nullable=False),
        sa.Column("feature_instance_id", sa.String(128), nullable=True),
        sa.Column("max_age_seconds", sa.BigInteger(), nullable=False),
        sa.Column("basis", sa.String(16), nullable=False),
        sa.PrimaryKeyConstraint("mandate_id", "feature_key", name="pk_retention_policies"),
        **MYSQL_OPTIONS,
    )
    op.create_table(
        "legal_holds",
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("target_id", sa.String(128), nullable=False),
        sa.Column("mandate_id", sa.String(128), nullable=False),
        sa.Column("reason", _long_text(), nullable=False),
        sa.Column("placed_at", _utc(), nullable=False),
        sa.PrimaryKeyConstraint("kind", "target_id", name="pk_legal_holds"),
        **MYSQL_OPTIONS,
    )
    op.create_index("ix_legal_holds_mandate", "legal_holds", ["mandate_id"])


def downgrade() -> None:
    """Drop the tables and the column (provenance, quotas, usage and the audit log are lost)."""
    op.drop_table("legal_holds")
    op.drop_table("retention_policies")
    op.drop_table("audit_events")
    op.drop_table("quotas")
    with op.batch_alter_table("file_items") as batch:
        batch.drop_column("provenance")
