"""A read-only, non-seekable file object over an iterator of byte chunks.

boto3's managed transfer reads its input with ``read(n)``; for a non-seekable
stream it keeps only the parts in flight in memory. :class:`ChunkReader` feeds
it from a chunk iterator without ever holding more than one input chunk, so a
blob of any size streams with bounded memory.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any


class SourceFailed(Exception):
    """Raised by :meth:`ChunkReader.readinto` when the chunk iterator raised.

    The transfer machinery sees an ordinary ``Exception`` (so it aborts and
    cleans up the same way for every failure, even a ``KeyboardInterrupt`` in
    a worker thread); the original is kept in :attr:`ChunkReader.error` for the
    caller to re-raise unchanged.
    """


class ChunkReader(io.RawIOBase):
    """``io.RawIOBase`` over ``chunks``; ``readinto`` fills the whole buffer unless at EOF.

    Filling completely matters: the transfer code treats a short ``read(n)``
    as the end of a part, and S3 rejects parts below 5 MiB except the last.
    :attr:`bytes_read` counts the bytes delivered; :attr:`error` holds what
    the iterator raised, if it did.
    """

    def __init__(self, chunks: Iterator[bytes]) -> None:
        super().__init__()
        self._chunks = chunks
        self._pending = memoryview(b"")
        self._exhausted = False
        self.bytes_read = 0
        self.error: BaseException | None = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def read(self, size: int | None = -1) -> bytes:
        """Return the next ``size`` bytes (fewer only at end of input); all that is left if ``size < 0``.

        Builds the result in a ``BytesIO`` whose buffer becomes the returned
        ``bytes`` without a copy, so a part needs its own size in memory
        (``RawIOBase.read`` would need twice that: a buffer plus a copy).
        """
        if size is None or size < 0:
            return self.readall()
        out = io.BytesIO()
        while out.tell() < size:
            piece = self._next_piece(size - out.tell())
            if piece is None:
                break
            out.write(piece)
        data = out.getvalue()
        self.bytes_read += len(data)
        return data

    def readall(self) -> bytes:
        """Return everything up to the end of input (used only below the multipart threshold)."""
        out = io.BytesIO()
        while (piece := self._next_piece(1 << 20)) is not None:
            out.write(piece)
        data = out.getvalue()
        self.bytes_read += len(data)
        return data

    def _next_piece(self, limit: int) -> memoryview | None:
        """Up to ``limit`` bytes from the current input chunk, pulling the next one if needed.

        ``None`` at end of input. Raises :class:`SourceFailed` if the iterator
        raised, now or before.
        """
        if self.error is not None:
            raise SourceFailed("the input stream failed earlier") from self.error
        while not self._pending:
            if self._exhausted:
                return None
            try:
                chunk = next(self._chunks)
            except StopIteration:
                self._exhausted = True
                return None
            except BaseException as exc:
                self.error = exc
                self._exhausted = True
                raise SourceFailed("the input stream raised an exception") from exc
            self._pending = memoryview(chunk).cast("B")
        piece = self._pending[:limit]
        self._pending = self._pending[len(piece) :]
        return piece

    def readinto(self, buffer: Any) -> int:
        """Copy up to ``len(buffer)`` bytes into ``buffer``; fewer only at end of input.

        Raises :class:`SourceFailed` (chained to the original) if the chunk
        iterator raised, now or on an earlier call.
        """
        target = memoryview(buffer).cast("B")
        filled = 0
        while filled < len(target):
            piece = self._next_piece(len(target) - filled)
            if piece is None:
                break
            target[filled : filled + len(piece)] = piece
            filled += len(piece)
        self.bytes_read += filled
        return filled
