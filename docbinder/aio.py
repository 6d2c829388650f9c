"""Async API of docbinder: :class:`AsyncDocBinder`, :class:`AsyncRun` and how to build them.

``await build_async_binder(...)`` is :func:`docbinder.container.build_binder`
(same settings, same errors) run in a worker thread, wrapped in an
:class:`AsyncDocBinder`; ``AsyncDocBinder(binder)`` wraps a binder a host built
itself. See ``docs/adr/0015-async-api-on-worker-threads.md``.
"""

from __future__ import annotations

import functools
from typing import Any

import anyio.to_thread

from docbinder.application.aio import (
    DEFAULT_BUFFER_CHUNKS,
    DEFAULT_MAX_THREADS,
    AsyncChunks,
    AsyncDocBinder,
    AsyncFileData,
    AsyncRun,
    UploadAborted,
)
from docbinder.config import Settings
from docbinder.container import build_binder
from docbinder.ports.authorizer import Authorizer

__all__ = [
    "DEFAULT_BUFFER_CHUNKS",
    "DEFAULT_MAX_THREADS",
    "AsyncChunks",
    "AsyncDocBinder",
    "AsyncFileData",
    "AsyncRun",
    "UploadAborted",
    "build_async_binder",
]


async def build_async_binder(
    settings: Settings | None = None,
    *,
    prepare: bool = True,
    authorizer: Authorizer | str | None = None,
    max_threads: int = DEFAULT_MAX_THREADS,
    buffer_chunks: int = DEFAULT_BUFFER_CHUNKS,
    **overrides: Any,
) -> AsyncDocBinder:
    """Build a :class:`DocBinder` as :func:`~docbinder.container.build_binder` does, async.

    ``settings``, ``prepare``, ``authorizer`` and ``overrides`` mean what they
    mean there (migrating SQLite runs in a worker thread); ``max_threads`` and
    ``buffer_chunks`` are those of :class:`AsyncDocBinder`. Raises
    :class:`ConfigurationError`, :class:`MissingExtra`, :class:`InvalidInput`.
    Close it with ``await binder.aclose()``, or use
    ``async with await build_async_binder(...) as binder:``.
    """
    build = functools.partial(
        build_binder, settings, prepare=prepare, authorizer=authorizer, **overrides
    )
    binder = await anyio.to_thread.run_sync(build)
    return AsyncDocBinder(binder, max_threads=max_threads, buffer_chunks=buffer_chunks)
