"""Running the blocking use cases from the HTTP service's event loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread

T = TypeVar("T")


async def blocking(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in one of anyio's worker threads (the use cases block on storage)."""
    return await anyio.to_thread.run_sync(lambda: fn(*args))
