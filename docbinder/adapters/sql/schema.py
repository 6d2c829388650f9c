"""The SQL schema of the metadata store: eight tables as SQLAlchemy Core ``Table`` objects.

This module is the model that the Alembic migrations in
``docbinder/adapters/sql/migrations/versions`` must reproduce; a test compares
them with Alembic's ``compare_metadata`` on every backend.

Tables (``quotas``, ``audit_events``, ``retention_policies`` and
``legal_holds`` are described where they are defined):

``file_items``
    One row per :class:`~docbinder.domain.model.FileItem`. The scope is
    flattened to ``mandate_id`` and ``feature_instance_id``; ``tags`` is a JSON
    array in a text column; ``dedup_key`` holds
    :func:`~docbinder.domain.model.duplicate_key` for items stored with
    ``deduplicate=True`` and ``NULL`` otherwise, under a unique index, so the
    duplicate check of SPEC C2 is one index lookup. ``provenance`` is the
    :class:`~docbinder.domain.model.Provenance` as a JSON object (``NULL``: the
    producer declared nothing).
``workflows``
    One row per :class:`~docbinder.domain.model.ChatWorkflow`, plus
    ``last_sequence_nr``: the highest ``sequence_nr`` handed out in that
    workflow. Adding a message increments it with one ``UPDATE``, which also
    locks the workflow row, so concurrent writers get distinct numbers.
``chat_messages``
    One row per :class:`~docbinder.domain.model.ChatMessage`. Labels are up to
    512 characters, too long for a portable unique index on MariaDB/MySQL
    (3072 bytes per key, 4 bytes per utf8mb4 character), so the unique index is
    on ``(workflow_id, label_hash)`` where ``label_hash`` is the SHA-256 hex of
    the UTF-8 label; lookups compare the label itself too.
``extraction_cache``
    Content parts extracted from a FileItem's bytes, keyed by the bytes'
    SHA-256 and the extractor version (not a domain entity: a cache).
``chat_documents``
    One row per :class:`~docbinder.domain.model.ChatDocument`, plus the owning
    message's ``sequence_nr`` and the document's ``position`` in that message:
    ``(workflow_id, sequence_nr, position)`` is the stored order that
    ``recent_documents`` walks backwards through an index. ``file_id`` alone
    is indexed too, so ``files rm`` counts the documents that refer to a file
    with one index lookup.
``gc_marks``
    One row per FileItem whose blob ``gc`` found missing: ``gc`` removes such
    a FileItem only on a later run, after the grace period, if the blob is
    still missing (mark, then sweep). No foreign key: the FileItem's delete
    removes its mark in the same transaction.
``docbinder_meta``
    Named values of the database itself; ``database_id`` is its identity,
    which blob stores record so that ``gc`` knows when another database
    writes into the same store.
``file_versions``
    One row per version of a versioned file name (feature row B1): the
    version's FileItem id, its number, and the keys that index it.

Text on MariaDB/MySQL: every table is ``utf8mb4`` with the binary collation
``utf8mb4_bin``, so names keep 4-byte characters (emoji) and compare by code
point: ``a.txt`` and ``A.txt``, or two Unicode normalisations of one name, are
different values. ``utf8mb4_bin`` ignores trailing spaces in comparisons (PAD
SPACE); uniqueness and lookups therefore always go through the hash columns,
which differ for such names.

Datetimes are stored as UTC with microseconds (:class:`UtcDateTime`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeEngine

from docbinder.domain.model import MAX_FILE_NAME_LENGTH, MAX_LABEL_LENGTH

ID_LENGTH = 128
"""Longest id the domain accepts, in characters."""

MYSQL_TABLE_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}
"""Table options on MariaDB/MySQL (ignored by other dialects)."""

_MYSQL_DIALECTS = frozenset({"mysql", "mariadb"})


class UtcDateTime(sa.types.TypeDecorator[datetime]):
    """A timezone-aware UTC ``datetime`` with microseconds, on every backend.

    PostgreSQL stores ``timestamp with time zone``; MariaDB/MySQL
    ``DATETIME(6)`` and SQLite a text timestamp, both holding naive UTC. Values
    are converted to UTC when bound and come back as aware UTC datetimes
    (``tzinfo=datetime.UTC``). Binding a naive datetime raises ``ValueError``:
    the domain only has aware ones.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name in _MYSQL_DIALECTS:
            return dialect.type_descriptor(mysql.DATETIME(fsp=6))
        return dialect.type_descriptor(sa.DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.utcoffset() is None:
            raise ValueError("naive datetimes cannot be stored; use an aware UTC datetime")
        value = value.astimezone(UTC)
        return value if dialect.name == "postgresql" else value.replace(tzinfo=None)

    def bind_processor(self, dialect: Dialect) -> Callable[[Any], Any] | None:
        """On SQLite with SQLAlchemy's default text format, one function instead of two.

        The text is the one ``process_bind_param`` followed by SQLAlchemy's
        SQLite ``DATETIME`` processor gives (``YYYY-MM-DD HH:MM:SS.ffffff``,
        naive UTC), made by ``datetime.isoformat``; every statement of the
        producer path binds one or two of these. Other dialects, and a SQLite
        ``DATETIME`` with its own storage format, keep the composed pair.
        """
        impl = getattr(self, "impl_instance", None)
        if (
            dialect.name == "sqlite"
            and type(impl) is sqlite.DATETIME
            and getattr(impl, "_storage_format", None) == _SQLITE_DATETIME_FORMAT
        ):
            return sqlite_utc_text
        return super().bind_processor(dialect)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise ValueError(f"expected a datetime from the database, got {type(value).__name__}")
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


_SQLITE_DATETIME_FORMAT = getattr(sqlite.DATETIME, "_storage_format", None)
"""SQLAlchemy's default text format of a SQLite ``DATETIME``, which :func:`sqlite_utc_text` writes."""


def sqlite_utc_text(value: datetime | None) -> str | None:
    """An aware datetime as SQLite's default ``DATETIME`` text in UTC (see ``UtcDateTime``)."""
    if value is None:
        return None
    if value.tzinfo is not UTC:  # UTC itself needs no conversion
        if value.utcoffset() is None:
            raise ValueError("naive datetimes cannot be stored; use an aware UTC datetime")
        value = value.astimezone(UTC)
    text = value.isoformat(" ")  # "YYYY-MM-DD HH:MM:SS[.ffffff]+00:00"
    return text[:26] if value.microsecond else f"{text[:19]}.000000"


def long_text() -> TypeEngine[str]:
    """Unbounded text: ``TEXT`` everywhere, ``LONGTEXT`` on MariaDB/MySQL (whose ``TEXT`` is 64 KiB)."""
    return sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")


def label_hash(label: str) -> str:
    """SHA-256 hex (64 lowercase characters) of the UTF-8 bytes of a ``documents_label``."""
    return hashlib.sha256(label.encode("utf-8")).hexdigest()


metadata = sa.MetaData()
"""All docbinder tables; the target of the Alembic migrations."""


def _id(name: str, *args: Any, **kwargs: Any) -> sa.Column[str]:
    return sa.Column(name, sa.String(ID_LENGTH), *args, **kwargs)


file_items = sa.Table(
    "file_items",
    metadata,
    _id("id", primary_key=True),
    sa.Column("file_name", sa.String(MAX_FILE_NAME_LENGTH), nullable=False),
    sa.Column("mime_type", sa.String(255), nullable=False),
    sa.Column("size", sa.BigInteger(), nullable=False),
    sa.Column("sha256", sa.CHAR(64), nullable=False),
    _id("created_by", nullable=False),
    _id("mandate_id", nullable=False),
    _id("feature_instance_id", nullable=True),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("blob_key", sa.String(255), nullable=False),
    sa.Column("folder", long_text(), nullable=True),
    sa.Column("tags", long_text(), nullable=False),
    sa.Column("dedup_key", sa.CHAR(64), nullable=True),
    _id("blob_store", nullable=True),
    sa.Column("provenance", long_text(), nullable=True),
    sa.PrimaryKeyConstraint("id", name="pk_file_items"),
    sa.Index("uq_file_items_dedup_key", "dedup_key", unique=True),
    sa.Index("ix_file_items_mandate_created", "mandate_id", "created_at"),
    **MYSQL_TABLE_OPTIONS,
)

workflows = sa.Table(
    "workflows",
    metadata,
    _id("id", primary_key=True),
    _id("mandate_id", nullable=False),
    _id("feature_instance_id", nullable=True),
    _id("created_by", nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("status", sa.String(255), nullable=False),
    sa.Column("current_round", sa.Integer(), nullable=False),
    sa.Column("current_task", sa.Integer(), nullable=False),
    sa.Column("current_action", sa.Integer(), nullable=False),
    sa.Column("last_sequence_nr", sa.Integer(), nullable=False, server_default=sa.text("0")),
    sa.PrimaryKeyConstraint("id", name="pk_workflows"),
    sa.Index("ix_workflows_mandate_created", "mandate_id", "created_at"),
    **MYSQL_TABLE_OPTIONS,
)

chat_messages = sa.Table(
    "chat_messages",
    metadata,
    _id("id", primary_key=True),
    _id("workflow_id", nullable=False),
    sa.Column("documents_label", sa.String(MAX_LABEL_LENGTH), nullable=False),
    sa.Column("label_hash", sa.CHAR(64), nullable=False),
    sa.Column("published_at", UtcDateTime(), nullable=False),
    sa.Column("role", sa.String(255), nullable=False),
    sa.Column("status", sa.String(255), nullable=False),
    sa.Column("message", long_text(), nullable=False),
    sa.Column("round_number", sa.Integer(), nullable=False),
    sa.Column("task_number", sa.Integer(), nullable=False),
    sa.Column("action_number", sa.Integer(), nullable=False),
    sa.Column("sequence_nr", sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint("id", name="pk_chat_messages"),
    sa.ForeignKeyConstraint(
        ["workflow_id"], ["workflows.id"], name="fk_chat_messages_workflow_id_workflows"
    ),
    sa.Index("uq_chat_messages_label", "workflow_id", "label_hash", unique=True),
    sa.Index("ix_chat_messages_sequence", "workflow_id", "sequence_nr"),
    **MYSQL_TABLE_OPTIONS,
)

chat_documents = sa.Table(
    "chat_documents",
    metadata,
    _id("id", primary_key=True),
    _id("message_id", nullable=False),
    _id("workflow_id", nullable=False),
    _id("file_id", nullable=False),
    sa.Column("file_name", sa.String(MAX_FILE_NAME_LENGTH), nullable=False),
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
    sa.Index("ix_chat_documents_order", "workflow_id", "sequence_nr", "position"),
    sa.Index("ix_chat_documents_file", "workflow_id", "file_id"),
    sa.Index("ix_chat_documents_message", "message_id", "position"),
    sa.Index("ix_chat_documents_file_id", "file_id"),
    **MYSQL_TABLE_OPTIONS,
)

gc_marks = sa.Table(
    "gc_marks",
    metadata,
    _id("file_id", primary_key=True),
    sa.Column("blob_key", sa.String(255), nullable=False),
    sa.Column("marked_at", UtcDateTime(), nullable=False),
    sa.PrimaryKeyConstraint("file_id", name="pk_gc_marks"),
    **MYSQL_TABLE_OPTIONS,
)

docbinder_meta = sa.Table(
    "docbinder_meta",
    metadata,
    sa.Column("name", sa.String(64), nullable=False),
    sa.Column("value", sa.String(ID_LENGTH), nullable=False),
    sa.PrimaryKeyConstraint("name", name="pk_docbinder_meta"),
    **MYSQL_TABLE_OPTIONS,
)

file_versions = sa.Table(
    "file_versions",
    metadata,
    _id("file_id", primary_key=True),
    _id("mandate_id", nullable=False),
    _id("feature_instance_id", nullable=True),
    sa.Column("namespace", long_text(), nullable=False),
    sa.Column("series_name", sa.String(MAX_FILE_NAME_LENGTH), nullable=False),
    sa.Column("series_key", sa.CHAR(64), nullable=False),
    sa.Column("space_key", sa.CHAR(64), nullable=False),
    sa.Column("version", sa.Integer(), nullable=False),
    sa.Column("user_metadata", long_text(), nullable=False),
    sa.Column("host_data", long_text(), nullable=False),
    sa.PrimaryKeyConstraint("file_id", name="pk_file_versions"),
    sa.Index("uq_file_versions_series", "series_key", "version", unique=True),
    sa.Index("ix_file_versions_space", "space_key", "series_key"),
    **MYSQL_TABLE_OPTIONS,
)
"""One row per :class:`~docbinder.domain.model.FileVersion` (feature row B1, ADR 0013).

``file_id`` is the version's FileItem. ``series_key`` / ``space_key`` are
:attr:`VersionSeries.key` / :attr:`VersionSeries.space_key`: the unique index
on ``(series_key, version)`` makes version numbers race-free (a second insert
of one number fails) and finds the latest version by walking the index
backwards; ``(space_key, series_key)`` lists the names of one namespace.
"""


def long_binary() -> TypeEngine[bytes]:
    """Unbounded bytes: ``BYTEA``/``BLOB``, ``LONGBLOB`` on MariaDB/MySQL (whose ``BLOB`` is 64 KiB)."""
    return sa.LargeBinary().with_variant(mysql.LONGBLOB(), "mysql", "mariadb")


extraction_cache = sa.Table(
    "extraction_cache",
    metadata,
    sa.Column("sha256", sa.CHAR(64), nullable=False),
    sa.Column("version_key", sa.CHAR(64), nullable=False),
    sa.Column("version", long_text(), nullable=False),
    sa.Column("payload", long_binary(), nullable=False),
    sa.Column("size", sa.BigInteger(), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("used_at", UtcDateTime(), nullable=False),
    sa.PrimaryKeyConstraint("sha256", "version_key", name="pk_extraction_cache"),
    sa.Index("ix_extraction_cache_used", "used_at"),
    **MYSQL_TABLE_OPTIONS,
)
"""Cached content parts by FileItem content hash and extractor version (feature B10).

``version_key`` is the SHA-256 hex of the extractor's version string (kept in
``version`` for diagnostics); ``payload`` is the encoded parts, ``size`` its
length in bytes (for the size bound); ``used_at`` orders eviction.
"""

link_marks = sa.Table(
    "link_marks",
    metadata,
    sa.Column("link_id", sa.String(64), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("expires_at", UtcDateTime(), nullable=False),
    sa.Column("marked_at", UtcDateTime(), nullable=False),
    sa.PrimaryKeyConstraint("link_id", "kind", name="pk_link_marks"),
    sa.Index("ix_link_marks_expires", "expires_at"),
    **MYSQL_TABLE_OPTIONS,
)
"""Revoked and used signed links (feature row B4): ``kind`` is ``revoked`` or ``used``.

The primary key makes a one-time link's redemption race-free (a second insert of
``(link_id, "used")`` fails); ``expires_at`` lets expired marks be pruned.
"""

resolution_log = sa.Table(
    "resolution_log",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True),
    _id("workflow_id", nullable=False),
    sa.Column("recorded_at", UtcDateTime(), nullable=False),
    sa.Column("record", long_text(), nullable=False),
    sa.PrimaryKeyConstraint("id", name="pk_resolution_log"),
    sa.Index("ix_resolution_log_workflow", "workflow_id", "id"),
    **MYSQL_TABLE_OPTIONS,
)
"""The recent resolutions of each workflow (the inspector page), bounded per workflow.

``record`` is the JSON of a :class:`~docbinder.domain.resolutions.ResolutionRecord`;
rows beyond the bound are deleted by the writer, oldest ``id`` first.
"""
quotas = sa.Table(
    "quotas",
    metadata,
    _id("mandate_id", nullable=False),
    _id("feature_key", nullable=False),
    _id("feature_instance_id", nullable=True),
    sa.Column("max_bytes", sa.BigInteger(), nullable=True),
    sa.Column("max_files", sa.BigInteger(), nullable=True),
    sa.Column("max_file_size", sa.BigInteger(), nullable=True),
    sa.Column("used_bytes", sa.BigInteger(), nullable=False),
    sa.Column("used_files", sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint("mandate_id", "feature_key", name="pk_quotas"),
    **MYSQL_TABLE_OPTIONS,
)
"""One row per :class:`~docbinder.domain.governance.Quota` (feature row B12, ADR 0090).

``feature_key`` is the feature instance id, or ``''`` for the quota of the
whole mandate (a primary key cannot hold ``NULL``). The row holds the limits
and the usage together: an add locks the rows of its mandate and feature
instance (``SELECT ... FOR UPDATE``; SQLite's writing unit holds the write lock
already), checks them and adds its size in the same transaction, so
concurrent writers of one scope queue on that row and never overshoot.
"""

audit_events = sa.Table(
    "audit_events",
    metadata,
    sa.Column("seq", sa.BigInteger(), autoincrement=False, nullable=False),
    _id("id", nullable=False),
    sa.Column("at", UtcDateTime(), nullable=False),
    sa.Column("action", sa.String(32), nullable=False),
    sa.Column("outcome", sa.String(64), nullable=False),
    _id("principal", nullable=True),
    _id("mandate_id", nullable=True),
    _id("file_id", nullable=True),
    _id("document_id", nullable=True),
    _id("workflow_id", nullable=True),
    sa.Column("detail", long_text(), nullable=False),
    sa.Column("prev_hash", sa.CHAR(64), nullable=False),
    sa.Column("hash", sa.CHAR(64), nullable=False),
    sa.PrimaryKeyConstraint("seq", name="pk_audit_events"),
    sa.Index("ix_audit_events_file", "file_id", "seq"),
    **MYSQL_TABLE_OPTIONS,
)
"""One row per :class:`~docbinder.domain.audit.AuditEvent`, in chain order (B11, ADR 0092).

``seq`` is the event's place in the store's one chain; the head (``seq`` and
hash of the newest event) is the ``docbinder_meta`` row ``audit_head``, locked
by every append, so appends are serialized and the chain has no forks.
``audit_anchor`` holds the last event pruned by the log's retention. The
only secondary index is by file (``audit ls --file``, retention's last
reads): each event is written in the transaction of the write it records,
and every index is one more B-tree that write updates (ADR 0095).
"""

retention_policies = sa.Table(
    "retention_policies",
    metadata,
    _id("mandate_id", nullable=False),
    _id("feature_key", nullable=False),
    _id("feature_instance_id", nullable=True),
    sa.Column("max_age_seconds", sa.BigInteger(), nullable=False),
    sa.Column("basis", sa.String(16), nullable=False),
    sa.Column("set_at", UtcDateTime(), nullable=True),
    sa.PrimaryKeyConstraint("mandate_id", "feature_key", name="pk_retention_policies"),
    **MYSQL_TABLE_OPTIONS,
)
"""One row per :class:`~docbinder.domain.governance.RetentionPolicy` (B5); ``feature_key`` as in ``quotas``.

``set_at`` is when the policy was set (``NULL``: not known; migration 0013
gives rows counting from the last read the time of the upgrade)."""

legal_holds = sa.Table(
    "legal_holds",
    metadata,
    sa.Column("kind", sa.String(16), nullable=False),
    _id("target_id", nullable=False),
    _id("mandate_id", nullable=False),
    sa.Column("reason", long_text(), nullable=False),
    sa.Column("placed_at", UtcDateTime(), nullable=False),
    sa.PrimaryKeyConstraint("kind", "target_id", name="pk_legal_holds"),
    sa.Index("ix_legal_holds_mandate", "mandate_id"),
    **MYSQL_TABLE_OPTIONS,
)
"""One row per :class:`~docbinder.domain.governance.LegalHold` (B5): a file or a workflow held."""

provider_copies = sa.Table(
    "provider_copies",
    metadata,
    sa.Column("sha256", sa.CHAR(64), nullable=False),
    sa.Column("provider", sa.String(16), nullable=False),
    _id("account", nullable=False),
    _id("mandate_id", nullable=False),
    _id("feature_key", nullable=False),
    _id("feature_instance_id", nullable=True),
    sa.Column("state", sa.String(16), nullable=False),
    _id("claim", nullable=False),
    sa.Column("claimed_at", UtcDateTime(), nullable=False),
    sa.Column("file_id", sa.String(1024), nullable=True),
    sa.Column("uri", sa.String(1024), nullable=True),
    sa.Column("uploaded_at", UtcDateTime(), nullable=True),
    sa.Column("expires_at", UtcDateTime(), nullable=True),
    sa.Column("size", sa.BigInteger(), nullable=False),
    sa.Column("upload_token", sa.String(64), nullable=True),
    sa.PrimaryKeyConstraint(
        "sha256", "provider", "account", "mandate_id", "feature_key", name="pk_provider_copies"
    ),
    sa.Index("ix_provider_copies_state", "state", "claimed_at"),
    **MYSQL_TABLE_OPTIONS,
)
"""One row per :class:`~docbinder.domain.providers.ProviderCopy` (B22, ADR 0105).

The primary key is the whole :class:`~docbinder.domain.providers.ProviderCopyKey`
(``feature_key`` as in ``quotas``): the row is the upload's lock, inserted by the
one caller that uploads. ``upload_token`` (revision 0012, ADR 0125) is what the
names of the row's uploads carry at the provider.
"""

inline_blobs = sa.Table(
    "inline_blobs",
    metadata,
    sa.Column("blob_key", sa.String(255), nullable=False),
    sa.Column("data", long_binary(), nullable=False),
    sa.Column("size", sa.BigInteger(), nullable=False),
    sa.Column("origin", sa.String(255), nullable=True),
    sa.Column("committed", sa.SmallInteger(), nullable=False),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.PrimaryKeyConstraint("blob_key", name="pk_inline_blobs"),
    **MYSQL_TABLE_OPTIONS,
)
"""The inline tier of the blob store (ADR 0110): blobs up to ``inline_blob_limit`` bytes.

``data`` holds the bytes (``size`` of them), ``origin`` the provenance mark,
``committed`` 1 once a FileItem naming the blob committed (ADR 0031; a file's
own store sets it in the transaction that inserts the row), ``created_at``
when it was written (the blob's modification time, for ``gc``'s grace period).
"""

TABLES: tuple[sa.Table, ...] = (
    file_items,
    workflows,
    chat_messages,
    chat_documents,
    gc_marks,
    docbinder_meta,
    file_versions,
    extraction_cache,
    link_marks,
    resolution_log,
    quotas,
    audit_events,
    retention_policies,
    legal_holds,
    provider_copies,
    inline_blobs,
)
"""Every table, parents before children (the order to create; reverse it to delete)."""
