"""SQL :class:`~docbinder.ports.extractor.ExtractionCache`: the ``extraction_cache`` table.

Rows are keyed by ``(sha256, version_key)`` where ``version_key`` is the
SHA-256 hex of the extractor version string. Eviction is least recently used
by ``used_at``, which a hit refreshes only when it is older than
:data:`TOUCH_AFTER_SECONDS` (so a read rarely writes). Each call is its own
short transaction on the store's engine; SQLAlchemy errors become
:class:`~docbinder.domain.errors.StorageError`, and two writers storing the
same key at once are not an error (the first row stays).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Final

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine

from docbinder.adapters.cache_bounds import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ENTRIES,
    check_bounds,
)
from docbinder.adapters.sql.engine import SQLITE_BEGIN_OPTION, install_sqlite_hooks
from docbinder.adapters.sql.errors import storage_error
from docbinder.adapters.sql.schema import extraction_cache as table

TOUCH_AFTER_SECONDS: Final = 3600
"""A hit refreshes ``used_at`` only when it is older than this (seconds)."""

_BATCH: Final = 500


def version_key(version: str) -> str:
    """SHA-256 hex of the UTF-8 extractor version string (fixed width for the primary key)."""
    return hashlib.sha256(version.encode("utf-8", "surrogatepass")).hexdigest()


class SqlExtractionCache:
    """The extraction cache in the metadata database; bounded by entries and payload bytes.

    ``engine`` is the metadata store's engine (``SqlMetadata.engine``), already
    migrated. Thread-safe.
    """

    def __init__(
        self,
        engine: Engine,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        check_bounds(max_entries, max_bytes)
        install_sqlite_hooks(engine)
        self._engine = engine
        self._reader = engine.execution_options(**{SQLITE_BEGIN_OPTION: "DEFERRED"})
        self.max_entries = max_entries
        self.max_bytes = max_bytes

    def get(self, sha256: str, version: str) -> bytes | None:
        """The payload for ``(sha256, version)``, or ``None``."""
        key = version_key(version)
        now = datetime.now(UTC)
        where = sa.and_(table.c.sha256 == sha256, table.c.version_key == key)
        try:
            with self._reader.begin() as conn:
                row = conn.execute(sa.select(table.c.payload, table.c.used_at).where(where)).first()
        except sa_exc.SQLAlchemyError as exc:
            raise storage_error(exc) from exc
        if row is None:
            return None
        if row.used_at < now - timedelta(seconds=TOUCH_AFTER_SECONDS):
            try:
                with self._engine.begin() as conn:
                    conn.execute(sa.update(table).where(where).values(used_at=now))
            except sa_exc.SQLAlchemyError:
                pass  # recency is a hint for eviction; a busy database may skip it
        return bytes(row.payload)

    def put(self, sha256: str, version: str, payload: bytes) -> None:
        """Store ``payload`` (a payload over ``max_bytes`` is not stored), then evict."""
        if len(payload) > self.max_bytes:
            return
        key = version_key(version)
        now = datetime.now(UTC)
        try:
            with self._engine.begin() as conn:
                conn.execute(
                    sa.delete(table).where(table.c.sha256 == sha256, table.c.version_key == key)
                )
                conn.execute(
                    sa.insert(table).values(
                        sha256=sha256,
                        version_key=key,
                        version=version,
                        payload=payload,
                        size=len(payload),
                        created_at=now,
                        used_at=now,
                    )
                )
        except sa_exc.IntegrityError:
            return  # another writer stored the same key first: its row is as good
        except sa_exc.SQLAlchemyError as exc:
            raise storage_error(exc) from exc
        self._evict()

    def _evict(self) -> None:
        """Delete least recently used rows until both bounds hold."""
        try:
            with self._engine.begin() as conn:
                count, total = conn.execute(
                    sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(table.c.size), 0))
                ).one()
                if count <= self.max_entries and total <= self.max_bytes:
                    return
                rows = conn.execute(
                    sa.select(table.c.sha256, table.c.version_key, table.c.size).order_by(
                        table.c.used_at, table.c.sha256
                    )
                )
                doomed: list[tuple[str, str]] = []
                for row in rows:
                    if count <= self.max_entries and total <= self.max_bytes:
                        break
                    doomed.append((row.sha256, row.version_key))
                    count -= 1
                    total -= row.size
                rows.close()
                for sha, vkey in doomed:
                    conn.execute(
                        sa.delete(table).where(table.c.sha256 == sha, table.c.version_key == vkey)
                    )
        except sa_exc.SQLAlchemyError as exc:
            raise storage_error(exc) from exc

    def hashes(self) -> set[str]:
        """The content hashes that have at least one entry."""
        try:
            with self._reader.begin() as conn:
                return {row[0] for row in conn.execute(sa.select(table.c.sha256).distinct())}
        except sa_exc.SQLAlchemyError as exc:
            raise storage_error(exc) from exc

    def remove(self, sha256s: Iterable[str]) -> int:
        """Remove every entry of the given hashes; return how many rows went."""
        doomed = sorted(set(sha256s))
        removed = 0
        try:
            with self._engine.begin() as conn:
                for start in range(0, len(doomed), _BATCH):
                    batch = doomed[start : start + _BATCH]
                    result = conn.execute(sa.delete(table).where(table.c.sha256.in_(batch)))
                    removed += result.rowcount or 0
        except sa_exc.SQLAlchemyError as exc:
            raise storage_error(exc) from exc
        return removed
