"""The blob-store port (SPEC C13)."""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from types import TracebackType
from typing import BinaryIO, Protocol, Self, runtime_checkable

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


class BlobReader(Protocol):
    """An open blob: an iterator of ``bytes`` chunks that owns a stream and is a context manager.

    What :meth:`BlobStore.open` returns. Use it as ``with store.open(key) as
    chunks: ...``: leaving the block closes the stream (file descriptor, HTTP
    response) whether the consumer read everything, stopped early or raised.
    It is also closed when exhausted. After :meth:`close` iteration yields
    nothing more. Read faults while iterating raise :class:`StorageError`.
    See ``docs/adr/0027-blob-reader-context-manager.md``.
    """

    def __iter__(self) -> Self:
        """The reader itself: one pass over the blob."""
        ...

    def __next__(self) -> bytes:
        """The next non-empty chunk; ``StopIteration`` at the end or once closed."""
        ...

    def close(self) -> None:
        """Release the stream; safe to call more than once."""
        ...

    def __enter__(self) -> Self:
        """The reader itself."""
        ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the reader; exceptions propagate."""
        ...


@attrs.frozen
class BlobStat:
    """Size in bytes, last-modified time (UTC) and provenance mark of a stored blob.

    ``origin`` is the mark the store keeps with the blob, as found (see
    :func:`blob_origin` and :func:`compact_blob_origin`; local disk: the extended
    attribute ``user.docbinder.origin``, S3: the object metadata
    ``x-amz-meta-docbinder-origin``), ``None`` when the blob has none
    (written by something else, before marks existed, or by a store that keeps
    none).
    """

    size: int
    modified_at: datetime
    origin: str | None = None


ORIGIN_VERSION = "v1"
"""First word of every full provenance mark (:func:`blob_origin`).

