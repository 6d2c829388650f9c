"""Inline blobs in table ``inline_blobs``: the SQL :class:`~docbinder.ports.metadata.InlineBlobRepository` (ADR 0110).

PostgreSQL and MariaDB. A put is one upsert (``INSERT ... ON CONFLICT DO
UPDATE`` / ``ON DUPLICATE KEY UPDATE``), so two units putting one key at once
end with one of the two blobs whole, never a failed insert.
"""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql, postgresql

from docbinder.adapters.sql.errors import translating
from docbinder.adapters.sql.queries import rowcount
from docbinder.adapters.sql.schema import inline_blobs
from docbinder.adapters.sql.session import SqlSession
from docbinder.ports.metadata import InlineBlobInfo

_B = inline_blobs.c
_GET = sa.select(_B.data).where(_B.blob_key == sa.bindparam("key"))
_STAT = sa.select(_B.size, _B.created_at, _B.origin, _B.committed).where(
    _B.blob_key == sa.bindparam("key")
)
_COMMIT = (
    sa.update(inline_blobs)
    .where(_B.blob_key == sa.bindparam("key"))
    .values(committed=sa.literal(1, sa.SmallInteger()))
)
_DELETE = sa.delete(inline_blobs).where(_B.blob_key == sa.bindparam("key"))
_KEYS = sa.select(_B.blob_key)
_TOTALS = sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(_B.size), 0))
_VALUES = ("data", "size", "origin", "committed", "created_at")


def _upsert(dialect_name: str) -> Any:
    """The upsert of one row for ``dialect_name`` (PostgreSQL or MariaDB/MySQL)."""
    if dialect_name == "postgresql":
        insert = postgresql.insert(inline_blobs)
        return insert.on_conflict_do_update(
            index_elements=[_B.blob_key],
            set_={name: insert.excluded[name] for name in _VALUES},
        )
    insert_my = mysql.insert(inline_blobs)
    return insert_my.on_duplicate_key_update({name: insert_my.inserted[name] for name in _VALUES})


class SqlInlineBlobRepository:
    """Inline blobs in table ``inline_blobs``; see the port for the contract."""

    def __init__(self, session: SqlSession) -> None:
        self._session = session

    def put(
        self, key: str, data: bytes, origin: str | None, at: datetime, *, committed: bool
    ) -> None:
        row = {
            "blob_key": key,
            "data": bytes(data),
            "size": len(data),
            "origin": origin,
            "committed": 1 if committed else 0,
            "created_at": at,
        }
        with translating():
            self._session.execute(_upsert(self._session.dialect.name), row)

    def get(self, key: str) -> bytes | None:
        with translating():
            value = self._session.execute(_GET, {"key": key}).scalar()
        return None if value is None else bytes(value)

    def stat(self, key: str) -> InlineBlobInfo | None:
        with translating():
            row = self._session.execute(_STAT, {"key": key}).first()
        if row is None:
            return None
        return InlineBlobInfo(int(row.size), row.created_at, row.origin, bool(row.committed))

    def mark_committed(self, key: str) -> bool:
        with translating():
            if rowcount(self._session.execute(_COMMIT, {"key": key})) > 0:
                return True
            # MariaDB counts changed rows only: a row already marked matches nothing.
            return self._session.execute(_STAT, {"key": key}).first() is not None

    def delete(self, key: str) -> bool:
        with translating():
            return rowcount(self._session.execute(_DELETE, {"key": key})) > 0

    def keys(self) -> builtins.list[str]:
        with translating():
            return [str(key) for key in self._session.execute(_KEYS).scalars()]

    def totals(self) -> tuple[int, int]:
        with translating():
            row = self._session.execute(_TOTALS).one()
        return int(row[0]), int(row[1])
