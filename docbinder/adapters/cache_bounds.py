"""Bounds every extraction cache adapter shares (memory, SQL): defaults and their check."""

from __future__ import annotations

from typing import Final

from docbinder.domain.errors import InvalidInput

DEFAULT_MAX_ENTRIES: Final = 10_000
"""Default bound on cached documents."""

DEFAULT_MAX_BYTES: Final = 256 * 1024 * 1024
"""Default bound on the sum of cached payloads, in bytes (256 MiB)."""


def check_bounds(max_entries: int, max_bytes: int) -> None:
    """Raise :class:`InvalidInput` unless both bounds are positive integers."""
    for name, value in (("max_entries", max_entries), ("max_bytes", max_bytes)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InvalidInput(f"{name} must be a positive integer, got {value!r}")
