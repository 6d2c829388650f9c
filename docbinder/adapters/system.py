"""System adapters: the real clock and random UUID ids."""

from __future__ import annotations

import os
from datetime import UTC, datetime

# RFC 9562 §4.1 and §5.4 on the UUID as a 128-bit big-endian integer: the version field
# (bits 76..79) holds 4 and the variant field (bits 62..63) holds binary 10.
_VERSION_AND_VARIANT_MASK = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)
_VERSION_4_AND_VARIANT = (0x4000 << 64) | (0x8000 << 48)


class UtcClock:
    """:class:`~docbinder.ports.system.Clock` reading the system time in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


def uuid4_text(random_bytes: bytes) -> str:
    """The version-4 UUID made from 16 random bytes, in its 36-character hex form (RFC 9562).

    The same text as ``str(uuid.UUID(bytes=random_bytes, version=4))``, which
    ``uuid.uuid4()`` gives for ``os.urandom(16)``: the version and variant bits
    are set, the other 122 bits are the given ones. Raises :class:`ValueError`
    unless ``random_bytes`` holds exactly 16 bytes.
    """
    if len(random_bytes) != 16:
        raise ValueError("a UUID is made of 16 bytes")
    value = int.from_bytes(random_bytes, "big") & _VERSION_AND_VARIANT_MASK | _VERSION_4_AND_VARIANT
    hexa = f"{value:032x}"
    return f"{hexa[:8]}-{hexa[8:12]}-{hexa[12:16]}-{hexa[16:20]}-{hexa[20:]}"


class UuidIdFactory:
    """:class:`~docbinder.ports.system.IdFactory` giving random version-4 UUIDs (RFC 9562).

    The randomness is ``uuid.uuid4``'s: 16 bytes of ``os.urandom``.
    """

    def new_id(self) -> str:
        return uuid4_text(os.urandom(16))
