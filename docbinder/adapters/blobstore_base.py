"""A base class for blob stores: the port's bookkeeping over five primitives (ADR 0046).

:class:`BlobStoreBase` implements everything of
:class:`~docbinder.ports.blobs.BlobStore` that is the same in every backend
-- key checks, the store's identity, the registered databases, the
provenance marks (ADR 0022, 0036), the committed-blob records (ADR 0031) and
the write probe -- over a few primitives a backend writes::

    class MyStore(BlobStoreBase):
        url = "mystore://..."                     # where the blobs live (a property is fine)

        def _write(self, name, chunks, mark, *, replace=True): ...   # store atomically
        def _open(self, name, chunk_size): ...    # a BlobReader; BlobMissing if absent
        def _stat(self, name): ...                # a BlobStat with the mark; BlobMissing
        def _delete(self, name): ...              # absent is fine
        def _list(self, prefix): ...              # the names stored under prefix

and, to keep commit records, two more (:meth:`~BlobStoreBase._record_commit`
and :meth:`~BlobStoreBase._has_commit_record`); without them
``mark_committed`` answers ``False`` and ``gc`` treats the store's orphans as
unconfirmed. The ``BlobStore`` protocol stays the port: the application never
asks whether a store derives from this class, and a host may still pass any
object that has the port's methods.

*Names.* The primitives see blob keys (already checked with
:func:`~docbinder.ports.blobs.check_blob_key`) and the store's own records,
whose names have a segment starting with ``.`` (:data:`IDENTITY_NAME`,
:data:`DATABASES_PREFIX` ``+ <database id>``), so no key can ever collide
with them and :meth:`BlobStoreBase.keys` leaves them out.
"""

from __future__ import annotations

import abc
import logging
import secrets
import threading
import uuid
from collections.abc import Iterator
from typing import BinaryIO, ClassVar

from docbinder.domain.errors import BlobMissing, InvalidInput, StorageError
from docbinder.ports.blobs import (
    BlobReader,
    BlobStat,
    Chunks,
    WindowReader,
    blob_origin,
    check_blob_key,
    check_range,
    compact_blob_origin,
    is_blob_key,
    iter_chunks,
)

log = logging.getLogger(__name__)

IDENTITY_NAME = ".docbinder-store"
"""Name of the record holding the store's identity (a UUID and a newline, ASCII)."""

DATABASES_PREFIX = ".docbinder-databases/"
"""Names ``.docbinder-databases/<database id>`` (empty records) register the databases writing here."""

CLAIMS_PREFIX = ".docbinder-claims/"
"""Names ``.docbinder-claims/<database id>`` hold the claim token of that database id (ADR 0075)."""

CLAIM_BYTES = 256
"""At most this many bytes of a claim record are read (a token takes 33)."""

IDENTITY_BYTES = 256
"""At most this many bytes of the identity record are read (a UUID takes 37)."""

NO_RECORDS = "this store keeps no commit records"
"""What :meth:`BlobStoreBase._record_commit` answers in a store that does not override it."""

PROBE_PREFIX = "docbinder-probe-"
"""Key prefix of :meth:`BlobStoreBase.check_writable`'s probe blob (``+ 32 hex digits``)."""


