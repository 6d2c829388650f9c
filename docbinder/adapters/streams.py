"""Stream helpers shared by the blob adapters (re-exported from the blob port)."""

import abc
import contextlib
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Self

from docbinder.ports.blobs import CHUNK_SIZE, iter_chunks

__all__ = ["CHUNK_SIZE", "ChunkReader", "ClosingChunks", "iter_chunks"]


class ClosingChunks(Iterator[bytes]):
    """Base of chunk iterators that own a resource: subclasses define ``__next__`` and ``close``.

    Satisfies :class:`~docbinder.ports.blobs.BlobReader`, what ``BlobStore.open`` returns.

    Iterating returns the iterator itself; leaving a ``with`` block or being
    collected calls :meth:`close`, which must be safe to call more than once.
    """

    def __iter__(self) -> Self:
        return self

    @abc.abstractmethod
    def close(self) -> None:
        """Release the resource; further iteration yields nothing."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # nothing useful can be done while collecting
            self.close()


class ChunkReader(ClosingChunks):
    """A :class:`~docbinder.ports.blobs.BlobReader` over any iterator of ``bytes`` chunks.

    ``close`` (default: the iterator's own ``close`` if it has one, e.g. a
    generator's) runs exactly once: at the end of the chunks, on
    :meth:`close`, on leaving a ``with`` block, or when collected. Empty
    chunks are skipped. For blob stores that keep no handle of their own and
    for wrappers around another store's reader (``ChunkReader(inner, inner.close)``).
    """

    def __init__(self, chunks: Iterator[bytes], close: Callable[[], None] | None = None) -> None:
        self._chunks: Iterator[bytes] | None = chunks
        self._close = close if close is not None else getattr(chunks, "close", None)

    def __next__(self) -> bytes:
        while self._chunks is not None:
            try:
                chunk = next(self._chunks)
            except BaseException:  # the end (StopIteration) or a fault: release the stream
                self.close()
                raise
            if chunk:
                return chunk
        raise StopIteration

    def close(self) -> None:
        """Run the close callback once; further iteration yields nothing."""
        if self._chunks is None:
            return
        self._chunks = None
        if self._close is not None:
            self._close()
