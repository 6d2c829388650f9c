"""Small system ports: time and ids."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol


class Clock(Protocol):
    """Source of the current time."""

    def now(self) -> datetime:
        """The current time as a timezone-aware UTC datetime."""
        ...


class IdFactory(Protocol):
    """Source of new ids: random, never sequential, never derived from content or names."""

    def new_id(self) -> str:
        """A new unique id (a random UUID in the default adapter).

        UUID ids must be in canonical form (lowercase, hyphenated, RFC 9562):
        the documentList parser reads any spelling of a UUID a model sends
        back (upper case, without hyphens) as that canonical form.
        """
        ...
