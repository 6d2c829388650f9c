"""Stream helpers shared by the blob adapters (re-exported from the blob port)."""

import abc
import contextlib
from collections.abc import Iterator
from types import TracebackType
from typing import Self

from docbinder.ports.blobs import CHUNK_SIZE, iter_chunks

__all__ = ["CHUNK_SIZE", "ClosingChunks", "iter_chunks"]


class ClosingChunks(Iterator[bytes]):
    """Base of chunk iterators that own a resource: subclasses define ``__next__`` and ``close``.

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
