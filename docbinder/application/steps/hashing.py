"""Streaming a producer's bytes once: size, SHA-256, head and size limit (SPEC C1)."""

from __future__ import annotations

import hashlib
import os
import threading
import weakref
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


class HashWorkers:
    """The worker threads that hash large chunks while the blob store writes them.

    Threads start on the first large chunk (at most ``max_workers``, default
    the CPU count) and live until :meth:`close`, which shuts them down and
    waits for them; it is idempotent. A closed pool (or one the interpreter
    refuses work to, during shutdown) hashes inline instead: :meth:`submit`
    answers ``None``. The composition root gives each binder its own pool and
    closes it with the binder; :data:`SHARED_HASH_WORKERS` serves streams
    built without one. A forked child starts its pools afresh.
    """

    def __init__(self, max_workers: int | None = None) -> None:
        self._max_workers = max_workers or os.cpu_count() or 2
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False
        _ALL_WORKERS.add(self)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    @property
    def started(self) -> bool:
        """Whether worker threads were started and not yet shut down."""
        return self._pool is not None

    def submit(self, update: Callable[[bytes], None], chunk: bytes) -> Future[None] | None:
        """Run ``update(chunk)`` on a worker thread; ``None`` if the pool takes no more work."""
        with self._lock:
            if self._closed:
                return None
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=self._max_workers, thread_name_prefix="docbinder-sha256"
                )
            pool = self._pool
        try:
            return pool.submit(update, chunk)
        except RuntimeError:  # interpreter shutdown: the pool refuses new work
            return None

    def close(self) -> None:
        """Stop the worker threads after the work already handed to them; idempotent."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _forget(self) -> None:
        # A forked child inherits the pool object but not its threads: start afresh.
        self._pool = None
        self._lock = threading.Lock()


_ALL_WORKERS: weakref.WeakSet[HashWorkers] = weakref.WeakSet()


def _forget_hash_pools() -> None:
    for workers in list(_ALL_WORKERS):
        workers._forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_hash_pools)

SHARED_HASH_WORKERS = HashWorkers()
"""The pool of streams built without one (threads start only on a large chunk)."""


class HashingStream:
    """Wraps a chunk stream: counts bytes, computes SHA-256, keeps the head, enforces a limit.

    ``max_size`` is in bytes (``None`` for no limit); exceeding it raises
    :class:`SizeLimitExceeded` from inside the iteration, so the blob store
    aborts the write and keeps nothing.

    A chunk of at least :data:`OVERLAP_MIN_BYTES` is hashed on a worker
    thread of ``workers`` (default :data:`SHARED_HASH_WORKERS`) while the consumer writes it (``hashlib`` and ``os.write`` both
    release the GIL), so large files cost about the longer of the two instead
    of their sum; chunks are still hashed one after the other, in order.
    """

    def __init__(
        self, data: FileData, max_size: int | None = None, workers: HashWorkers | None = None
    ) -> None:
        self._chunks = iter_chunks(data)
        self._workers = workers or SHARED_HASH_WORKERS
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
                    self._pending = self._workers.submit(self._hash.update, chunk)
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
