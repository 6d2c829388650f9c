"""Inline blobs in table ``inline_blobs`` on ``sqlite3``: the :class:`~docbinder.ports.metadata.InlineBlobRepository` (ADR 0110).

A writing SQLite unit holds the database's write lock from its first write,
so a put (``INSERT ... ON CONFLICT DO UPDATE``) and the FileItem insert of the
same unit commit with one WAL sync.
"""

from __future__ import annotations

import builtins
from datetime import UTC, datetime

from docbinder.adapters.sql.schema import sqlite_utc_text
from docbinder.adapters.sqlite.session import SqliteSession, translating
from docbinder.ports.metadata import InlineBlobInfo

_PUT = (
    "INSERT INTO inline_blobs (blob_key, data, size, origin, committed, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (blob_key) DO UPDATE SET data = excluded.data, "
    "size = excluded.size, origin = excluded.origin, committed = excluded.committed, "
    "created_at = excluded.created_at"
)
_GET = "SELECT data FROM inline_blobs WHERE blob_key = ?"
_STAT = "SELECT size, created_at, origin, committed FROM inline_blobs WHERE blob_key = ?"
_COMMIT = "UPDATE inline_blobs SET committed = 1 WHERE blob_key = ?"
_DELETE = "DELETE FROM inline_blobs WHERE blob_key = ?"
_KEYS = "SELECT blob_key FROM inline_blobs"
_TOTALS = "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM inline_blobs"


def _utc(text: str) -> datetime:
    """SQLite ``DATETIME`` text (naive UTC, as :func:`sqlite_utc_text` writes it) as an aware datetime."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


class SqliteInlineBlobRepository:
    """Inline blobs in table ``inline_blobs``; see the port for the contract."""

    def __init__(self, session: SqliteSession) -> None:
        self._session = session

    def put(
        self, key: str, data: bytes, origin: str | None, at: datetime, *, committed: bool
    ) -> None:
        row = (key, bytes(data), len(data), origin, 1 if committed else 0, sqlite_utc_text(at))
        with translating():
            self._session.execute(_PUT, row)

    def get(self, key: str) -> bytes | None:
        with translating():
            row = self._session.one(_GET, (key,))
        return None if row is None else bytes(row[0])

    def stat(self, key: str) -> InlineBlobInfo | None:
        with translating():
            row = self._session.one(_STAT, (key,))
        if row is None:
            return None
        size, at, origin, committed = row
        return InlineBlobInfo(int(size), _utc(at), origin, bool(committed))

    def mark_committed(self, key: str) -> bool:
        with translating():
            return self._session.rowcount(_COMMIT, (key,)) > 0

    def delete(self, key: str) -> bool:
        with translating():
            return self._session.rowcount(_DELETE, (key,)) > 0

    def keys(self) -> builtins.list[str]:
        with translating():
            return [str(row[0]) for row in self._session.all(_KEYS)]

    def totals(self) -> tuple[int, int]:
        with translating():
            row = self._session.one(_TOTALS)
        assert row is not None  # an aggregate always answers one row
        return int(row[0]), int(row[1])
