"""Streaming a producer's bytes once: size, SHA-256, head and size limit (SPEC C1)."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import BinaryIO

from docbinder.domain.errors import SizeLimitExceeded
from docbinder.ports.blobs import Chunks, iter_chunks
from docbinder.ports.extractor import SNIFF_BYTES

FileData = Chunks | BinaryIO | bytes
"""What a producer may hand over: bytes, an iterable of byte chunks, or a binary file object."""


OVERLAP_MIN_BYTES = 256 * 1024
"""Chunks at least this long (bytes) are hashed on a worker thread while the consumer writes them."""

_hash_workers: ThreadPoolExecutor | None = None
_hash_workers_lock = threading.Lock()


def _forget_hash_pool() -> None:
    # A forked child inherits the pool object but not its threads: start afresh.
    global _hash_workers, _hash_workers_lock
    _hash_workers = None
    _hash_workers_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_hash_pool)


def _hash_pool() -> ThreadPoolExecutor:
    global _hash_workers
    with _hash_workers_lock:
        if _hash_workers is None:
            _hash_workers = ThreadPoolExecutor(
                max_workers=os.cpu_count() or 2, thread_name_prefix="docbinder-sha256"
            )
        return _hash_workers


def _submit_hash(update: Callable[[bytes], None], chunk: bytes) -> Future[None] | None:
    """Hash ``chunk`` on the worker pool; ``None`` if the pool takes no more work.

    During interpreter shutdown (a late thread, an ``atexit`` handler) the pool
    refuses new tasks with ``RuntimeError``; the caller then hashes inline.
    """
    try:
        return _hash_pool().submit(update, chunk)
    except RuntimeError:
        return None


class HashingStream:
    """Wraps a chunk stream: counts bytes, computes SHA-256, keeps the head, enforces a limit.

    ``max_size`` is in bytes (``None`` for no limit); exceeding it raises
    :class:`SizeLimitExceeded` from inside the iteration, so the blob store
    aborts the write and keeps nothing.

    A chunk of at least :data:`OVERLAP_MIN_BYTES` is hashed on a worker
    thread while the consumer writes it (``hashlib`` and ``os.write`` both
    release the GIL), so large files cost about the longer of the two instead
    of their sum; chunks are still hashed one after the other, in order.
    """

    def __init__(self, data: FileData, max_size: int | None = None) -> None:
        self._chunks = iter_chunks(data)
        self._max = max_size
        self._hash = hashlib.sha256()
        self._pending: Future[None] | None = None
        self.size = 0
        self.head = b""

    def __iter__(self) -> Iterator[bytes]:
        try:
            for chunk in self._chunks:
                self.size += len(chunk)
                if self._max is not None and self.size > self._max:
                    raise SizeLimitExceeded(self._max)
                if len(self.head) < SNIFF_BYTES:
                    self.head += chunk[: SNIFF_BYTES - len(self.head)]
                self._settle()
                if len(chunk) >= OVERLAP_MIN_BYTES:
                    self._pending = _submit_hash(self._hash.update, chunk)
                if self._pending is None:
                    self._hash.update(chunk)
                yield chunk
        finally:
            self._settle()

    def _settle(self) -> None:
        """Wait for the chunk being hashed on the worker thread, if any."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    @property
    def sha256(self) -> str:
        """Hex SHA-256 of everything iterated so far."""
        self._settle()
        return self._hash.hexdigest()
