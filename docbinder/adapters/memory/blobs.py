"""In-memory blob store (``memory://``): blobs live in a dict for the life of the process."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import BinaryIO

from docbinder.adapters.streams import ChunkReader, iter_chunks
from docbinder.domain.errors import BlobMissing, InvalidInput
from docbinder.ports.blobs import BlobStat, Chunks, blob_origin, check_blob_key


class MemoryBlobStore:
    """:class:`~docbinder.ports.blobs.BlobStore` over a dict of ``bytes``.

    Holds every blob in memory by design; ``put`` collects the chunks
    privately and publishes the blob only when the input stream ended without
    error. A blob given as one ``bytes`` chunk is kept as that object (bytes
    are immutable), so storing it copies nothing; reading yields it whole when
    it fits in one chunk.

    :meth:`open` behaves like the disk and S3 stores: the same errors at call
    time, and a reader that counts as open (:attr:`open_readers`) until it is
    closed or exhausted, so a host's tests can check that they close what
    they open.

    Wherever the shipped contract (:class:`docbinder.testing.BlobStoreContract`)
    can tell, it answers as the local-disk and S3 stores do: ``open`` refuses a
    ``chunk_size`` below 1, the identity exists only once asked for with
    ``create``, and database ids hold no ``/``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._blobs: dict[str, tuple[bytes, datetime, str | None]] = {}
        self._identity: str | None = None
        self._databases: set[str] = set()
        self._committed: set[str] = set()
        self._open_readers = 0
        self._token = uuid.uuid4().hex

    @property
    def open_readers(self) -> int:
        """How many readers :meth:`open` returned that are not yet closed or exhausted."""
        with self._lock:
            return self._open_readers

    @property
    def url(self) -> str:
        return "memory://"

    def put(self, key: str, data: Chunks | BinaryIO) -> int:
        check_blob_key(key)
        chunks = list(iter_chunks(data))
        blob = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        with self._lock:
            # Marked once the store has its identity (as on disk); the mark names
            # the database only while one is registered.
            writer = next(iter(self._databases)) if len(self._databases) == 1 else None
            mark = None if self._identity is None else blob_origin(self._identity, writer, key)
            self._blobs[key] = (blob, datetime.now(UTC), mark)
            self._committed.discard(key)  # a new blob under the key: not committed yet
        return len(blob)

    def open(self, key: str, chunk_size: int = 1 << 20) -> ChunkReader:
        """A reader of the blob as it is now, in chunks of at most ``chunk_size`` bytes.

        Raises at call time :class:`InvalidInput` (bad key, ``chunk_size < 1``)
        and :class:`BlobMissing`. A later ``put`` or ``delete`` of the key does
        not change what an open reader yields (like an open file on disk).
        """
        check_blob_key(key)
        if chunk_size < 1:
            raise InvalidInput(f"chunk_size must be at least 1 byte, got {chunk_size}")
        with self._lock:
            entry = self._blobs.get(key)
            if entry is None:
                raise BlobMissing(f"blob {key} is missing from {self.url}")
            self._open_readers += 1
        return ChunkReader(_slices(entry[0], chunk_size), self._reader_closed)

    def _reader_closed(self) -> None:
        with self._lock:
            self._open_readers -= 1

    def stat(self, key: str) -> BlobStat:
        check_blob_key(key)
        with self._lock:
            entry = self._blobs.get(key)
        if entry is None:
            raise BlobMissing(f"blob {key} is missing from {self.url}")
        return BlobStat(size=len(entry[0]), modified_at=entry[1], origin=entry[2])

    def exists(self, key: str) -> bool:
        check_blob_key(key)
        with self._lock:
            return key in self._blobs

    def delete(self, key: str) -> None:
        check_blob_key(key)
        with self._lock:
            self._blobs.pop(key, None)
            self._committed.discard(key)

    def keys(self) -> Iterator[str]:
        with self._lock:
            return iter(list(self._blobs))

    def identity(self, *, create: bool = False) -> str | None:
        """A UUID made on the first call with ``create`` (``None`` before, as on disk and S3).

        Each ``memory://`` store is a store of its own: two stores never share one.
        """
        with self._lock:
            if self._identity is None and create:
                self._identity = str(uuid.uuid4())
            return self._identity

    def location(self, *, create: bool = False) -> str | None:
        """``memory <token>``: a token made with this store object (ADR 0030).

        The bytes live in this object only, so it is where they are; another
        ``MemoryBlobStore`` is another place, even when given the same blobs.
        """
        return f"memory {self._token}"

    def register_database(self, database_id: str) -> None:
        """Record ``database_id``; :class:`InvalidInput` unless it is one key segment (no ``/``)."""
        check_blob_key(database_id)
        if "/" in database_id:
            raise InvalidInput(f"invalid database id {database_id!r}")
        with self._lock:
            self._databases.add(database_id)

    def databases(self) -> set[str]:
        with self._lock:
            return set(self._databases)

    def mark_committed(self, key: str) -> bool:
        """Flag the blob as named by a committed FileItem (ADR 0031); :class:`BlobMissing` if absent."""
        check_blob_key(key)
        with self._lock:
            if key not in self._blobs:
                raise BlobMissing(f"blob {key} is missing from {self.url}")
            self._committed.add(key)
        return True

    def is_committed(self, key: str) -> bool:
        """Whether :meth:`mark_committed` flagged the blob now under ``key``."""
        check_blob_key(key)
        with self._lock:
            if key not in self._blobs:
                raise BlobMissing(f"blob {key} is missing from {self.url}")
            return key in self._committed


def _slices(data: bytes, chunk_size: int) -> Iterator[bytes]:
    if len(data) <= chunk_size:
        if data:
            yield data
        return
    view = memoryview(data)
    for start in range(0, len(data), chunk_size):
        yield bytes(view[start : start + chunk_size])
