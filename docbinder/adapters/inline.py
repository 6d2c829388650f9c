"""The inline tier: small blobs in the metadata database, the rest in the bulk store (ADR 0110).

:class:`InlineTierBlobStore` is a :class:`~docbinder.ports.blobs.BlobStore` over
two places: the metadata database's table ``inline_blobs`` (through
:attr:`~docbinder.ports.metadata.UnitOfWork.inline_blobs`) for blobs of at most
``limit`` bytes, and the bulk store (local disk, S3, memory, a plug-in) for the
others. Storing a file writes a small blob in the unit of work that records its
FileItem (:class:`~docbinder.application.steps.storing.FileStorer`), so one commit
makes the bytes, the FileItem and the ChatDocument durable together; every other
caller (readers, ``gc``, ``doctor``, deletes, moves) goes through the ordinary
port methods here and sees one store.
"""

from __future__ import annotations

import itertools
import secrets
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, BinaryIO, TypeVar

from docbinder.adapters.streams import ChunkReader
from docbinder.domain.errors import InvalidInput, StorageError
from docbinder.ports.blobs import (
    BlobReader,
    BlobStat,
    BlobStore,
    Chunks,
    blob_origin,
    check_blob_key,
    check_range,
    iter_chunks,
    open_blob_range,
)
from docbinder.ports.metadata import InlineBlobRepository, UnitOfWorkFactory

DEFAULT_INLINE_LIMIT = 64 * 1024
"""Largest blob kept inline by default, in bytes (64 KiB); the setting ``inline_blob_limit``."""

MAX_INLINE_LIMIT = 1024 * 1024
"""Largest inline limit accepted, in bytes (1 MiB): every inline blob is one row read whole."""

T = TypeVar("T")


