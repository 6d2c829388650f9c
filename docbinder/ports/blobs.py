"""The blob-store port (SPEC C13)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import BinaryIO, Protocol

import attrs

from docbinder.domain.errors import InvalidInput

Chunks = Iterable[bytes]
"""A stream of byte chunks; any chunk size, empty chunks allowed."""

CHUNK_SIZE = 1 << 20
"""Default read size for file objects, in bytes (1 MiB)."""


def iter_chunks(data: Chunks | BinaryIO | bytes, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """Yield non-empty ``bytes`` chunks from bytes, an iterable of chunks or a binary file object.

    File objects are read ``chunk_size`` bytes at a time; nothing is read whole.
    ``bytearray``/``memoryview`` chunks are converted to ``bytes``. Anything else
    (``str``, ``None``, integers, a text-mode file) raises :class:`InvalidInput`
    when iterated, before or at the offending chunk.
    """
    if isinstance(data, bytes | bytearray | memoryview):
        if data:
            yield bytes(data)
        return
    if isinstance(data, str) or data is None:
        raise InvalidInput(
            f"file data must be bytes, byte chunks or a binary file, not {type(data).__name__}"
        )
    if hasattr(data, "read"):
        reader = data.read
        while True:
            chunk = reader(chunk_size)
            if not chunk:
                return
            yield _as_bytes(chunk)
    else:
        try:
            chunks = iter(data)
        except TypeError:
            raise InvalidInput(
                f"file data must be bytes, byte chunks or a binary file, not {type(data).__name__}"
            ) from None
        for chunk in chunks:
            if chunk:
                yield _as_bytes(chunk)


def _as_bytes(chunk: object) -> bytes:
    """``chunk`` as ``bytes``; :class:`InvalidInput` for anything not bytes-like (str, int, ...)."""
    if isinstance(chunk, bytes):
        return chunk
    if isinstance(chunk, bytearray | memoryview):
        return bytes(chunk)
    raise InvalidInput(
        f"file data chunks must be bytes, not {type(chunk).__name__}"
        + (" (open the file in binary mode)" if isinstance(chunk, str) else "")
    )


@attrs.frozen
class BlobStat:
    """Size in bytes and last-modified time (UTC) of a stored blob."""

    size: int
    modified_at: datetime


class BlobStore(Protocol):
    """Stores opaque byte blobs under keys made from ids.

    Keys are strings of ``[A-Za-z0-9._-]`` segments joined by ``/``, at most 255
    characters, never ``..``; adapters reject anything else with
    :class:`~docbinder.domain.errors.InvalidInput`. Adapters stream: no method
    reads a whole blob into memory. Errors: :class:`BlobMissing` for a key that
    is not there, :class:`StorageError` for backend faults.
    """

    @property
    def url(self) -> str:
        """Where the blobs live, for diagnostics (``file:///...``, ``s3://...``, ``memory://``)."""
        ...

    def put(self, key: str, data: Chunks | BinaryIO) -> int:
        """Store ``data`` under ``key`` atomically; return the number of bytes written.

        Either the whole blob becomes visible or nothing does (no partial blob,
        no temp file left) — also when iterating ``data`` raises, in which case
        the exception propagates unchanged. An existing blob under ``key`` is
        replaced.
        """
        ...

    def open(self, key: str, chunk_size: int = 1 << 20) -> Iterator[bytes]:
        """Yield the blob's bytes in chunks of at most ``chunk_size`` bytes.

        Raises :class:`BlobMissing` (before the first chunk) if ``key`` is absent.
        """
        ...

    def stat(self, key: str) -> BlobStat:
        """The blob's size and modification time; :class:`BlobMissing` if absent."""
        ...

    def exists(self, key: str) -> bool:
        """Whether a blob is stored under ``key``."""
        ...

    def delete(self, key: str) -> None:
        """Remove the blob; removing an absent key is not an error."""
        ...

    def keys(self) -> Iterator[str]:
        """Every stored key (for ``gc``), in no particular order."""
        ...

    def identity(self, *, create: bool = False) -> str | None:
        """The store's identity: an id persisted inside the store itself, or ``None``.

        With ``create`` an identity is made on first use (atomically: two
        first writers end up with the same one) and returned; without it a
        store that has none (never written by docbinder, or the URL points at
        the wrong place) gives ``None`` and nothing is created. Every FileItem
        records the identity of the store holding its bytes, so ``gc`` can tell
        rows of this store from rows of another one. Raises
        :class:`StorageError` when the store cannot be read.
        """
        ...

    def register_database(self, database_id: str) -> None:
        """Record inside the store that the metadata database ``database_id`` writes into it.

        Idempotent. ``gc`` connected to one database removes orphan blobs only
        while no other database is registered: a blob no row of *this*
        database names may belong to another one. :class:`InvalidInput` for an
        id that is not key-like.
        """
        ...

    def databases(self) -> set[str]:
        """The ids of every metadata database registered with :meth:`register_database`."""
        ...


_KEY_RE = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$")


def check_blob_key(key: object) -> str:
    """Return ``key`` if it is a valid blob key, else raise :class:`InvalidInput`.

    Valid: at most 255 characters of ``[A-Za-z0-9._-]`` segments joined by
    single ``/``; no segment starts with ``.`` (so no ``.``/``..``, no hidden
    files), no leading or trailing ``/``. Every adapter calls this first, so no
    key can name a place outside the store.
    """
    if not isinstance(key, str) or len(key) > 255 or not _KEY_RE.fullmatch(key):
        raise InvalidInput(f"invalid blob key {key!r}")
    return key


_OWN_KEY_RE = re.compile(
    r"\A(?:([A-Za-z0-9_-]{2})/([A-Za-z0-9_-]{2,128})"
    r"|docbinder-probe-[0-9a-f]{32})\Z"
)


def is_own_key(key: str) -> bool:
    """Whether ``key`` follows docbinder's own layout, so ``gc`` may consider it.

    docbinder writes only ``<first two characters of an id>/<id>`` (see
    :func:`docbinder.application.blob_rules.blob_key_for`; ids hold no ``.``, so a
    file name with an extension never matches) and the probe
    ``docbinder-probe-<32 hex digits>``; anything else in a blob root or bucket
    (``notes.txt``, ``2024/report.pdf``) belongs to someone else and is never
    removed.
    """
    match = _OWN_KEY_RE.fullmatch(key)
    if match is None:
        return False
    head, tail = match.group(1), match.group(2)
    return head is None or tail.startswith(head)


def is_blob_key(key: object) -> bool:
    """Whether ``key`` passes :func:`check_blob_key` (used when listing what a store holds)."""
    try:
        check_blob_key(key)
    except InvalidInput:
        return False
    return True
