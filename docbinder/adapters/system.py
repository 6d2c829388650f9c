"""System adapters: the real clock and random UUID ids."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime


class UtcClock:
    """:class:`~docbinder.ports.system.Clock` reading the system time in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class UuidIdFactory:
    """:class:`~docbinder.ports.system.IdFactory` giving random version-4 UUIDs (RFC 9562)."""

    def new_id(self) -> str:
        return str(uuid.uuid4())
