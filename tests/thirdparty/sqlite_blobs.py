"""A third-party blob store, written as a separate package would write it (docs/backends.md).

:class:`SqliteBlobStore` keeps every blob in one SQLite file (the standard
library's :mod:`sqlite3`), as rows of at most 256 KiB. It uses only docbinder's
public port (:mod:`docbinder.ports.blobs`) and errors (:mod:`docbinder.domain.errors`);
nothing here is imported by docbinder. Its URL is ``sqliteblob:///<absolute path>``
and :func:`from_url` is the callable its distribution registers::

    [project.entry-points."docbinder.blob_stores"]
    sqliteblob = "thirdparty.sqlite_blobs:from_url"
"""

from __future__ import annotations

import sqlite3
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Self
from urllib.parse import unquote, urlsplit

from docbinder.domain.errors import BlobMissing, ConfigurationError, InvalidInput, StorageError
from docbinder.ports.blobs import BlobStat, Chunks, check_blob_key, iter_chunks

SCHEME = "sqliteblob"
ROW_BYTES = 256 * 1024
"""Bytes per stored row: input chunks are re-cut to this size."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS blobs (
    key TEXT PRIMARY KEY, content_id TEXT NOT NULL, size INTEGER NOT NULL, modified_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS parts (
    content_id TEXT NOT NULL, seq INTEGER NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (content_id, seq)
);
CREATE TABLE IF NOT EXISTS store (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS databases (id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS committed (key TEXT PRIMARY KEY);
"""


def from_url(url: str) -> SqliteBlobStore:
    """The entry point: ``sqliteblob:///<absolute path of the database file>``.

    docbinder passes the ``blob_url`` setting unchanged. Raises
    :class:`ConfigurationError` for another scheme or a URL without a path.
    """
    parts = urlsplit(url)
    if parts.scheme != SCHEME or parts.netloc not in ("", "localhost") or not parts.path:
        raise ConfigurationError(f"blob_url must be {SCHEME}:///<path>, got {url!r}")
    return SqliteBlobStore(Path(unquote(parts.path)))


