"""Provider copies remember the token their uploads are named with (B22, ADR 0125).

Revision ID: 0012
Revises: 0011

Adds the nullable column ``upload_token`` to ``provider_copies``: the token the
name of every upload of the row carries at the provider, so an upload whose
answer was lost is found again by listing the provider's files. Rows written
before have none (their uploads were not marked).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the column."""
    op.add_column("provider_copies", sa.Column("upload_token", sa.String(64), nullable=True))


def downgrade() -> None:
    """Drop the column (a lost upload can then no longer be found at its provider)."""
    with op.batch_alter_table("provider_copies") as batch:
        batch.drop_column("upload_token")
