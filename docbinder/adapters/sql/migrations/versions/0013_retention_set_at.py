"""Retention policies remember when they were set (B5, ADR 0142).

Revision ID: 0013
Revises: 0012

Adds the nullable column ``set_at`` to ``retention_policies``. A policy that
counts from the last read lets no file expire sooner than its maximum age
after ``set_at``: reads made before it existed may not be in the audit log.
Rows counting from the last read that exist at the upgrade get its time (the
time they were set is not known, and a later one only delays expiry); rows
counting from creation keep ``NULL``, which they do not need.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _utc() -> sa.types.TypeEngine[Any]:
    return sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def upgrade() -> None:
    """Add the column; policies counting from the last read are stamped with the upgrade's time."""
    op.add_column("retention_policies", sa.Column("set_at", _utc(), nullable=True))
    now = datetime.now(UTC)
    if op.get_bind().dialect.name != "postgresql":
        now = now.replace(tzinfo=None)  # MariaDB DATETIME(6) and SQLite's text hold naive UTC
    policies = sa.table("retention_policies", sa.column("basis"), sa.column("set_at", _utc()))
    op.execute(policies.update().where(policies.c.basis == "last_read").values(set_at=now))


def downgrade() -> None:
    """Drop the column (policies counting from the last read then count from before they were set)."""
    with op.batch_alter_table("retention_policies") as batch:
        batch.drop_column("set_at")
