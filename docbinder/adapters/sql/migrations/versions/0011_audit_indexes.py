"""The audit log keeps one secondary index: by file (B11, ADR 0095).

Revision ID: 0011
Revises: 0010

Drops ``ix_audit_events_principal`` and ``ix_audit_events_at``: every event
went into four B-trees (the key and three indexes) inside the transaction of
the write it records. ``audit ls --user`` / ``--since`` and ``audit prune``
read the log in ``seq`` order instead (operator commands); the index by file
stays, for ``audit ls --file`` and the last reads of retention.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Drop the two indexes."""
    op.drop_index("ix_audit_events_principal", table_name="audit_events")
    op.drop_index("ix_audit_events_at", table_name="audit_events")


def downgrade() -> None:
    """Create them again."""
    op.create_index("ix_audit_events_principal", "audit_events", ["principal", "seq"])
    op.create_index("ix_audit_events_at", "audit_events", ["at"])
