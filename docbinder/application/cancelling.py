"""Blocking work in a worker thread that learns when its awaiting caller is gone (ADR 0070).

``anyio.to_thread.run_sync`` never abandons its thread: a cancelled ``await``
waits until the thread returns. For reads that convert documents that can be
half a minute; :func:`run_sync_cancellable` therefore watches the awaiting
task's cancellation beside the thread and, when it comes, sets the
:class:`~docbinder.domain.reading.CancelToken` the thread runs under
(:func:`~docbinder.domain.reading.cancellation`). The read calls inside the
thread see it, the converter process in progress is killed, the documents not
read yet are reported as not read, and the thread returns at once; the
``await`` then raises the cancellation as anyio does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread

from docbinder.domain.reading import CancelToken, cancellation

T = TypeVar("T")

GONE = "the caller is gone (its request was cancelled)"
"""The reason a cancelled caller's unread documents are reported with."""


async def run_sync_cancellable(
    func: Callable[[], T], *, limiter: Any = None, reason: str = GONE
) -> T:
    """``func()`` in an anyio worker thread under a cancel token that the caller's cancellation sets.

    ``limiter`` is the :class:`anyio.CapacityLimiter` of the thread (``None``:
    anyio's default). Returns what ``func`` returns, raises what it raises; a
    cancelled caller gets anyio's cancellation once the thread has returned.
    """
    token = CancelToken()

    def work() -> T:
        with cancellation(token):
            return func()

    async def watch() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            token.cancel(reason)

    async with anyio.create_task_group() as group:
        group.start_soon(watch)
        try:
            result = await anyio.to_thread.run_sync(work, limiter=limiter)
        finally:
            group.cancel_scope.cancel()
    # The thread's result is not handed to a caller that is gone: its cancellation is.
    await anyio.lowlevel.checkpoint_if_cancelled()
    return result
