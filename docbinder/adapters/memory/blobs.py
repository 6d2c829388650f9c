"""In-memory blob store (``memory://``): blobs live in a dict for the life of the process."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import attrs

from docbinder.adapters.blobstore_base import BlobStoreBase
from docbinder.adapters.streams import ChunkReader
from docbinder.domain.errors import BlobMissing
from docbinder.ports.blobs import BlobStat


@attrs.frozen
class _Entry:
    data: bytes
    modified_at: datetime
    mark: str | None
    committed: bool = False


class MemoryBlobStore(BlobStoreBase):
    """:class:`~docbinder.ports.blobs.BlobStore` over a dict of ``bytes``.

    Holds every blob in memory by design; ``put`` collects the chunks
    privately and publishes the blob only when the input stream ended without
    error. A blob given as one ``bytes`` chunk is kept as that object (bytes
    are immutable), so storing it copies nothing; reading yields it whole when
    it fits in one chunk. The store's identity and registrations are entries
    of the same dict under names no key can take
    (:class:`~docbinder.adapters.blobstore_base.BlobStoreBase`); the commit
    record is a flag of the entry, so a new entry starts without it.

    :meth:`open` behaves like the disk and S3 stores: the same errors at call
    time, and a reader that counts as open (:attr:`open_readers`) until it is
    closed or exhausted, so a host's tests can check that they close what
    they open.

    Wherever the shipped contract (:class:`docbinder.testing.BlobStoreContract`)
    can tell, it answers as the local-disk and S3 stores do: ``open`` refuses a
    ``chunk_size`` below 1, the identity exists only once asked for with
    ``create``, and database ids hold no ``/``. Each ``memory://`` store is a
    store of its own: two never share an identity.
    """

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
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

    def location(self, *, create: bool = False) -> str | None:
        """``memory <token>``: a token made with this store object (ADR 0030).

        The bytes live in this object only, so it is where they are; another
        ``MemoryBlobStore`` is another place, even when given the same blobs.
        """
        return f"memory {self._token}"

    # -- primitives ------------------------------------------------------------------

    def _write(
        self, name: str, chunks: Iterator[bytes], mark: str | None, *, replace: bool = True
    ) -> int:
        collected = list(chunks)
        data = collected[0] if len(collected) == 1 else b"".join(collected)
        entry = _Entry(data, datetime.now(UTC), mark)
        with self._lock:
            if replace:
                self._entries[name] = entry
            else:
                self._entries.setdefault(name, entry)
        return len(data)

    def _open(self, name: str, chunk_size: int) -> ChunkReader:
        """A reader of the blob as it is now: a later ``put`` or ``delete`` does not change it."""
        with self._lock:
            entry = self._entries.get(name)
            if entry is None:
                raise BlobMissing(f"blob {name} is missing from {self.url}")
            self._open_readers += 1
        return ChunkReader(_slices(entry.data, chunk_size), self._reader_closed)

    def _open_range(self, name: str, offset: int, length: int, chunk_size: int) -> ChunkReader:
        """A reader of a slice of the blob as it is now (only the slice is copied)."""
        with self._lock:
            entry = self._entries.get(name)
            if entry is None:
                raise BlobMissing(f"blob {name} is missing from {self.url}")
            self._open_readers += 1
        view = memoryview(entry.data)[offset : offset + length]
        pieces = (bytes(view[at : at + chunk_size]) for at in range(0, len(view), chunk_size))
        return ChunkReader(pieces, self._reader_closed)

    def _reader_closed(self) -> None:
        with self._lock:
            self._open_readers -= 1

    def _stat(self, name: str) -> BlobStat:
        entry = self._entry(name)
        return BlobStat(size=len(entry.data), modified_at=entry.modified_at, origin=entry.mark)

    def _delete(self, name: str) -> None:
        with self._lock:
            self._entries.pop(name, None)

    def _list(self, prefix: str) -> Iterator[str]:
        with self._lock:
            return iter([name for name in self._entries if name.startswith(prefix)])

    def _record_commit(self, name: str) -> str | None:
        with self._lock:
            entry = self._entries.get(name)
            if entry is None:
                raise BlobMissing(f"blob {name} is missing from {self.url}")
            self._entries[name] = attrs.evolve(entry, committed=True)
        return None

    def _has_commit_record(self, name: str) -> bool:
        return self._entry(name).committed

    def _entry(self, name: str) -> _Entry:
        with self._lock:
            entry = self._entries.get(name)
        if entry is None:
            raise BlobMissing(f"blob {name} is missing from {self.url}")
        return entry


def _slices(data: bytes, chunk_size: int) -> Iterator[bytes]:
    if len(data) <= chunk_size:
        if data:
            yield data
        return
    view = memoryview(data)
    for start in range(0, len(data), chunk_size):
        yield bytes(view[start : start + chunk_size])
