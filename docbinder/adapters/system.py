"""System adapters: the real clock and random UUID ids."""

from __future__ import annotations

import os
from datetime import UTC, datetime

# RFC 9562 §4.1 and §5.4: in the 36-character form, the version digit (the 13th hex
# digit) is 4, and the variant bits (the top two of the 17th hex digit) are binary 10,
# so that digit is 8, 9, a or b; its low two bits stay random.
_VARIANT_DIGIT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


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
    h = random_bytes.hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT_DIGIT[h[16]]}{h[17:20]}-{h[20:]}"


class UuidIdFactory:
    """:class:`~docbinder.ports.system.IdFactory` giving random version-4 UUIDs (RFC 9562).

    The randomness is ``uuid.uuid4``'s: 16 bytes of ``os.urandom``.
    """

    def new_id(self) -> str:
        return uuid4_text(os.urandom(16))