class SqliteBlobStore:
    """:class:`~docbinder.ports.blobs.BlobStore` in one SQLite file (WAL mode).

    ``put`` writes the new content under a fresh content id inside one
    transaction and switches the key to it at the end, so a failing input
    leaves nothing. ``open`` reads inside its own read transaction: a snapshot,
    unaffected by later writes. Safe for threads (one connection per call).
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._schema_ready = False
        self._schema_lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"{SCHEME}://{self.path.absolute().as_posix()}"

    # -- connections ------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            with self._schema_lock:
                if not self._schema_ready:
                    # WAL is a property of the file: set once. Switching to it needs the
                    # file to itself and SQLite answers "locked" at once, without waiting,
                    # when another connection of this store is open meanwhile.
                    conn.execute("PRAGMA journal_mode=WAL")
                    conn.executescript(_SCHEMA)
                    self._schema_ready = True
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(f"{self.url}: {exc}") from exc
        return conn

    # -- the port ---------------------------------------------------------------

    def put(self, key: str, data: Chunks | BinaryIO) -> int:
        check_blob_key(key)
        content_id = uuid.uuid4().hex
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
            size = seq = 0
            pending = bytearray()
            for chunk in iter_chunks(data):
                pending += chunk
                size += len(chunk)
                while len(pending) >= ROW_BYTES:
                    self._insert(conn, content_id, seq, bytes(pending[:ROW_BYTES]))
                    del pending[:ROW_BYTES]
                    seq += 1
            if pending:
                self._insert(conn, content_id, seq, bytes(pending))
            old = conn.execute("SELECT content_id FROM blobs WHERE key = ?", (key,)).fetchone()
            if old is not None:
                conn.execute("DELETE FROM parts WHERE content_id = ?", (old[0],))
            conn.execute("DELETE FROM committed WHERE key = ?", (key,))  # a new blob
            conn.execute(
                "INSERT OR REPLACE INTO blobs VALUES (?, ?, ?, ?)",
                (key, content_id, size, datetime.now(UTC).isoformat()),
            )
            conn.execute("COMMIT")
            return size
        except sqlite3.Error as exc:
            self._rollback(conn)
            raise StorageError(f"{self.url}: cannot store {key}: {exc}") from exc
        except BaseException:  # the input's own error (even KeyboardInterrupt) propagates as is
            self._rollback(conn)
            raise
        finally:
            conn.close()

    def open(self, key: str, chunk_size: int = 1 << 20) -> RowChunks:
        check_blob_key(key)
        if chunk_size < 1:
            raise InvalidInput(f"chunk_size must be at least 1 byte, got {chunk_size}")
        conn = self._connect()
        try:
            conn.execute("BEGIN")  # a read snapshot for the whole iteration
            row = conn.execute("SELECT content_id FROM blobs WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            conn.close()
            raise StorageError(f"{self.url}: cannot open {key}: {exc}") from exc
        if row is None:
            conn.close()
            raise BlobMissing(f"blob {key} is missing from {self.url}")
        return RowChunks(conn, row[0], chunk_size)

    def stat(self, key: str) -> BlobStat:
        check_blob_key(key)
        row = self._query_one("SELECT size, modified_at FROM blobs WHERE key = ?", (key,))
        if row is None:
            raise BlobMissing(f"blob {key} is missing from {self.url}")
        return BlobStat(size=row[0], modified_at=datetime.fromisoformat(row[1]))

    def exists(self, key: str) -> bool:
        check_blob_key(key)
        return self._query_one("SELECT 1 FROM blobs WHERE key = ?", (key,)) is not None

    def delete(self, key: str) -> None:
        check_blob_key(key)
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
            row = conn.execute("SELECT content_id FROM blobs WHERE key = ?", (key,)).fetchone()
            if row is not None:
                conn.execute("DELETE FROM parts WHERE content_id = ?", (row[0],))
                conn.execute("DELETE FROM blobs WHERE key = ?", (key,))
                conn.execute("DELETE FROM committed WHERE key = ?", (key,))
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback(conn)
            raise StorageError(f"{self.url}: cannot delete {key}: {exc}") from exc
        finally:
            conn.close()

    def keys(self) -> Iterator[str]:
        return iter([row[0] for row in self._query_all("SELECT key FROM blobs", ())])

    def identity(self, *, create: bool = False) -> str | None:
        if not self.path.exists() and not create:
            return None
        if create:
            self._write("INSERT OR IGNORE INTO store VALUES ('identity', ?)", (str(uuid.uuid4()),))
        row = self._query_one("SELECT value FROM store WHERE name = 'identity'", ())
        return None if row is None else str(row[0])

    def location(self, *, create: bool = False) -> str | None:
        """Device and inode number of the database file (ADR 0030): a copy is a new file."""
        if create:
            self.identity(create=True)
        try:
            info = self.path.stat()
        except FileNotFoundError:
            return None
        return f"{SCHEME} device {info.st_dev} inode {info.st_ino}"

    def register_database(self, database_id: str) -> None:
        check_blob_key(database_id)
        if "/" in database_id:
            raise InvalidInput(f"invalid database id {database_id!r}")
        self._write("INSERT OR IGNORE INTO databases VALUES (?)", (database_id,))

    def databases(self) -> set[str]:
        if not self.path.exists():
            return set()
        return {row[0] for row in self._query_all("SELECT id FROM databases", ())}

    def mark_committed(self, key: str) -> bool:
        """Record that a FileItem naming the blob committed (docbinder calls it after the commit)."""
        check_blob_key(key)
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
            if conn.execute("SELECT 1 FROM blobs WHERE key = ?", (key,)).fetchone() is None:
                conn.execute("ROLLBACK")
                raise BlobMissing(f"blob {key} is missing from {self.url}")
            conn.execute("INSERT OR IGNORE INTO committed VALUES (?)", (key,))
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback(conn)
            raise StorageError(f"{self.url}: cannot record the commit of {key}: {exc}") from exc
        finally:
            conn.close()
        return True

    def is_committed(self, key: str) -> bool:
        check_blob_key(key)
        row = self._query_one(
            "SELECT b.key, c.key FROM blobs b LEFT JOIN committed c ON c.key = b.key"
            " WHERE b.key = ?",
            (key,),
        )
        if row is None:
            raise BlobMissing(f"blob {key} is missing from {self.url}")
        return row[1] is not None

    # -- helpers ----------------------------------------------------------------

    @staticmethod
    def _insert(conn: sqlite3.Connection, content_id: str, seq: int, data: bytes) -> None:
        conn.execute("INSERT INTO parts VALUES (?, ?, ?)", (content_id, seq, data))

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        if conn.in_transaction:
            conn.execute("ROLLBACK")

    def _write(self, sql: str, params: tuple[object, ...]) -> None:
        conn = self._connect()
        try:
            conn.execute(sql, params)
        except sqlite3.Error as exc:
            raise StorageError(f"{self.url}: {exc}") from exc
        finally:
            conn.close()

    def _query_all(self, sql: str, params: tuple[object, ...]) -> list[tuple[object, ...]]:
        conn = self._connect()
        try:
            return conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StorageError(f"{self.url}: {exc}") from exc
        finally:
            conn.close()

    def _query_one(self, sql: str, params: tuple[object, ...]) -> tuple[object, ...] | None:
        rows = self._query_all(sql, params)
        return rows[0] if rows else None


class RowChunks(Iterator[bytes]):
    """The rows of one content id, re-cut to ``chunk_size``; closes its connection at the end.

    Also a context manager (``with store.open(key) as chunks:``), closed on exit.
    """

    def __init__(self, conn: sqlite3.Connection, content_id: str, chunk_size: int) -> None:
        self._conn: sqlite3.Connection | None = conn
        self._rows = conn.execute(
            "SELECT data FROM parts WHERE content_id = ? ORDER BY seq", (content_id,)
        )
        self._chunk_size = chunk_size
        self._pending = b""

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> bytes:
        while len(self._pending) < self._chunk_size and self._conn is not None:
            row = self._rows.fetchone()
            if row is None:
                self.close()
                break
            self._pending += row[0]
        if not self._pending:
            raise StopIteration
        chunk, self._pending = self._pending[: self._chunk_size], self._pending[self._chunk_size :]
        return chunk

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
        self._pending = b""
