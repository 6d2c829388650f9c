"""Initial schema: file_items, workflows, chat_messages, chat_documents.

Revision ID: 0001
Revises:

Frozen copy of :mod:`docbinder.adapters.sql.schema` at this revision (a
migration never imports the live model). Column types: ids ``VARCHAR(128)``;
datetimes ``timestamp with time zone`` on PostgreSQL, ``DATETIME(6)`` on
MariaDB/MySQL, text on SQLite (UTC); unbounded text ``LONGTEXT`` on
MariaDB/MySQL. Tables on MariaDB/MySQL are InnoDB, utf8mb4, utf8mb4_bin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MYSQL_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}


def _id() -> sa.String:
    return sa.String(128)


def _utc() -> sa.types.TypeEngine[Any]:
    return sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def _text() -> sa.types.TypeEngine[str]:
    return sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")


def upgrade() -> None:
    """Create the four tables and their indexes."""
    op.create_table(
        "file_items",
        sa.Column("id", _id(), nullable=False),
        sa.Column("file_name", sa.String(1024), nullable=False),
        sa.Column("mime_type", sa.String(255), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.CHAR(64), nullable=False),
        sa.Column("created_by", _id(), nullable=False),
        sa.Column("mandate_id", _id(), nullable=False),
        sa.Column("feature_instance_id", _id(), nullable=True),
        sa.Column("created_at", _utc(), nullable=False),
        sa.Column("blob_key", sa.String(255), nullable=False),
        sa.Column("folder", _text(), nullable=True),
        sa.Column("tags", _text(), nullable=False),
        sa.Column("dedup_key", sa.CHAR(64), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_file_items"),
        **MYSQL_OPTIONS,
    )
    op.create_index("uq_file_items_dedup_key", "file_items", ["dedup_key"], unique=True)
    op.create_index("ix_file_items_mandate_created", "file_items", ["mandate_id", "created_at"])

    op.create_table(
        "workflows",
        sa.Column("id", _id(), nullable=False),
        sa.Column("mandate_id", _id(), nullable=False),
        sa.Column("feature_instance_id", _id(), nullable=True),
        sa.Column("created_by", _id(), nullable=False),
        sa.Column("created_at", _utc(), nullable=False),
        sa.Column("status", sa.String(255), nullable=False),
        sa.Column("current_round", sa.Integer(), nullable=False),
        sa.Column("current_task", sa.Integer(), nullable=False),
        sa.Column("current_action", sa.Integer(), nullable=False),
        sa.Column("last_sequence_nr", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.PrimaryKeyConstraint("id", name="pk_workflows"),
        **MYSQL_OPTIONS,
    )
    op.create_index("ix_workflows_mandate_created", "workflows", ["mandate_id", "created_at"])

    op.create_table(
        "chat_messages",
        sa.Column("id", _id(), nullable=False),
        sa.Column("workflow_id", _id(), nullable=False),
        sa.Column("documents_label", sa.String(512), nullable=False),
        sa.Column("label_hash", sa.CHAR(64), nullable=False),
        sa.Column("published_at", _utc(), nullable=False),
        sa.Column("role", sa.String(255), nullable=False),
        sa.Column("status", sa.String(255), nullable=False),
        sa.Column("message", _text(), nullable=False),
        sa.Column("round_number", sa.Integer(), nullable=False),
        sa.Column("task_number", sa.Integer(), nullable=False),
        sa.Column("action_number", sa.Integer(), nullable=False),
        sa.Column("sequence_nr", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_chat_messages"),
        sa.ForeignKeyConstraint(
            ["workflow_id"], ["workflows.id"], name="fk_chat_messages_workflow_id_workflows"
        ),
        **MYSQL_OPTIONS,
    )
    op.create_index(
        "uq_chat_messages_label", "chat_messages", ["workflow_id", "label_hash"], unique=True
    )
    op.create_index("ix_chat_messages_sequence", "chat_messages", ["workflow_id", "sequence_nr"])

    op.create_table(
        "chat_documents",
        sa.Column("id", _id(), nullable=False),
        sa.Column("message_id", _id(), nullable=False),
        sa.Column("workflow_id", _id(), nullable=False),
        sa.Column("file_id", _id(), nullable=False),
        sa.Column("file_name", sa.String(1024), nullable=False),
        sa.Column("file_size", sa.BigInteger(), nullable=False),
        sa.Column("mime_type", sa.String(255), nullable=False),
        sa.Column("round_number", sa.Integer(), nullable=False),
        sa.Column("task_number", sa.Integer(), nullable=False),
        sa.Column("action_number", sa.Integer(), nullable=False),
        sa.Column("sequence_nr", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_chat_documents"),
        sa.ForeignKeyConstraint(
            ["message_id"], ["chat_messages.id"], name="fk_chat_documents_message_id_chat_messages"
        ),
        sa.ForeignKeyConstraint(
            ["workflow_id"], ["workflows.id"], name="fk_chat_documents_workflow_id_workflows"
        ),
        **MYSQL_OPTIONS,
    )
    op.create_index(
        "ix_chat_documents_order", "chat_documents", ["workflow_id", "sequence_nr", "position"]
    )
    op.create_index("ix_chat_documents_file", "chat_documents", ["workflow_id", "file_id"])
    op.create_index("ix_chat_documents_message", "chat_documents", ["message_id", "position"])


def downgrade() -> None:
    """Drop the four tables (and every row in them)."""
    op.drop_table("chat_documents")
    op.drop_table("chat_messages")
    op.drop_table("workflows")
    op.drop_table("file_items")
