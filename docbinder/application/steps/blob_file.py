"""A blob as a read-only, seekable binary file object: what provider uploads stream from (B22).

The official SDKs take a file object for an upload (``openai`` and
``anthropic`` hand it to the HTTP client's multipart body, which reads it in
64 KiB pieces; ``google-genai`` reads it in 8 MiB chunks), and each of them
seeks: to the end to learn the size, back to 0 before sending (again after a
retry). :class:`BlobFile` gives them that over a blob store's chunk reader
without holding more than one chunk of the blob in memory: the size is the
FileItem's, and a seek reopens the blob at the new offset (a ranged read,
:func:`~docbinder.ports.blobs.open_blob_range`).
"""

from __future__ import annotations

import io
import os
from typing import Any

from docbinder.ports.blobs import BlobReader, BlobStore, open_blob_range


class BlobFile(io.RawIOBase):
    """The ``size`` bytes of blob ``key`` in ``blobs`` as a file object; ``chunk_size`` bytes per read of the store.

    :attr:`bytes_read` counts the bytes handed out, :attr:`largest_read` the
    largest single ``read`` request (what a test of streaming looks at).
    Errors of the store (:class:`~docbinder.domain.errors.StorageError`,
    :class:`~docbinder.domain.errors.BlobMissing`) come through as they are.
    """

    def __init__(self, blobs: BlobStore, key: str, size: int, chunk_size: int = 1 << 20) -> None:
        super().__init__()
        self._blobs = blobs
        self._key = key
        self._size = size
        self._chunk = chunk_size
        self._position = 0
        self._reader: BlobReader | None = None
        self._pending = memoryview(b"")
        self.bytes_read = 0
        self.largest_read = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        """Move to ``offset`` from the start, the current position or the end; the new position."""
        if whence == os.SEEK_CUR:
            offset += self._position
        elif whence == os.SEEK_END:
            offset += self._size
        elif whence != os.SEEK_SET:
            raise ValueError(f"invalid whence {whence}")
        if offset < 0:
            raise ValueError("negative seek position")
        if offset != self._position or self._reader is None:
            self._drop_reader()
            self._position = offset
        return self._position

    def readinto(self, buffer: Any) -> int:
        """Fill ``buffer`` whole unless the blob ends first (a short read would end a Gemini chunk early)."""
        view = memoryview(buffer).cast("B")
        self.largest_read = max(self.largest_read, len(view))
        filled = 0
        while filled < len(view) and self._position < self._size:
            if not self._pending:
                if self._reader is None:
                    self._reader = open_blob_range(
                        self._blobs,
                        self._key,
                        self._position,
                        self._size - self._position,
                        self._chunk,
                    )
                try:
                    self._pending = memoryview(next(self._reader))
                except StopIteration:
                    self._drop_reader()
                    break
            count = min(len(view) - filled, len(self._pending))
            view[filled : filled + count] = self._pending[:count]
            self._pending = self._pending[count:]
            self._position += count
            filled += count
        self.bytes_read += filled
        return filled

    def _drop_reader(self) -> None:
        self._pending = memoryview(b"")
        if self._reader is not None:
            reader, self._reader = self._reader, None
            reader.close()

    def close(self) -> None:
        self._drop_reader()
        super().close()