def check_inline_limit(limit: object) -> int:
    """``limit`` if it is a whole number of bytes from 0 to :data:`MAX_INLINE_LIMIT`.

    Raises :class:`InvalidInput` otherwise (``bool`` is refused too).
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= MAX_INLINE_LIMIT:
        raise InvalidInput(
            f"inline_blob_limit must be a number of bytes from 0 to {MAX_INLINE_LIMIT}, "
            f"not {limit!r}"
        )
    return limit


def _slices(data: bytes, chunk_size: int) -> Iterator[bytes]:
    """``data`` in chunks of at most ``chunk_size`` bytes; itself, uncopied, when it fits one."""
    if len(data) <= chunk_size:
        yield data
        return
    view = memoryview(data)
    for start in range(0, len(data), chunk_size):
        yield bytes(view[start : start + chunk_size])


class InlineTierBlobStore:
    """A blob store keeping blobs of at most ``limit`` bytes in the metadata database (ADR 0110).

    ``bulk`` holds every larger blob and everything the store keeps of its
    own (identity, registrations, claims, location); ``units`` makes writing
    units of work of the metadata database, ``read_units`` (default
    ``units``) reading ones. ``limit`` is in bytes (0 to
    :data:`MAX_INLINE_LIMIT`; :class:`InvalidInput` otherwise); ``0`` stores
    every new blob in ``bulk`` while inline blobs written before stay readable,
    listed and removable.

    Reads look in the table first (one primary-key lookup), then in ``bulk``.
    :meth:`put` reads at most ``limit + 1`` bytes ahead to choose the tier; an
    inline put commits its own unit and then removes an older copy under the
    key from ``bulk``; a bulk put removes an older inline row under the key
    afterwards, so a replaced blob never reappears. :meth:`delete` removes
    both. Blob-store calls run outside the caller's unit of work, as for any
    blob store. Any other public attribute of ``bulk`` (``location``, claims,
    the local disk's and S3's checks and clean-ups, ``close``) is offered as
    it is; ``presigned_get`` refuses inline
    blobs (:class:`StorageError`), and :meth:`is_inline` tells a caller to
    stream those itself. Thread-safe.
    """

    def __init__(
        self,
        bulk: BlobStore,
        units: UnitOfWorkFactory,
        read_units: UnitOfWorkFactory | None = None,
        *,
        limit: int = DEFAULT_INLINE_LIMIT,
    ) -> None:
        self._bulk = bulk
        self._units = units
        self._read_units = read_units or units
        self._limit = check_inline_limit(limit)
        self._writers: frozenset[str] = frozenset()
        self._lock = threading.Lock()

    # -- what this store adds -------------------------------------------------------

    @property
    def bulk(self) -> BlobStore:
        """The store of blobs over the limit."""
        return self._bulk

    @property
    def inline_limit(self) -> int:
        """Largest blob kept inline, in bytes; ``0``: new blobs all go to :attr:`bulk`."""
        return self._limit

    def inline_origin(self, key: str) -> str | None:
        """The full provenance mark of a new inline blob ``key`` (``None`` before the bulk store has an identity).

        :func:`~docbinder.ports.blobs.blob_origin` of the bulk store's
        identity and the one database registered through this object (``-``
        for none or several), as the bulk stores mark theirs.
        """
        identity = self._bulk.identity(create=False)
        if identity is None:
            return None
        writers = self._writers
        writer = next(iter(writers)) if len(writers) == 1 else None
        return blob_origin(identity, writer, key)

    def is_inline(self, key: str) -> bool:
        """Whether the blob ``key`` is kept in the metadata database (:class:`InvalidInput` for a bad key)."""
        check_blob_key(key)
        return self._read(lambda blobs: blobs.stat(key)) is not None

    def inline_keys(self) -> set[str]:
        """The keys of every blob kept inline."""
        return set(self._read(lambda blobs: blobs.keys()))

    def inline_totals(self) -> tuple[int, int]:
        """How many blobs are kept inline and their bytes in all."""
        return self._read(lambda blobs: blobs.totals())

    # -- the port -------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The bulk store's URL (the inline tier lives in the metadata database)."""
        return self._bulk.url

    def put(self, key: str, data: Chunks | BinaryIO) -> int:
        """Store ``data`` under ``key``: inline when it is at most the limit, else in the bulk store.

        See :meth:`~docbinder.ports.blobs.BlobStore.put`. :class:`InvalidInput`
        for a bad key before anything is read.
        """
        check_blob_key(key)
        chunks = iter_chunks(data)
        if self._limit > 0:
            head: list[bytes] = []
            size = 0
            for chunk in chunks:
                head.append(chunk)
                size += len(chunk)
                if size > self._limit:
                    break
            else:
                blob = b"".join(head)
                self.put_inline(key, blob, committed=False)
                if self._bulk.exists(key):
                    self._bulk.delete(key)  # the older copy must not come back on delete
                return len(blob)
            chunks = itertools.chain(head, chunks)
        written = self._bulk.put(key, chunks)
        if self._read(lambda blobs: blobs.stat(key)) is not None:
            self._write(lambda blobs: blobs.delete(key))
        return written

    def put_inline(self, key: str, data: bytes, *, committed: bool) -> None:
        """Write ``data`` as the inline blob ``key`` in a unit of its own and commit.

        ``committed`` records at once that a FileItem naming it committed.
        Used by :meth:`put`; storing a file writes through its own unit instead.
        """
        check_blob_key(key)
        origin = self.inline_origin(key)
        at = datetime.now(UTC)
        self._write(lambda blobs: blobs.put(key, data, origin, at, committed=committed))

    def open(self, key: str, chunk_size: int = 1 << 20) -> BlobReader:
        """Open the blob now, inline or in the bulk store; see :meth:`~docbinder.ports.blobs.BlobStore.open`."""
        check_blob_key(key)
        if chunk_size < 1:
            raise InvalidInput(f"chunk_size must be at least 1 byte, got {chunk_size}")
        data = self._read(lambda blobs: blobs.get(key))
        if data is not None:
            return ChunkReader(_slices(data, chunk_size))
        return self._bulk.open(key, chunk_size)

    def open_range(
        self, key: str, offset: int, length: int, chunk_size: int = 1 << 20
    ) -> BlobReader:
        """Bytes ``offset`` to ``offset + length - 1`` of the blob, inline or in the bulk store.

        See :meth:`~docbinder.ports.blobs.BlobStore.open_range`: an inline blob is
        cut from its row (at most :attr:`inline_limit` bytes), a bulk one read as
        the bulk store reads ranges (:func:`~docbinder.ports.blobs.open_blob_range`).
        """
        check_blob_key(key)
        check_range(offset, length, chunk_size)
        data = self._read(lambda blobs: blobs.get(key))
        if data is not None:
            return ChunkReader(_slices(data[offset : offset + length], chunk_size))
        return open_blob_range(self._bulk, key, offset, length, chunk_size)

    def stat(self, key: str) -> BlobStat:
        """Size, time and mark of the blob; :class:`BlobMissing` if neither tier has it."""
        check_blob_key(key)
        info = self._read(lambda blobs: blobs.stat(key))
        if info is not None:
            return BlobStat(info.size, info.modified_at, info.origin)
        return self._bulk.stat(key)

    def exists(self, key: str) -> bool:
        """Whether either tier holds a blob under ``key``."""
        check_blob_key(key)
        if self._read(lambda blobs: blobs.stat(key)) is not None:
            return True
        return self._bulk.exists(key)

    def delete(self, key: str) -> None:
        """Remove the blob from both tiers; an absent key is not an error."""
        check_blob_key(key)
        self._write(lambda blobs: blobs.delete(key))
        self._bulk.delete(key)

    def keys(self) -> Iterator[str]:
        """Every key of either tier, each once, in no order."""
        inline = set(self._read(lambda blobs: blobs.keys()))
        yield from inline
        for key in self._bulk.keys():
            if key not in inline:
                yield key

    def identity(self, *, create: bool = False) -> str | None:
        """The bulk store's identity (the one store both tiers belong to)."""
        return self._bulk.identity(create=create)

    def register_database(self, database_id: str) -> None:
        """Register ``database_id`` in the bulk store and name it in the marks of new inline blobs."""
        self._bulk.register_database(database_id)
        with self._lock:
            self._writers = self._writers | {database_id}

    def databases(self) -> set[str]:
        """The databases registered in the bulk store."""
        return self._bulk.databases()

    def mark_committed(self, key: str) -> bool:
        """Record the commit of an inline blob in its row, of any other in the bulk store (ADR 0031)."""
        check_blob_key(key)
        if self._write(lambda blobs: blobs.mark_committed(key)):
            return True
        mark: Any = getattr(self._bulk, "mark_committed", None)
        if mark is None:
            self._bulk.stat(key)  # BlobMissing for an absent blob
            return False
        return bool(mark(key))

    def is_committed(self, key: str) -> bool:
        """Whether the blob now under ``key`` carries its commit record (either tier)."""
        check_blob_key(key)
        info = self._read(lambda blobs: blobs.stat(key))
        if info is not None:
            return info.committed
        check: Any = getattr(self._bulk, "is_committed", None)
        if check is None:
            self._bulk.stat(key)
            return False
        return bool(check(key))

    def check_writable(self) -> None:
        """Write, read back and delete a probe in the bulk store and in the table.

        :class:`StorageError` if any step fails.
        """
        probe: Any = getattr(self._bulk, "check_writable", None)
        if probe is not None:
            probe()
        key = f"docbinder-probe-{secrets.token_hex(16)}"
        self.put_inline(key, b"docbinder inline probe\n", committed=False)
        try:
            if self._read(lambda blobs: blobs.get(key)) != b"docbinder inline probe\n":
                raise StorageError(f"{self.url}: the inline probe read back different bytes")
        finally:
            self._write(lambda blobs: blobs.delete(key))

    def __getattr__(self, name: str) -> Any:
        if name == "presigned_get" and hasattr(self._bulk, "presigned_get"):
            return self._presigned_get
        if name.startswith("_"):
            raise AttributeError(name)
        # The bulk store's optional parts (location, claims, the local disk's and
        # S3's own checks and clean-ups, close) are offered as they are.
        return getattr(self._bulk, name)

    def _presigned_get(self, key: str, **options: Any) -> str:
        if self.is_inline(key):
            raise StorageError(f"blob {key} is kept in the metadata database: no presigned URL")
        presign: Callable[..., str] = self._bulk.presigned_get  # type: ignore[attr-defined]
        return presign(key, **options)

    # -- units ----------------------------------------------------------------------

    def _read(self, work: Callable[[InlineBlobRepository], T]) -> T:
        with self._read_units() as uow:
            return work(uow.inline_blobs)

    def _write(self, work: Callable[[InlineBlobRepository], T]) -> T:
        with self._units() as uow:
            result = work(uow.inline_blobs)
            uow.commit()
            return result
