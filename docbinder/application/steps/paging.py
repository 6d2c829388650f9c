"""Listing what a caller may see, newest first, without loading a whole mandate."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

PAGE_SIZE = 200
"""Rows read per repository call while filling a listing."""

MAX_PAGE_SIZE = 10_000
"""Most rows asked for in one repository call, whatever ``limit`` is (every backend's
``LIMIT`` takes it; a limit like ``10**20`` reads page after page instead of overflowing)."""


def visible_newest_first(
    fetch: Callable[[int, T | None], list[T]],
    visible: Callable[[T], bool],
    limit: int | None,
    page_size: int = PAGE_SIZE,
) -> list[T]:
    """The first ``limit`` entries (all if ``None``) for which ``visible`` holds.

    ``fetch(n, after)`` returns at most ``n`` entries behind ``after`` (keyset
    paging, newest first; ``after=None`` starts at the newest). Pages are read
    until ``limit`` visible entries are found or the rows run out, so a short
    listing reads a few pages however many entries the mandate has.
    """
    found: list[T] = []
    after: T | None = None
    size = page_size if limit is None else min(max(page_size, limit), MAX_PAGE_SIZE)
    while limit is None or len(found) < limit:
        page = fetch(size, after)
        found.extend(entry for entry in page if visible(entry))
        if len(page) < size:
            break
        after = page[-1]
    return found if limit is None else found[:limit]
