"""A third-party blob store, written as a separate package would write it (docs/backends.md).

:class:`SqliteBlobStore` keeps every blob in one SQLite file (the standard
library's :mod:`sqlite3`), as rows of at most 256 KiB. It derives from
docbinder's :class:`~docbinder.adapters.blobstore_base.BlobStoreBase` and writes
only its five primitives; the base class does the rest of the port (key checks,
the store identity, registered databases, provenance marks).
:class:`SqliteBlobStoreWithRecords` adds the two optional primitives of commit
records and a location (ADR 0030, 0031). Nothing here is imported by docbinder.
Its URL is ``sqliteblob:///<absolute path>`` and :func:`from_url` is the
callable its distribution registers::

    [project.entry-points."docbinder.blob_stores"]
    sqliteblob = "thirdparty.sqlite_blobs:from_url"
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from docbinder.adapters.blobstore_base import BlobStoreBase
from docbinder.adapters.streams import ChunkReader
from docbinder.domain.errors import BlobMissing, ConfigurationError, StorageError
from docbinder.ports.blobs import BlobStat

SCHEME = "sqliteblob"
ROW_BYTES = 256 * 1024
"""Bytes per stored row: input chunks are re-cut to this size."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS blobs (
    key TEXT PRIMARY KEY, content_id TEXT NOT NULL, size INTEGER NOT NULL,
    modified_at TEXT NOT NULL, mark TEXT, committed INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS parts (
    content_id TEXT NOT NULL, seq INTEGER NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (content_id, seq)
);
"""


def from_url(url: str) -> SqliteBlobStoreWithRecords:
    """The entry point: ``sqliteblob:///<absolute path of the database file>``.

    docbinder passes the ``blob_url`` setting unchanged. Raises
    :class:`ConfigurationError` for another scheme or a URL without a path.
    """
    parts = urlsplit(url)
    if parts.scheme != SCHEME or parts.netloc not in ("", "localhost") or not parts.path:
        raise ConfigurationError(f"blob_url must be {SCHEME}:///<path>, got {url!r}")
    return SqliteBlobStoreWithRecords(Path(unquote(parts.path)))


class SqliteBlobStore(BlobStoreBase):
    """A blob store in one SQLite file (WAL mode), in five methods.

    ``_write`` stores the new content under a fresh content id inside one
    transaction and switches the name to it at the end, so a failing input
    leaves nothing. ``_open`` reads inside its own read transaction: a
    snapshot, unaffected by later writes. Reads never create the file. Safe
    for threads (one connection per call).
    """

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = Path(path)
        self._schema_lock = threading.Lock()
        self._schema_ready = False

    @property
    def url(self) -> str:
        return f"{SCHEME}://{self.path.absolute().as_posix()}"

    def _write(
        self, name: str, chunks: Iterator[bytes], mark: str | None, *, replace: bool = True
    ) -> int:
        content_id, size, seq, pending = uuid.uuid4().hex, 0, 0, bytearray()
        with self._transaction() as conn:
            if not replace and self._content_of(conn, name) is not None:
                return 0  # the store's own record is there already: it stays
            for chunk in chunks:  # an error of the input rolls everything back
                pending += chunk
                size += len(chunk)
                while len(pending) >= ROW_BYTES:
                    self._insert(conn, content_id, seq, bytes(pending[:ROW_BYTES]))
                    del pending[:ROW_BYTES]
                    seq += 1
            if pending:
                self._insert(conn, content_id, seq, bytes(pending))
            old = self._content_of(conn, name)
            if old is not None:
                conn.execute("DELETE FROM parts WHERE content_id = ?", (old,))
            conn.execute(  # a new row: committed = 0
                "INSERT OR REPLACE INTO blobs VALUES (?, ?, ?, ?, ?, 0)",
                (name, content_id, size, datetime.now(UTC).isoformat(), mark),
            )
        return size

    def _open(self, name: str, chunk_size: int) -> ChunkReader:
        conn = self._connect(create=False)
        if conn is None:
            raise BlobMissing(f"blob {name} is missing from {self.url}")
        try:
            conn.execute("BEGIN")  # a read snapshot for the whole iteration
            content_id = self._content_of(conn, name)
        except sqlite3.Error as exc:
            conn.close()
            raise StorageError(f"{self.url}: cannot open {name}: {exc}") from exc
        if content_id is None:
            conn.close()
            raise BlobMissing(f"blob {name} is missing from {self.url}")
        return ChunkReader(self._chunks(conn, content_id, chunk_size), conn.close)

    def _stat(self, name: str) -> BlobStat:
        rows = self._query("SELECT size, modified_at, mark FROM blobs WHERE key = ?", (name,))
        if not rows:
            raise BlobMissing(f"blob {name} is missing from {self.url}")
        size, modified_at, mark = rows[0]
        return BlobStat(size, datetime.fromisoformat(modified_at), mark)

    def _delete(self, name: str) -> None:
        if not self.path.exists():
            return
        with self._transaction() as conn:
            conn.execute(
                "DELETE FROM parts WHERE content_id IN (SELECT content_id FROM blobs WHERE key = ?)",
                (name,),
            )
            conn.execute("DELETE FROM blobs WHERE key = ?", (name,))

    def _list(self, prefix: str) -> Iterator[str]:
        rows = self._query("SELECT key FROM blobs", ())
        return iter([name for (name,) in rows if name.startswith(prefix)])

    # -- helpers --------------------------------------------------------------------

    def _connect(self, *, create: bool = True) -> sqlite3.Connection | None:
        """A new connection (the schema made once per object); ``None`` for a missing file unless ``create``."""
        if not create and not self.path.exists():
            return None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            with self._schema_lock:
                if not self._schema_ready:
                    # WAL is a property of the file: set once. Switching to it needs the
                    # file to itself and SQLite answers "locked" at once, without waiting,
                    # when another connection of this store is open meanwhile.
                    _switch_to_wal(conn)
                    conn.executescript(_SCHEMA)
                    self._schema_ready = True
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(f"{self.url}: {exc}") from exc
        return conn

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``; rolled back on any exception, which propagates.

        SQLite's own errors become :class:`StorageError`; the input's own
        exceptions (even ``KeyboardInterrupt``) propagate unchanged.
        """
        conn = self._connect()
        assert conn is not None
        try:
            conn.execute("BEGIN IMMEDIATE")
            yield conn
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StorageError(f"{self.url}: {exc}") from exc
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.close()

    def _query(self, sql: str, params: tuple[object, ...]) -> list[tuple[Any, ...]]:
        """The rows of one read (none for a missing file)."""
        conn = self._connect(create=False)
        if conn is None:
            return []
        try:
            return conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StorageError(f"{self.url}: {exc}") from exc
        finally:
            conn.close()

    @staticmethod
    def _content_of(conn: sqlite3.Connection, name: str) -> str | None:
        row = conn.execute("SELECT content_id FROM blobs WHERE key = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    @staticmethod
    def _insert(conn: sqlite3.Connection, content_id: str, seq: int, data: bytes) -> None:
        conn.execute("INSERT INTO parts VALUES (?, ?, ?)", (content_id, seq, data))

    def _chunks(
        self, conn: sqlite3.Connection, content_id: str, chunk_size: int
    ) -> Iterator[bytes]:
        """The rows of one content id in order, re-cut to ``chunk_size``."""
        try:
            rows = conn.execute(
                "SELECT data FROM parts WHERE content_id = ? ORDER BY seq", (content_id,)
            )
            left = b""
            for (data,) in rows:
                buffer = left + data
                whole = len(buffer) - len(buffer) % chunk_size
                for start in range(0, whole, chunk_size):
                    yield buffer[start : start + chunk_size]
                left = buffer[whole:]
            if left:
                yield left
        except sqlite3.Error as exc:
            raise StorageError(f"{self.url}: cannot read {content_id}: {exc}") from exc

    def _open_range(self, name: str, offset: int, length: int, chunk_size: int) -> ChunkReader:
        """Only the rows holding the range, cut with ``substr`` (a ranged read)."""
        conn = self._connect(create=False)
        if conn is None:
            raise BlobMissing(f"blob {name} is missing from {self.url}")
        conn.execute("BEGIN")  # a read snapshot for the whole iteration
        content_id = self._content_of(conn, name)
        if content_id is None:
            conn.close()
            raise BlobMissing(f"blob {name} is missing from {self.url}")
        return ChunkReader(self._slices(conn, content_id, offset, length, chunk_size), conn.close)

    def _slices(
        self, conn: sqlite3.Connection, content_id: str, offset: int, length: int, size: int
    ) -> Iterator[bytes]:
        """Bytes ``offset`` to ``offset + length - 1`` from the rows that hold them."""
        end, first = offset + length, offset // ROW_BYTES
        rows = conn.execute(  # each row's bytes from max(offset, row start) to min(end, row end)
            "SELECT substr(data, max(0, :o - seq * :r) + 1, min(:e - seq * :r, :r) - max(0, :o - seq * :r))"
            " FROM parts WHERE content_id = :c AND seq >= :f AND seq * :r < :e ORDER BY seq",
            {"o": offset, "r": ROW_BYTES, "e": end, "c": content_id, "f": first},
        )
        for (data,) in rows:
            for start in range(0, len(data), size):
                yield data[start : start + size]


class SqliteBlobStoreWithRecords(SqliteBlobStore):
    """:class:`SqliteBlobStore` that also keeps commit records (ADR 0031) and tells its location.

    The record is the ``committed`` column of the blob's row: a new row (a
    ``put``) starts at 0 and a removed row takes it along, as the port asks.
    """

    def _record_commit(self, name: str) -> str | None:
        with self._transaction() as conn:
            found = conn.execute("UPDATE blobs SET committed = 1 WHERE key = ?", (name,))
            if found.rowcount == 0:
                raise BlobMissing(f"blob {name} is missing from {self.url}")
        return None

    def _has_commit_record(self, name: str) -> bool:
        rows = self._query("SELECT committed FROM blobs WHERE key = ?", (name,))
        if not rows:
            raise BlobMissing(f"blob {name} is missing from {self.url}")
        return bool(rows[0][0])

    def location(self, *, create: bool = False) -> str | None:
        """Device and inode number of the database file (ADR 0030): a copy is a new file."""
        if create:
            self.identity(create=True)
        try:
            info = self.path.stat()
        except FileNotFoundError:
            return None
        return f"{SCHEME} device {info.st_dev} inode {info.st_ino}"


def _switch_to_wal(conn: sqlite3.Connection, timeout_s: float = 60.0) -> None:
    """``PRAGMA journal_mode=WAL``, tried again while another connection holds the file.

    SQLite answers "database is locked" at once, without its busy timeout, when it cannot
    change the journal mode; several store objects of one file opening together (each
    with its own schema lock) meet that. Gives up after ``timeout_s`` seconds.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