A mark whose first word is neither this nor :data:`COMPACT_ORIGIN_VERSION` is
never taken for docbinder's.
"""

COMPACT_ORIGIN_VERSION = "v2"
"""First word of every compact provenance mark (:func:`compact_blob_origin`, ADR 0036)."""

COMPACT_MAC_BYTES = 9
"""Bytes of HMAC-SHA-256 a compact mark keeps (72 bits; 12 base64url characters)."""


def blob_origin(store_id: str, database_id: str | None, key: str) -> str:
    """The provenance mark docbinder stores with the blob ``key``: ``"v1 <store> <database> <mac>"``.

    ``database`` is the id of the metadata database writing it, or ``-`` when
    the store does not know it; ``mac`` is the first 32 hex digits of
    HMAC-SHA-256 (RFC 2104) keyed with the store identity over the key and the
    database, so a mark copied onto another key, or a blob copied from another
    store, does not verify (:func:`read_origin`). The identity is readable by
    whoever can read the store: the mark tells docbinder's own blobs from files
    put there by mistake, not from a forger holding the store's credentials.
    About 109 ASCII characters with UUID ids; the S3 and memory stores write
    it, local disk writes :func:`compact_blob_origin`.
    """
    database = database_id or "-"
    return (
        f"{ORIGIN_VERSION} {store_id} {database} {_origin_mac(store_id, database, key).hex()[:32]}"
    )


def compact_blob_origin(store_id: str, database_id: str | None, key: str) -> str:
    """The compact provenance mark of the blob ``key``: ``"v2 <mac>"``, 15 ASCII characters.

    ``mac`` is the first :data:`COMPACT_MAC_BYTES` (9) bytes of the HMAC-SHA-256
    :func:`blob_origin` computes (keyed with ``store_id`` over ``key``, a
    newline and ``database_id`` or ``-``), in base64url without padding (RFC
    4648 section 5; 12 characters). The store and database ids are not written:
    the MAC binds them, and :func:`read_origin` verifies the mark against the
    store id and the candidate databases its caller knows.

    Why: the local-disk store keeps the mark in an extended attribute, and ext4
    with 256-byte inodes fits only about 92 bytes of attributes in the inode;
    the 109-byte full mark made it allocate a 4 KiB attribute block for every
    blob (ADR 0036). 72 bits are ample for what the mark proves: it tells
    docbinder's own blobs from files put there by mistake and blobs copied
    from another store or key, not from a forger holding the store's identity
    (readable by whoever can read the store, as for :func:`blob_origin`).
    """
    mac = _origin_mac(store_id, database_id or "-", key)[:COMPACT_MAC_BYTES]
    return f"{COMPACT_ORIGIN_VERSION} {base64.urlsafe_b64encode(mac).decode('ascii').rstrip('=')}"


def _origin_mac(store_id: str, database: str, key: str) -> bytes:
    """HMAC-SHA-256 keyed with ``store_id`` over ``key + "\\n" + database`` (32 bytes)."""
    mac = _keyed_mac(store_id).copy()
    mac.update(f"{key}\n{database}".encode())
    return mac.digest()


@functools.lru_cache(maxsize=16)
def _keyed_mac(store_id: str) -> hmac.HMAC:
    """HMAC-SHA-256 keyed with ``store_id``, fed nothing: copied for each mark (never updated)."""
    return hmac.new(store_id.encode(), digestmod=hashlib.sha256)


@attrs.frozen
class BlobOrigin:
    """A verified provenance mark: the store and (if known) the database that wrote a blob."""

    store_id: str
    database_id: str | None


_COMPACT_MARK_RE = re.compile(r"\Av2 [A-Za-z0-9_-]{12}\Z")


def read_origin(
    mark: str | None,
    key: str,
    store_id: str | None = None,
    databases: Iterable[str | None] = (),
) -> BlobOrigin | None:
    """The verified origin of the blob ``key`` from its mark, or ``None`` if it does not verify.

    A full mark (:func:`blob_origin`, ``v1``) names its store and database and
    is verified on its own; ``store_id`` and ``databases`` are not used for it,
    and the caller still compares the returned ``store_id`` with the store it
    is connected to. A compact mark (:func:`compact_blob_origin`, ``v2``) names
    neither: it verifies only against ``store_id`` (the identity of the store
    the blob was read from) and gives ``BlobOrigin(store_id, database)`` for
    the first of ``databases`` (``None`` standing for ``-``, no database)
    whose MAC matches; ``None`` when ``store_id`` is ``None``, none matches or
    ``databases`` is empty, so a compact mark of a database the caller does
    not know is unproven, never another's or its own. ``None`` also for no
    mark, another format or version, a mark with non-ASCII characters (never
    docbinder's), or a MAC that does not match ``key``. MACs are compared in
    constant time (:func:`hmac.compare_digest`).
    """
    if not mark:
        return None
    text = mark.strip()
    if not text.isascii():
        return None  # every mark docbinder writes is ASCII
    if _COMPACT_MARK_RE.fullmatch(text):
        if store_id is None:
            return None
        for database_id in databases:
            expected = compact_blob_origin(store_id, database_id, key)
            if hmac.compare_digest(expected.encode("ascii"), text.encode("ascii")):
                return BlobOrigin(store_id, None if database_id in (None, "", "-") else database_id)
        return None
    parts = text.split(" ")
    if len(parts) != 4 or parts[0] != ORIGIN_VERSION:
        return None
    _version, marked_store, database, _mac = parts
    if not hmac.compare_digest(blob_origin(marked_store, database, key), text):
        return None
    return BlobOrigin(marked_store, None if database == "-" else database)


class BlobStore(Protocol):
    """Stores opaque byte blobs under keys made from ids.

    Keys are strings of ``[A-Za-z0-9._-]`` segments joined by ``/``, at most 255
    characters, never ``..``; adapters reject anything else with
    :class:`~docbinder.domain.errors.InvalidInput`. Adapters stream: no method
    reads a whole blob into memory. Errors: :class:`BlobMissing` for a key that
    is not there, :class:`StorageError` for backend faults.

    ``docbinder.adapters.blobstore_base.BlobStoreBase`` implements this port over
    five primitives a backend writes (ADR 0046); any other object with these
    methods is accepted as well.
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
        replaced. Once the store knows its identity (:meth:`identity`), the
        blob is stored with its provenance mark (:func:`blob_origin` or
        :func:`compact_blob_origin`, for the database given to
        :meth:`register_database` when exactly one was),
        which :meth:`stat` returns; a store that cannot keep marks stores none,
        and ``gc`` then never removes its unnamed blobs.
        """
        ...

    def open(self, key: str, chunk_size: int = 1 << 20) -> BlobReader:
        """Open the blob now: a :class:`BlobReader` of chunks of at most ``chunk_size`` bytes.

        Use it in a ``with`` block so the stream is closed however the reading
        ends. Raises at call time :class:`BlobMissing` if ``key`` is absent and
        :class:`InvalidInput` for a bad key or ``chunk_size < 1``.
        """
        ...

    def open_range(
        self, key: str, offset: int, length: int, chunk_size: int = 1 << 20
    ) -> BlobReader:
        """Open the bytes ``offset`` to ``offset + length - 1`` of the blob now (a ranged read).

        ``offset`` and ``length`` are in bytes; the range is clipped at the blob's
        end (an ``offset`` at or past it gives no bytes). The store starts reading
        at ``offset`` and stops after ``length`` bytes where its backend can
        (local disk: a seek; S3: a ``GetObject`` with ``Range: bytes=...``, RFC 9110
        section 14); a range costs what it holds, not what comes before it. A
        :class:`BlobReader` of chunks of at most ``chunk_size`` bytes. Raises at
        call time :class:`BlobMissing` if ``key`` is absent and
        :class:`InvalidInput` for a bad key, a negative ``offset`` or ``length``,
        or ``chunk_size < 1``. Optional for stores written before it existed:
        :func:`open_blob_range` reads those from the start.
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

        Idempotent. The store also remembers the id for the provenance marks of
        the blobs it writes from then on (``-`` once two different ids were
        registered on one instance), so that ``gc`` of one database never takes
        a blob another database wrote. ``gc`` removes an unnamed blob whose mark
        names no database only while no other database is registered: it may
        belong to another one. :class:`InvalidInput` for an id that is not
        key-like.
        """
        ...

    def databases(self) -> set[str]:
        """The ids of every metadata database registered with :meth:`register_database`."""
        ...

    def mark_committed(self, key: str) -> bool:
        """Record with the blob ``key`` that a FileItem naming it committed; whether it was kept.

        docbinder calls it once per newly written blob, after the unit of work
        that names the blob committed and outside any unit of work (ADR 0031).
        The record lives in the store, beside the blob (local disk: the
        extended attribute ``user.docbinder.committed``; S3: the object tag
        ``docbinder-committed``; memory: a flag), so a database restored from
        a backup or copied cannot lose it: ``gc`` never removes an unnamed
        blob carrying it (:meth:`is_committed`), it reports it. The record
        goes with the blob: a later :meth:`put` under ``key`` or a
        :meth:`delete` drops it. It changes neither the bytes, the size, the
        modification time nor the provenance mark.

        Returns ``False`` when the store cannot keep the record here (no
        extended attributes, permission refused, tagging not allowed; the
        adapter logs why once): ``gc`` then treats the blob as it treats every
        unconfirmed one. Raises :class:`BlobMissing` for an absent blob,
        :class:`StorageError` for backend faults. Optional for stores written
        before it existed: docbinder calls it only where a store has it, and
        ``gc`` treats the orphans of a store without it as unconfirmed.
        """
        ...

    def database_claim(self, database_id: str) -> str | None:
        """The claim token recorded in the store for the metadata database ``database_id``, or ``None``.

        The claim record (ADR 0075; shipped stores: the record
        ``.docbinder-claims/<database id>``) names which of the databases
        carrying one id owns it: a volume clone carries the id too, and the
        store is the one place both write to. :class:`StorageError` for
        backend faults. Optional: a store without it is trusted as before
        claims existed.
        """
        ...

    def set_database_claim(self, database_id: str, token: str) -> None:
        """Record ``token`` (ASCII, one line) as the claim of ``database_id``, replacing any.

        :class:`InvalidInput` for an id that is not one key segment or a
        token that is not printable ASCII; :class:`StorageError` for backend
        faults. Optional like :meth:`database_claim`.
        """
        ...

    def is_committed(self, key: str) -> bool:
        """Whether :meth:`mark_committed` was recorded for the blob now under ``key``.

        ``False`` where the store keeps no such records. Raises
        :class:`BlobMissing` for an absent blob, :class:`StorageError` for
        backend faults, including a store that refuses to tell (``gc`` then
        stops rather than guess). Optional like :meth:`mark_committed`.
        """
        ...


@runtime_checkable
class LocatingBlobStore(Protocol):
    """The optional part of the blob-store port: where the store's bytes are (ADR 0030).

    A store identity (:meth:`BlobStore.identity`) travels with every copy of a
    store: ``cp -a`` of a blob root, a restored backup or snapshot, ``aws s3
    sync`` into another bucket all carry the same ``.docbinder-store``. The
    location tells such a copy from the store itself. A backend that lacks
    :meth:`location` is accepted everywhere; ``gc`` then trusts a row's missing
    blob no more than before locations existed (only its other guards apply),
    and deleting a file frees its blob as before.
    """

    def location(self, *, create: bool = False) -> str | None:
        """A fingerprint of where the store's bytes are, or ``None`` when it has none yet.

        It must stay the same whenever the same bytes are reached again (a
        new store object, another process, a rename of the directory on one
        file system, another endpoint host name for the same bucket) and
        change when the bytes are a copy or a restore, at another place or at
        the same one. Shipped stores: local disk, the device and inode number
        of the directory ``<root>/.docbinder-location``; S3, the bucket, the
        prefix and the identity object's server-assigned ``LastModified`` and
        ``ETag``; memory, a token of the store object. Without ``create`` a
        store that has no location marker yet gives ``None`` and nothing is
        made; with it the marker is made (atomically) and the location
        returned. Any text up to any length: callers keep only
        :func:`location_fingerprint` of it. Raises :class:`StorageError` when
        the store cannot be read.
        """
        ...


@runtime_checkable
class InliningBlobStore(Protocol):
    """The optional part of the blob-store port: small blobs written in the caller's transaction.

    A store with an inline tier (ADR 0110) keeps every blob of at most
    :attr:`inline_limit` bytes in the metadata database (its
    :class:`~docbinder.ports.metadata.InlineBlobRepository`), so the code that
    stores a file can write the bytes in the unit of work that records its
    FileItem and ChatDocument: one commit, no blob without its row. Everything
    else reads, lists, stats and deletes such blobs through the ordinary
    :class:`BlobStore` methods.
    """

    @property
    def inline_limit(self) -> int:
        """Largest blob, in bytes, the store keeps inline; ``0`` when new blobs never go inline."""
        ...

    def inline_origin(self, key: str) -> str | None:
        """The provenance mark a new inline blob ``key`` gets (:func:`blob_origin`); ``None`` without identity."""
        ...

    def is_inline(self, key: str) -> bool:
        """Whether the blob ``key`` is kept in the metadata database (no presigned URL reads it)."""
        ...

    def inline_keys(self) -> set[str]:
        """The keys of every blob kept inline."""
        ...

    def inline_totals(self) -> tuple[int, int]:
        """How many blobs are kept inline and their bytes in all (``gc`` and ``doctor`` report them)."""
        ...


@runtime_checkable
class PresigningBlobStore(Protocol):
    """The optional part of the blob-store port: a time-limited URL that reads one blob.

    A store that can hand a client a URL to fetch the bytes itself (S3's
    presigned ``GetObject``, AWS Signature Version 4) lets a signed docbinder link
    redirect there instead of streaming the bytes through the server.
    """

    def presigned_get(
        self, key: str, *, expires_in: int, file_name: str, mime_type: str, disposition: str
    ) -> str:
        """A URL that reads blob ``key`` for ``expires_in`` seconds (1 to 604800).

        The answer carries ``mime_type`` as its ``Content-Type`` and
        ``disposition`` (a complete ``Content-Disposition`` value, RFC 6266) for
        ``file_name``. Raises :class:`StorageError` when no URL can be made.
        """
        ...


def check_range(offset: object, length: object, chunk_size: object = CHUNK_SIZE) -> None:
    """:class:`InvalidInput` unless ``offset`` and ``length`` are integers >= 0 and ``chunk_size`` >= 1."""
    for name, value, least in (("offset", offset, 0), ("length", length, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise InvalidInput(f"{name} must be a whole number of bytes >= {least}, got {value!r}")
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise InvalidInput(f"chunk_size must be at least 1 byte, got {chunk_size!r}")


class WindowReader:
    """A :class:`BlobReader` of bytes ``offset`` to ``offset + length - 1`` of another reader.

    Reads ``inner`` from where it stands, drops the first ``offset`` bytes and stops
    (closing ``inner``) once ``length`` bytes were given or ``inner`` ends. For stores
    that cannot start a read in the middle, and to cut a backend's answer to size.
    """

    def __init__(self, inner: BlobReader, offset: int, length: int) -> None:
        self._inner: BlobReader | None = inner
        self._skip = offset
        self._left = length
        if length == 0:
            self.close()

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> bytes:
        while self._inner is not None:
            try:
                chunk = next(self._inner)
            except StopIteration:
                self.close()
                break
            except BaseException:
                self.close()
                raise
            if self._skip >= len(chunk):
                self._skip -= len(chunk)
                continue
            piece = chunk[self._skip : self._skip + self._left]
            self._skip = 0
            self._left -= len(piece)
            if self._left <= 0:
                self.close()
            if piece:
                return piece
        raise StopIteration

    def close(self) -> None:
        """Close the inner reader; further iteration yields nothing."""
        inner, self._inner = self._inner, None
        if inner is not None:
            inner.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def open_blob_range(
    blobs: BlobStore, key: str, offset: int, length: int, chunk_size: int = CHUNK_SIZE
) -> BlobReader:
    """A reader of ``length`` bytes of blob ``key`` from byte ``offset`` (clipped at its end).

    A store with :meth:`BlobStore.open_range` reads only the range; a store without
    it (written before ranged reads existed) is opened from its start and the bytes
    before ``offset`` dropped (:class:`WindowReader`). Errors as
    :meth:`BlobStore.open_range`.
    """
    check_range(offset, length, chunk_size)
    ranged = getattr(blobs, "open_range", None)
    if ranged is not None:
        reader: BlobReader = ranged(key, offset, length, chunk_size)
        return reader
    return WindowReader(blobs.open(key, chunk_size), offset, length)


def location_fingerprint(location: str) -> str:
    """SHA-256 hex digest (64 characters) of a :meth:`LocatingBlobStore.location` text.

    What the metadata database records per store identity and compares.
    """
    return hashlib.sha256(location.encode("utf-8")).hexdigest()


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
    :func:`docbinder.application.steps.blob_rules.blob_key_for`; ids hold no ``.``, so a
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
