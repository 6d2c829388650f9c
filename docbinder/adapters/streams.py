"""Stream helpers shared by the blob adapters."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from docbinder.ports.blobs import Chunks

CHUNK_SIZE = 1 << 20
"""Default read size for file objects, in bytes (1 MiB)."""


def iter_chunks(data: Chunks | BinaryIO, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """Yield non-empty ``bytes`` chunks from an iterable of chunks or a binary file object.

    File objects are read ``chunk_size`` bytes at a time; nothing is read whole.
    ``bytearray``/``memoryview`` chunks are converted to ``bytes``.
    """
    if isinstance(data, bytes | bytearray | memoryview):
        if data:
            yield bytes(data)
        return
    if hasattr(data, "read"):
        reader = data.read
        while True:
            chunk = reader(chunk_size)
            if not chunk:
                return
            yield bytes(chunk)
    else:
        for chunk in data:  # type: ignore[union-attr]
            if chunk:
                yield bytes(chunk)