class BlobStoreBase(abc.ABC):
    """A :class:`~docbinder.ports.blobs.BlobStore` built on five primitives (see the module).

    Subclasses call ``super().__init__()``, provide ``url`` and the five
    abstract primitives, and may override :meth:`_record_commit` and
    :meth:`_has_commit_record` to keep commit records. Set
    :attr:`compact_marks` to write the 15-byte ``v2`` mark instead of the full
    ``v1`` one (ADR 0036; for stores with little room per blob).

    What this class does for every store:

    * every public method checks its key first (:class:`InvalidInput`, and
      ``put`` consumes no input for a refused key);
    * ``put`` hands the primitive the provenance mark of the blob
      (:func:`~docbinder.ports.blobs.blob_origin` or
      :func:`~docbinder.ports.blobs.compact_blob_origin`) once the store knows
      its identity, naming the database registered on this object when
      exactly one was (``-`` otherwise);
    * ``identity`` reads the record :data:`IDENTITY_NAME` and, with
      ``create``, writes a new UUID there with ``replace=False``, so two first
      writers agree on the one that landed; the answer is kept per object;
    * ``register_database``/``databases`` keep one empty record per database
      under :data:`DATABASES_PREFIX`;
    * ``mark_committed`` translates a record the store cannot keep into
      ``False`` and one warning per object.

    Thread-safe as far as the primitives are.
    """

    compact_marks: ClassVar[bool] = False
    """Whether ``put`` hands the primitive the compact ``v2`` mark (15 bytes) instead of ``v1``."""

    def __init__(self) -> None:
        self._identity: str | None = None
        self._writers: frozenset[str] = frozenset()
        self._writer: str | None = None  # the one database registered here, named in marks
        self._registering = threading.Lock()
        self._unrecorded_told = False

    @property
    @abc.abstractmethod
    def url(self) -> str:
        """Where the blobs live, for diagnostics: ``<scheme>://...``."""

    # -- the primitives a backend writes -------------------------------------------

    @abc.abstractmethod
    def _write(
        self, name: str, chunks: Iterator[bytes], mark: str | None, *, replace: bool = True
    ) -> int:
        """Store the bytes of ``chunks`` under ``name`` atomically; return how many were stored.

        ``chunks`` yields non-empty ``bytes``; an exception it raises (even
        ``KeyboardInterrupt``) must propagate unchanged and leave nothing
        visible (no partial blob, no temporary object). ``mark`` (ASCII text
        or ``None``) is kept with the blob so that :meth:`_stat` returns it
        as ``origin``; a backend that cannot keep it ignores it (``gc`` then
        never removes the store's orphans). A new blob starts without a
        commit record. With ``replace`` (blob keys) an existing blob under
        ``name`` is replaced; without it (the store's own small records:
        the identity, a registration) an existing one is left as it is, and
        of two writers racing for an absent name exactly one's bytes land.
        Backend faults raise :class:`StorageError`.
        """

    @abc.abstractmethod
    def _open(self, name: str, chunk_size: int) -> BlobReader:
        """Open ``name`` now: a :class:`~docbinder.ports.blobs.BlobReader` of chunks of at most ``chunk_size`` bytes.

        ``chunk_size`` is at least 1. :class:`BlobMissing` at call time when
        absent. :class:`~docbinder.adapters.streams.ChunkReader` turns any
        iterator and a close callback into a reader.
        """

    def _open_range(self, name: str, offset: int, length: int, chunk_size: int) -> BlobReader:
        """Open bytes ``offset`` to ``offset + length - 1`` of ``name`` now, clipped at its end.

        ``offset`` and ``length`` are at least 0, ``chunk_size`` at least 1.
        :class:`BlobMissing` at call time when absent. A backend that can start
        reading in the middle (a seek, an HTTP ``Range`` GET) overrides this;
        this default reads the blob from its start with :meth:`_open` and drops
        the bytes before ``offset``, so a range costs reading up to its end.
        """
        return WindowReader(self._open(name, chunk_size), offset, length)

    @abc.abstractmethod
    def _stat(self, name: str) -> BlobStat:
        """Size in bytes, modification time (UTC) and the ``mark`` given to :meth:`_write`.

        :class:`BlobMissing` when absent.
        """

    @abc.abstractmethod
    def _delete(self, name: str) -> None:
        """Remove ``name`` and its commit record; absent is not an error."""

    @abc.abstractmethod
    def _list(self, prefix: str) -> Iterator[str]:
        """The names stored under ``prefix``, in no order.

        ``prefix`` is ``""`` (every blob key: names with a segment starting
        with ``.`` may be left out, and anything that is not a key is
        filtered out by the caller) or :data:`DATABASES_PREFIX`. Faults raise
        :class:`StorageError`, also while iterating.
        """

    def _record_commit(self, name: str) -> str | None:
        """Record with the blob ``name`` that a FileItem naming it committed (ADR 0031).

        ``None`` once recorded; otherwise why the record cannot be kept here
        (``mark_committed`` then answers ``False`` and logs the first reason
        per store object). The record must change neither the bytes, the
        size, the modification time nor the mark, and a later
        :meth:`_write` or :meth:`_delete` of ``name`` drops it.
        :class:`BlobMissing` for an absent blob. This default keeps none.
        """
        self._stat(name)  # BlobMissing for an absent blob, as everywhere
        return NO_RECORDS

    def _has_commit_record(self, name: str) -> bool:
        """Whether :meth:`_record_commit` recorded the blob now under ``name``.

        :class:`BlobMissing` for an absent blob; :class:`StorageError` when
        the store cannot tell (``gc`` then stops rather than guess). This
        default: never.
        """
        self._stat(name)
        return False

    # -- the port ----------------------------------------------------------------

    def put(self, key: str, data: Chunks | BinaryIO) -> int:
        """Store ``data`` under ``key`` atomically with its provenance mark; the bytes written.

        See :meth:`~docbinder.ports.blobs.BlobStore.put`. :class:`InvalidInput`
        for a bad key before anything of ``data`` is read.
        """
        check_blob_key(key)
        return self._write(key, iter_chunks(data), self._mark(key))

    def open(self, key: str, chunk_size: int = 1 << 20) -> BlobReader:
        """Open the blob now; see :meth:`~docbinder.ports.blobs.BlobStore.open`.

        :class:`InvalidInput` for a bad key or ``chunk_size < 1``,
        :class:`BlobMissing` for an absent one, both at call time.
        """
        check_blob_key(key)
        if chunk_size < 1:
            raise InvalidInput(f"chunk_size must be at least 1 byte, got {chunk_size}")
        return self._open(key, chunk_size)

    def open_range(
        self, key: str, offset: int, length: int, chunk_size: int = 1 << 20
    ) -> BlobReader:
        """Open ``length`` bytes of the blob from byte ``offset``; see :meth:`~docbinder.ports.blobs.BlobStore.open_range`.

        :class:`InvalidInput` for a bad key, a negative ``offset`` or
        ``length`` or ``chunk_size < 1``, :class:`BlobMissing` for an absent
        key, both at call time.
        """
        check_blob_key(key)
        check_range(offset, length, chunk_size)
        return self._open_range(key, offset, length, chunk_size)

    def stat(self, key: str) -> BlobStat:
        """Size, modification time and mark of the blob; :class:`BlobMissing` if absent."""
        check_blob_key(key)
        return self._stat(key)

    def exists(self, key: str) -> bool:
        """Whether a blob is stored under ``key`` (one :meth:`_stat`)."""
        check_blob_key(key)
        try:
            self._stat(key)
        except BlobMissing:
            return False
        return True

    def delete(self, key: str) -> None:
        """Remove the blob; an absent key is not an error."""
        check_blob_key(key)
        self._delete(key)

    def keys(self) -> Iterator[str]:
        """Every stored key, in no order; the store's own records are never listed."""
        return (name for name in self._list("") if is_blob_key(name))

    def identity(self, *, create: bool = False) -> str | None:
        """The UUID in the record :data:`IDENTITY_NAME`; made on first use when ``create``.

        Creation writes with ``replace=False`` and reads the record again, so
        two first writers (threads, processes, store objects) both return the
        one that landed. Without ``create`` a store without the record gives
        ``None`` and nothing is written. Once found, the identity is kept by
        this object. :class:`StorageError` when the record cannot be read,
        holds bytes that are not ASCII text, or is still missing after
        ``create`` wrote it.
        """
        if self._identity is not None:
            return self._identity
        found = self._read_identity()
        if found is None and create:
            made = f"{uuid.uuid4()}\n".encode("ascii")
            self._write(IDENTITY_NAME, iter((made,)), None, replace=False)
            found = self._read_identity()
            if found is None:  # never go on without one: rows would name no store
                raise StorageError(
                    f"{self.url}: the store identity {IDENTITY_NAME} was written but cannot "
                    "be read back"
                )
        self._identity = found
        return found

    def _read_identity(self) -> str | None:
        return self._read_record(IDENTITY_NAME, IDENTITY_BYTES, "the store identity")

    def _read_record(self, name: str, limit: int, what: str) -> str | None:
        """The ASCII text (stripped) of the small record ``name``, read up to ``limit`` bytes.

        ``None`` when it is absent or blank; :class:`StorageError` naming ``what``
        for bytes docbinder never writes there (not ASCII).
        """
        try:
            with self._open(name, limit) as reader:
                raw = b""
                for chunk in reader:
                    raw += chunk
                    if len(raw) >= limit:
                        break
        except BlobMissing:
            return None
        try:
            text = raw[:limit].decode("ascii").strip()
        except UnicodeDecodeError as exc:
            raise StorageError(
                f"{self.url}: {what} {name} holds bytes docbinder never writes ({exc})"
            ) from exc
        return text or None

    def register_database(self, database_id: str) -> None:
        """Record that the metadata database ``database_id`` writes here; idempotent.

        From then on this object's marks name ``database_id``, or ``-`` once
        it registered two different ids. The record is written only when it
        is not there yet. :class:`InvalidInput` unless the id is one key
        segment (no ``/``).
        """
        check_blob_key(database_id)
        if "/" in database_id:
            raise InvalidInput(f"invalid database id {database_id!r}")
        with self._registering:
            self._writers = self._writers | {database_id}
            self._writer = database_id if self._writers == {database_id} else None
        name = DATABASES_PREFIX + database_id
        try:
            self._stat(name)
        except BlobMissing:
            self._write(name, iter(()), None, replace=False)

    def databases(self) -> set[str]:
        """The ids of every database registered in the store (by any store object)."""
        start = len(DATABASES_PREFIX)
        found: set[str] = set()
        for name in self._list(DATABASES_PREFIX):
            database_id = name[start:]
            one_segment = "/" not in database_id
            if name.startswith(DATABASES_PREFIX) and one_segment and is_blob_key(database_id):
                found.add(database_id)
        return found

    def database_claim(self, database_id: str) -> str | None:
        """The token in the record ``.docbinder-claims/<database_id>``; ``None`` when absent.

        See :meth:`~docbinder.ports.blobs.BlobStore.database_claim`.
        :class:`InvalidInput` for an id that is not one key segment,
        :class:`StorageError` for a record docbinder never writes (not ASCII).
        """
        name = CLAIMS_PREFIX + _one_segment(database_id)
        return self._read_record(name, CLAIM_BYTES, "the claim record")

    def set_database_claim(self, database_id: str, token: str) -> None:
        """Replace the record ``.docbinder-claims/<database_id>`` with ``token`` and a newline.

        See :meth:`~docbinder.ports.blobs.BlobStore.set_database_claim`.
        """
        name = CLAIMS_PREFIX + _one_segment(database_id)
        if not token or not token.isascii() or not token.isprintable() or " " in token:
            raise InvalidInput(f"invalid claim token {token!r}")
        self._write(name, iter((f"{token}\n".encode("ascii"),)), None, replace=True)

    def mark_committed(self, key: str) -> bool:
        """Record with the blob that a FileItem naming it committed; whether it was kept.

        See :meth:`~docbinder.ports.blobs.BlobStore.mark_committed`. ``False``
        where the store cannot keep the record (the first reason per object
        is logged as a warning, later ones at debug level).
        :class:`BlobMissing` for an absent blob, :class:`StorageError` for
        backend faults.
        """
        check_blob_key(key)
        reason = self._record_commit(key)
        if reason is None:
            return True
        self._not_recorded(key, reason)
        return False

    def is_committed(self, key: str) -> bool:
        """Whether the blob now under ``key`` carries its commit record.

        :class:`BlobMissing` for an absent blob, :class:`StorageError` when
        the store cannot tell.
        """
        check_blob_key(key)
        return self._has_commit_record(key)

    def check_writable(self) -> None:
        """Write, read back and delete a small probe blob; :class:`StorageError` if any step fails.

        The probe key is :data:`PROBE_PREFIX` and 32 hex digits; one left by
        a crash is an ordinary orphan blob that ``gc`` removes.
        """
        key = f"{PROBE_PREFIX}{secrets.token_hex(16)}"
        payload = f"docbinder write probe {key}\n".encode()
        self.put(key, [payload])
        try:
            with self.open(key) as chunks:
                echoed = b"".join(chunks)
            if echoed != payload:
                raise StorageError(f"{self.url}: the probe blob read back different bytes")
        finally:
            self.delete(key)

    # -- shared helpers ------------------------------------------------------------

    def _mark(self, key: str) -> str | None:
        """The provenance mark ``put`` gives the blob ``key``; ``None`` before the store has an identity."""
        identity = self._identity
        if identity is None:
            return None
        if self.compact_marks:
            return compact_blob_origin(identity, self._writer, key)
        return blob_origin(identity, self._writer, key)

    def _not_recorded(self, key: str, reason: str) -> None:
        if self._unrecorded_told:
            log.debug("%s keeps no commit record of blob %s: %s", self.url, key, reason)
            return
        self._unrecorded_told = True
        log.warning(
            "%s cannot record committed blobs (%s; first seen on blob %s): gc treats their "
            "orphans as unconfirmed, so a database restored from a backup in place can lose "
            "files stored after the backup to gc --apply (docs/security.md)",
            self.url,
            reason,
            key,
        )


def _one_segment(database_id: str) -> str:
    """``database_id`` if it is one key segment; :class:`InvalidInput` otherwise."""
    check_blob_key(database_id)
    if "/" in database_id:
        raise InvalidInput(f"invalid database id {database_id!r}")
    return database_id
