"""The contract every :class:`~docbinder.ports.blobs.BlobStore` adapter passes (SPEC C13).

Subclass :class:`BlobStoreContract` once per adapter (name the subclass
``Test...``) and provide a ``store`` fixture that returns a fresh, empty store::

    class TestMyBlobStore(BlobStoreContract):
        durable = True

        @pytest.fixture
        def store(self, tmp_path):
            return MyBlobStore(tmp_path / "blobs")

        @pytest.fixture
        def reopen(self, tmp_path):
            return lambda: MyBlobStore(tmp_path / "blobs")

What an adapter may lack is a capability flag (a class attribute the subclass
sets), never an ``isinstance`` branch here. ``open_streams`` (optional) counts
the streams the store holds open (file descriptors, HTTP responses), so the
suite can see that every reader :meth:`~docbinder.ports.blobs.BlobStore.open`
returned is closed. Needs ``pytest`` and ``hypothesis``
(``pip install -e '.[testing]'`` in a clone).
"""

from __future__ import annotations

import abc
import hashlib
import io
import random
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docbinder.domain.errors import BlobMissing, DocbinderError, InvalidInput, StorageError
from docbinder.ports.blobs import BlobStat, BlobStore, LocatingBlobStore

MiB = 1 << 20

HOSTILE_KEYS: list[object] = [
    "../../etc/passwd",
    "a/../../b",
    "/abs.txt",
    "..\\x.txt",
    "a\\b",
    "a\x00b",
    "a//b",
    "a/",
    "",
    ".",
    "..",
    "a/./b",
    "a/..",
    ".hidden",
    "a/.hidden",
    "C:\\x.txt",
    "C:x",
    "~/x",
    "a b",
    "a\nb",
    "a\tb",
    "ä",
    "a/ü/b",
    "%2e%2e/x",
    "x" * 256,
    "a/" * 127 + "ab",
    None,
    b"bytes-key",
    42,
]
"""Keys that every adapter must refuse with :class:`InvalidInput`."""

VALID_KEYS = ["a", "ab/0f1e2d3c-uuid", "A-Z_0.9/x.y.z", "x" * 255, "a/b/c/d/e"]
"""Keys that every adapter must accept (the longest allowed is 255 characters)."""


class Boom(Exception):
    """Raised by test inputs half way through a stream."""


def pattern(size: int, seed: int = 0) -> bytes:
    """``size`` pseudo-random bytes, the same for the same seed."""
    return random.Random(seed).randbytes(size)


class Generated:
    """A stream of ``total`` pseudo-random bytes in uneven chunks, hashed as it is consumed.

    Never materialised: chunks are made on demand. After the stream is
    exhausted, :attr:`sha256` and :attr:`produced` describe what was yielded.
    """

    def __init__(self, total: int, chunk: int = MiB + 17, seed: int = 1) -> None:
        self.total = total
        self.chunk = chunk
        self._rng = random.Random(seed)
        self._hash = hashlib.sha256()
        self.produced = 0

    def __iter__(self) -> Iterator[bytes]:
        while self.produced < self.total:
            size = min(self.chunk, self.total - self.produced)
            data = self._rng.randbytes(size)
            self._hash.update(data)
            self.produced += size
            yield data

    @property
    def sha256(self) -> str:
        return self._hash.hexdigest()


def failing(prefix: bytes, error: BaseException, pieces: int = 3) -> Iterator[bytes]:
    """Yield ``prefix`` in ``pieces`` chunks, then raise ``error``."""
    step = max(1, len(prefix) // pieces)
    for start in range(0, len(prefix), step):
        yield prefix[start : start + step]
    raise error


def read_all(store: BlobStore, key: str, chunk_size: int = MiB) -> bytes:
    with store.open(key, chunk_size) as chunks:
        return b"".join(chunks)


def sha256_of(store: BlobStore, key: str) -> str:
    digest = hashlib.sha256()
    with store.open(key) as chunks:
        for chunk in chunks:
            digest.update(chunk)
    return digest.hexdigest()


class BlobStoreContract(abc.ABC):
    """Behaviour shared by every blob store; subclasses provide the ``store`` fixture.

    Capability flags (class attributes; override in the subclass):

    * :attr:`supports_blob_and_prefix_key` -- ``a`` and ``a/b`` can both be blobs;
    * :attr:`durable` -- a second store object over the same place sees the blobs,
      the identity and the registered databases (the subclass then provides the
      ``reopen`` fixture);
    * :attr:`supports_concurrency` -- ``put`` from several threads at once is safe;
    * :attr:`large_blob_size` -- bytes of the large streaming round trip;
    * :attr:`locates_itself` -- the store implements
      :class:`~docbinder.ports.blobs.LocatingBlobStore` (ADR 0030); a durable
      one may provide the ``copy_of`` fixture (a store over a copy of the
      store's bytes, as ``cp -a`` or ``aws s3 sync`` would make it) so the
      suite can check that a copy is located elsewhere;
    * :attr:`keeps_commit_records` -- ``mark_committed`` records with the blob that
      its FileItem committed and ``is_committed`` reads it back (ADR 0031).
    """

    supports_blob_and_prefix_key: ClassVar[bool] = True
    """Whether ``a`` and ``a/b`` can both be blobs (``False`` on a file tree, which then
    refuses the second with :class:`StorageError`)."""

    durable: ClassVar[bool] = False
    """Whether what was stored outlives the store object (disk, S3); needs ``reopen``."""

    supports_concurrency: ClassVar[bool] = True
    """Whether threads may call ``put`` at once (docbinder's async API and worker threads do)."""

    large_blob_size: ClassVar[int] = 20 * MiB
    """Size in bytes of the large blob streamed through ``put`` and ``open``."""

    locates_itself: ClassVar[bool] = False
    """Whether the store tells where its bytes are (``location``); without it ``gc`` cannot
    tell a copy of the store from the store and relies on its other guards."""

    keeps_commit_records: ClassVar[bool] = True
    """Whether ``mark_committed`` keeps its record (``False``: it answers ``False`` and
    ``is_committed`` stays ``False``; ``gc`` then treats every orphan as unconfirmed)."""

    @pytest.fixture
    @abc.abstractmethod
    def store(self) -> BlobStore:
        """A fresh, empty store."""

    @pytest.fixture
    def reopen(self) -> Callable[[], BlobStore]:
        """Makes new store objects over the place of ``store`` (only for :attr:`durable` stores)."""
        pytest.fail("a durable store's test class provides the reopen fixture")

    @pytest.fixture
    def copy_of(self) -> Callable[[BlobStore], BlobStore] | None:
        """Copies every byte of a store elsewhere, hidden files included; returns a store over
        the copy (``None``: the adapter cannot copy itself in a test)."""
        return None

    @pytest.fixture
    def open_streams(self, store: BlobStore) -> Callable[[], int] | None:
        """How many streams of ``store`` are open now; ``None`` if the adapter cannot tell."""
        return None

    @pytest.fixture
    def backend_bytes_read(self, store: BlobStore) -> Callable[[], int] | None:
        """How many bytes of blob content ``store`` has read from its backend so far
        (a file's ``read`` calls, S3 response bodies); ``None`` if the adapter cannot tell."""
        return None

    # -- put: inputs and sizes --------------------------------------------

    def test_put_from_generator_returns_size_and_reads_back(self, store: BlobStore) -> None:
        data = pattern(10_000)

        def chunks() -> Iterator[bytes]:
            yield data[:3]
            yield data[3:5000]
            yield data[5000:]

        assert store.put("gen", chunks()) == 10_000
        assert read_all(store, "gen") == data

    def test_put_from_binary_file_object(self, store: BlobStore) -> None:
        data = pattern(3 * MiB + 5, seed=2)
        assert store.put("bio", io.BytesIO(data)) == len(data)
        assert read_all(store, "bio") == data

    def test_put_from_real_file(self, store: BlobStore, tmp_path: Path) -> None:
        source = tmp_path / "source.bin"
        data = pattern(70_000, seed=3)
        source.write_bytes(data)
        with source.open("rb") as handle:
            assert store.put("file", handle) == len(data)
        assert read_all(store, "file") == data

    def test_put_from_mixed_chunks_including_empty_ones(self, store: BlobStore) -> None:
        chunks: list[bytes] = [b"", b"ab", b"", bytearray(b"cd"), memoryview(b"ef"), b""]  # type: ignore[list-item]
        assert store.put("mixed", chunks) == 6
        assert read_all(store, "mixed") == b"abcdef"

    def test_put_accepts_one_bytes_object(self, store: BlobStore) -> None:
        assert store.put("whole", b"hello") == 5  # type: ignore[arg-type]
        assert read_all(store, "whole") == b"hello"

    def test_many_tiny_chunks(self, store: BlobStore) -> None:
        data = pattern(5000, seed=4)
        assert store.put("tiny", (data[i : i + 1] for i in range(len(data)))) == len(data)
        assert read_all(store, "tiny") == data

    @pytest.mark.parametrize(
        "empty",
        [[], [b""], [b"", b""], io.BytesIO(b""), b""],
        ids=["no-chunks", "one-empty-chunk", "empty-chunks", "empty-file", "empty-bytes"],
    )
    def test_zero_byte_blob(self, store: BlobStore, empty: object) -> None:
        assert store.put("zero", empty) == 0  # type: ignore[arg-type]
        assert store.exists("zero")
        assert store.stat("zero").size == 0
        assert list(store.open("zero")) == []
        assert list(store.keys()) == ["zero"]

    def test_large_round_trip_sha256(self, store: BlobStore) -> None:
        size = self.large_blob_size
        source = Generated(size)
        assert store.put("large/blob", source) == size
        assert source.produced == size
        assert store.stat("large/blob").size == size
        assert sha256_of(store, "large/blob") == source.sha256

    # -- open ----------------------------------------------------------------

    @pytest.mark.parametrize("chunk_size", [1, 7, 1000, 4096, MiB])
    def test_open_yields_chunks_of_at_most_chunk_size(
        self, store: BlobStore, chunk_size: int
    ) -> None:
        data = pattern(3001, seed=5)
        store.put("chunked", [data])
        chunks = list(store.open("chunked", chunk_size))
        assert b"".join(chunks) == data
        assert all(0 < len(chunk) <= chunk_size for chunk in chunks)
        assert all(isinstance(chunk, bytes) for chunk in chunks)

    def test_open_twice_gives_independent_iterators(self, store: BlobStore) -> None:
        data = pattern(2000, seed=6)
        store.put("twice", [data])
        first = store.open("twice", 500)
        second = store.open("twice", 500)
        assert next(iter(first)) == data[:500]
        assert b"".join(second) == data
        assert b"".join(first) == data[500:]

    # -- open: the reader is a context manager that always closes its stream ----

    def test_reader_closes_when_the_with_block_ends_early(
        self, store: BlobStore, open_streams: Callable[[], int] | None
    ) -> None:
        store.put("early", [pattern(5000, seed=12)])
        before = open_streams() if open_streams else 0
        with store.open("early", 100) as chunks:
            first = next(chunks)
            if open_streams is not None:
                assert open_streams() == before + 1
        assert first == pattern(5000, seed=12)[:100]
        assert list(chunks) == []  # closed: nothing more is read
        if open_streams is not None:
            assert open_streams() == before

    def test_reader_closes_when_the_consumer_raises(
        self, store: BlobStore, open_streams: Callable[[], int] | None
    ) -> None:
        store.put("raises", [pattern(5000, seed=13)])
        before = open_streams() if open_streams else 0
        with pytest.raises(Boom), store.open("raises", 10) as chunks:
            for _chunk in chunks:
                raise Boom("the consumer failed")
        assert list(chunks) == []
        if open_streams is not None:
            assert open_streams() == before

    def test_reader_closes_when_exhausted_and_close_is_idempotent(
        self, store: BlobStore, open_streams: Callable[[], int] | None
    ) -> None:
        store.put("whole", [b"abc"])
        before = open_streams() if open_streams else 0
        reader = store.open("whole", 2)
        assert b"".join(reader) == b"abc"
        if open_streams is not None:
            assert open_streams() == before
        reader.close()
        reader.close()
        with reader as again:
            assert again is reader
            assert list(again) == []

    def test_reader_of_an_empty_blob_closes(
        self, store: BlobStore, open_streams: Callable[[], int] | None
    ) -> None:
        store.put("empty", [])
        before = open_streams() if open_streams else 0
        with store.open("empty") as chunks:
            assert list(chunks) == []
        if open_streams is not None:
            assert open_streams() == before

    def test_many_readers_left_early_leak_nothing(
        self, store: BlobStore, open_streams: Callable[[], int] | None
    ) -> None:
        store.put("many", [pattern(4096, seed=14)])
        before = open_streams() if open_streams else 0
        for _ in range(20):
            with store.open("many", 1) as chunks:
                assert len(next(chunks)) == 1
        if open_streams is not None:
            assert open_streams() == before

    @pytest.mark.parametrize("chunk_size", [0, -1])
    def test_open_refuses_a_chunk_size_below_one(
        self, store: BlobStore, chunk_size: int, open_streams: Callable[[], int] | None
    ) -> None:
        store.put("c", [b"x"])
        before = open_streams() if open_streams else 0
        with pytest.raises(InvalidInput):
            store.open("c", chunk_size)
        if open_streams is not None:
            assert open_streams() == before
        assert read_all(store, "c") == b"x"

    def test_open_absent_key_raises_at_call_time(self, store: BlobStore) -> None:
        with pytest.raises(BlobMissing) as caught:
            store.open("absent/key")  # no iteration: the error comes from the call
        assert isinstance(caught.value, FileNotFoundError)
        assert isinstance(caught.value, DocbinderError)

    @pytest.mark.parametrize(
        ("offset", "length", "chunk_size"),
        [
            (0, 10, MiB),
            (3, 4, MiB),
            (0, 100_000, 4096),
            (4095, 2, 4096),
            (99_990, 50, 7),
            (50_000, 0, MiB),
            (100_000, 10, MiB),
            (250_000, 1, MiB),
            (1, 10**12, 333),
        ],
    )
    def test_open_range_gives_exactly_the_bytes_asked_for(
        self, store: BlobStore, offset: int, length: int, chunk_size: int
    ) -> None:
        data = random.Random(offset + length).randbytes(100_000)
        store.put("ab/range", [data])
        with store.open_range("ab/range", offset, length, chunk_size) as reader:
            chunks = list(reader)
        assert b"".join(chunks) == data[offset : offset + length]
        assert all(0 < len(c) <= chunk_size for c in chunks)

    def test_open_range_of_an_empty_blob_gives_nothing(self, store: BlobStore) -> None:
        store.put("ab/empty", [])
        with store.open_range("ab/empty", 0, 10) as reader:
            assert list(reader) == []

    def test_open_range_refuses_what_is_not_a_range(self, store: BlobStore) -> None:
        store.put("ab/range", [b"0123456789"])
        for offset, length, chunk_size in ((-1, 1, 1), (0, -1, 1), (0, 1, 0), (True, 1, 1)):
            with pytest.raises(InvalidInput):
                store.open_range("ab/range", offset, length, chunk_size)
        with pytest.raises(InvalidInput):
            store.open_range("../x", 0, 1)
        with pytest.raises(BlobMissing):
            store.open_range("ab/absent", 0, 1)
        with pytest.raises(BlobMissing):
            store.open_range("ab/absent", 0, 0)

    def test_open_range_reader_closes_when_left_early(
        self, store: BlobStore, open_streams: Callable[[], int] | None
    ) -> None:
        store.put("ab/range", [b"x" * (3 * MiB)])
        before = open_streams() if open_streams else 0
        with store.open_range("ab/range", MiB, MiB, 4096) as reader:
            assert next(reader) == b"x" * 4096
        assert list(reader) == []
        if open_streams is not None:
            assert open_streams() == before

    def test_a_range_of_a_large_blob_reads_only_that_range(
        self, store: BlobStore, backend_bytes_read: Callable[[], int] | None
    ) -> None:
        if backend_bytes_read is None:
            pytest.skip("the adapter cannot count the bytes it reads")
        data = random.Random(3).randbytes(8 * MiB)
        store.put("ab/large", [data])
        before = backend_bytes_read()
        with store.open_range("ab/large", 6 * MiB + 5, 1000) as reader:
            assert b"".join(reader) == data[6 * MiB + 5 : 6 * MiB + 1005]
        read = backend_bytes_read() - before
        assert 1000 <= read <= 1000 + 64 * 1024, f"{read} bytes read for a 1000-byte range"

    def test_stat_absent_key_raises(self, store: BlobStore) -> None:
        with pytest.raises(BlobMissing):
            store.stat("absent")

    def test_open_after_delete_raises(self, store: BlobStore) -> None:
        store.put("gone", [b"x"])
        store.delete("gone")
        with pytest.raises(BlobMissing):
            store.open("gone")

    # -- exists, delete, keys ------------------------------------------------

    def test_exists(self, store: BlobStore) -> None:
        assert not store.exists("e")
        store.put("e", [b"1"])
        assert store.exists("e")
        assert not store.exists("e/child")
        assert not store.exists("other")

    def test_delete_absent_is_fine(self, store: BlobStore) -> None:
        store.delete("never-stored")
        store.delete("never/stored/either")
        assert list(store.keys()) == []

    def test_delete_removes_only_that_blob(self, store: BlobStore) -> None:
        store.put("d/one", [b"1"])
        store.put("d/two", [b"2"])
        store.delete("d/one")
        store.delete("d/one")
        assert not store.exists("d/one")
        assert read_all(store, "d/two") == b"2"
        assert sorted(store.keys()) == ["d/two"]

    def test_keys_lists_exactly_what_is_stored(self, store: BlobStore) -> None:
        assert list(store.keys()) == []
        stored = {"x", "ab/0001", "ab/0002", "cd/ef/gh", "z.bin"}
        for key in stored:
            store.put(key, [key.encode()])
        assert sorted(store.keys()) == sorted(stored)
        store.delete("ab/0001")
        assert sorted(store.keys()) == sorted(stored - {"ab/0001"})

    def test_keys_are_listed_once_after_replacing(self, store: BlobStore) -> None:
        store.put("r", [b"old"])
        store.put("r", [b"new"])
        assert list(store.keys()) == ["r"]

    @pytest.mark.parametrize("key", VALID_KEYS)
    def test_valid_keys_round_trip(self, store: BlobStore, key: str) -> None:
        assert store.put(key, [b"v"]) == 1
        assert store.exists(key)
        assert read_all(store, key) == b"v"
        assert list(store.keys()) == [key]
        store.delete(key)
        assert not store.exists(key)

    def test_blob_and_prefix_key(self, store: BlobStore) -> None:
        store.put("p", [b"parent"])
        if self.supports_blob_and_prefix_key:
            store.put("p/child", [b"child"])
            assert read_all(store, "p") == b"parent"
            assert read_all(store, "p/child") == b"child"
            assert sorted(store.keys()) == ["p", "p/child"]
        else:
            with pytest.raises(StorageError):
                store.put("p/child", [b"child"])
            assert read_all(store, "p") == b"parent"
            assert list(store.keys()) == ["p"]

    # -- replace -------------------------------------------------------------

    def test_put_replaces_existing_blob(self, store: BlobStore) -> None:
        store.put("rep", [pattern(5000, seed=7)])
        assert store.put("rep", [b"short"]) == 5
        assert read_all(store, "rep") == b"short"
        assert store.stat("rep").size == 5

    # -- bad keys ------------------------------------------------------------

    @pytest.mark.parametrize("key", HOSTILE_KEYS, ids=repr)
    def test_hostile_keys_are_rejected(self, store: BlobStore, key: object) -> None:
        with pytest.raises(InvalidInput):
            store.put(key, [b"evil"])  # type: ignore[arg-type]
        with pytest.raises(InvalidInput):
            store.open(key)  # type: ignore[arg-type]
        with pytest.raises(InvalidInput):
            store.stat(key)  # type: ignore[arg-type]
        with pytest.raises(InvalidInput):
            store.exists(key)  # type: ignore[arg-type]
        with pytest.raises(InvalidInput):
            store.delete(key)  # type: ignore[arg-type]
        assert list(store.keys()) == []

    def test_key_with_trailing_newline_is_rejected(self, store: BlobStore) -> None:
        with pytest.raises(InvalidInput):
            store.put("a\n", [b"evil"])
        with pytest.raises(InvalidInput):
            store.exists("a/b\n")
        assert list(store.keys()) == []

    def test_rejected_input_is_not_consumed(self, store: BlobStore) -> None:
        consumed: list[bytes] = []

        def chunks() -> Iterator[bytes]:
            consumed.append(b"x")
            yield b"x"

        with pytest.raises(InvalidInput):
            store.put("../x", chunks())
        assert consumed == []

    # -- failing input -------------------------------------------------------

    @pytest.mark.parametrize("before", [0, 10, 6 * MiB], ids=["at-once", "small", "multipart"])
    def test_failing_input_leaves_nothing(self, store: BlobStore, before: int) -> None:
        store.put("keep", [b"kept"])
        error = Boom("input failed")
        with pytest.raises(Boom) as caught:
            store.put("half", failing(pattern(before, seed=8), error))
        assert caught.value is error
        assert not store.exists("half")
        with pytest.raises(BlobMissing):
            store.open("half")
        assert list(store.keys()) == ["keep"]

    def test_failing_replacement_keeps_the_old_blob(self, store: BlobStore) -> None:
        store.put("old", [b"original"])
        with pytest.raises(Boom):
            store.put("old", failing(pattern(1000, seed=9), Boom()))
        assert read_all(store, "old") == b"original"
        assert list(store.keys()) == ["old"]

    def test_keyboard_interrupt_from_input_propagates_and_leaves_nothing(
        self, store: BlobStore
    ) -> None:
        interrupt = KeyboardInterrupt()
        with pytest.raises(KeyboardInterrupt) as caught:
            store.put("ki", failing(pattern(6 * MiB, seed=10), interrupt))
        assert caught.value is interrupt
        assert not store.exists("ki")
        assert list(store.keys()) == []

    def test_oserror_from_input_propagates_unchanged(self, store: BlobStore) -> None:
        error = OSError(5, "input device failed")
        with pytest.raises(OSError) as caught:
            store.put("io", failing(b"abc", error))
        assert caught.value is error
        assert not isinstance(caught.value, DocbinderError)
        assert not store.exists("io")

    # -- stat ----------------------------------------------------------------

    def test_stat_size_and_utc_modified_at(self, store: BlobStore) -> None:
        before = datetime.now(UTC)
        store.put("st", [pattern(1234, seed=11)])
        after = datetime.now(UTC)
        stat = store.stat("st")
        assert isinstance(stat, BlobStat)
        assert stat.size == 1234
        assert stat.modified_at.tzinfo is not None
        assert stat.modified_at.utcoffset() == timedelta(0)
        slack = timedelta(seconds=2)  # S3 reports whole seconds
        assert before - slack <= stat.modified_at <= after + slack

    # -- url -----------------------------------------------------------------

    def test_url_names_a_scheme(self, store: BlobStore) -> None:
        scheme, separator, _ = store.url.partition("://")
        assert separator == "://"
        assert re.fullmatch(r"[a-z][a-z0-9+.-]*", scheme), store.url

    # -- identity and registered databases -------------------------------------

    def test_identity_is_made_only_when_asked(self, store: BlobStore) -> None:
        assert store.identity() is None
        assert store.identity(create=False) is None
        made = store.identity(create=True)
        assert isinstance(made, str) and made
        assert store.identity(create=True) == made
        assert store.identity() == made
        assert list(store.keys()) == []  # the identity is never a blob

    def test_registered_databases_are_listed_and_are_never_blobs(self, store: BlobStore) -> None:
        assert store.databases() == set()
        store.register_database("db-1")
        store.register_database("db-1")
        store.register_database("db-2")
        assert store.databases() == {"db-1", "db-2"}
        assert list(store.keys()) == []
        for bad in ("a/b", "../x", "", "a b", ".hidden"):
            with pytest.raises(InvalidInput):
                store.register_database(bad)
        assert store.databases() == {"db-1", "db-2"}

    def test_database_claims_are_replaced_and_are_never_blobs(self, store: BlobStore) -> None:
        assert store.database_claim("db-1") is None
        store.set_database_claim("db-1", "a1" * 16)
        store.set_database_claim("db-2", "b2" * 16)
        assert store.database_claim("db-1") == "a1" * 16
        store.set_database_claim("db-1", "c3" * 16)  # the newest claim replaces the one before
        assert store.database_claim("db-1") == "c3" * 16
        assert store.database_claim("db-2") == "b2" * 16
        assert list(store.keys()) == []
        assert store.databases() == set()  # a claim is not a registration
        for bad in ("a/b", "../x", "", "a b", ".hidden"):
            with pytest.raises(InvalidInput):
                store.set_database_claim(bad, "d4" * 16)
        for token in ("", "two words", "line\nbreak", "\u00e9"):
            with pytest.raises(InvalidInput):
                store.set_database_claim("db-1", token)
        assert store.database_claim("db-1") == "c3" * 16

    # -- location (flag: locates_itself) ----------------------------------------

    def test_the_location_is_stable_and_never_a_blob(self, store: BlobStore) -> None:
        if not self.locates_itself:
            pytest.skip("the store does not tell its location (locates_itself = False)")
        assert isinstance(store, LocatingBlobStore)
        made = store.location(create=True)
        assert isinstance(made, str) and made
        assert store.location() == store.location(create=True) == made
        store.put("ab/abc", [b"x"])
        store.delete("ab/abc")
        assert store.location() == made  # writing and removing blobs does not move it
        assert list(store.keys()) == []

    def test_a_new_store_object_over_the_same_place_has_the_same_location(
        self, store: BlobStore, request: pytest.FixtureRequest
    ) -> None:
        if not (self.locates_itself and self.durable):
            pytest.skip("needs locates_itself = True and durable = True")
        reopen: Callable[[], BlobStore] = request.getfixturevalue("reopen")
        assert isinstance(store, LocatingBlobStore)
        made = store.location(create=True)
        again = reopen()
        assert isinstance(again, LocatingBlobStore)
        assert again.location() == made

    def test_a_copy_of_the_store_has_its_identity_but_another_location(
        self, store: BlobStore, copy_of: Callable[[BlobStore], BlobStore] | None
    ) -> None:
        if not self.locates_itself or copy_of is None:
            pytest.skip("needs locates_itself = True and the copy_of fixture")
        assert isinstance(store, LocatingBlobStore)
        store.put("ab/abc", [b"x"])
        identity = store.identity(create=True)
        made = store.location(create=True)
        copy = copy_of(store)
        assert isinstance(copy, LocatingBlobStore)
        assert copy.identity() == identity
        assert copy.location() != made
        assert store.location() == made

    # -- commit records (flag: keeps_commit_records; ADR 0031) ----------------

    def test_a_commit_record_goes_with_its_blob(self, store: BlobStore) -> None:
        store.identity(create=True)
        store.register_database("db-1")
        store.put("cm/a", [b"one"])
        store.put("cm/b", [b"two"])
        assert store.is_committed("cm/a") is False
        before = store.stat("cm/a")
        kept = store.mark_committed("cm/a")
        if not self.keeps_commit_records:
            assert kept is False and store.is_committed("cm/a") is False
            return
        assert kept is True
        assert store.is_committed("cm/a") is True and store.is_committed("cm/b") is False
        # The record changes neither the bytes nor what gc ages and proves a blob by.
        assert store.stat("cm/a") == before
        assert read_all(store, "cm/a") == b"one"
        assert store.mark_committed("cm/a") is True and store.is_committed("cm/a")
        store.put("cm/a", [b"replaced"])
        assert store.is_committed("cm/a") is False  # a new blob under the key: not committed
        store.mark_committed("cm/a")
        store.delete("cm/a")
        store.put("cm/a", [b"again"])
        assert store.is_committed("cm/a") is False
        assert sorted(store.keys()) == ["cm/a", "cm/b"]  # records are never blobs

    def test_commit_records_of_an_absent_blob_raise_blob_missing(self, store: BlobStore) -> None:
        with pytest.raises(BlobMissing):
            store.mark_committed("cm/absent")
        with pytest.raises(BlobMissing):
            store.is_committed("cm/absent")
        assert list(store.keys()) == []

    def test_a_commit_record_outlives_the_store_object(
        self, store: BlobStore, request: pytest.FixtureRequest
    ) -> None:
        if not (self.durable and self.keeps_commit_records):
            pytest.skip("needs durable = True and keeps_commit_records = True")
        reopen: Callable[[], BlobStore] = request.getfixturevalue("reopen")
        store.put("cm/kept", [b"kept"])
        store.put("cm/other", [b"other"])
        assert store.mark_committed("cm/kept") is True
        again = reopen()
        assert again.is_committed("cm/kept") is True
        assert again.is_committed("cm/other") is False

    # -- durability (flag: durable) -------------------------------------------

    def test_a_new_store_object_sees_blobs_identity_and_databases(
        self, store: BlobStore, request: pytest.FixtureRequest
    ) -> None:
        if not self.durable:
            pytest.skip("not a durable store (durable = False)")
        reopen: Callable[[], BlobStore] = request.getfixturevalue("reopen")
        store.put("kept/blob", [b"kept"])
        made = store.identity(create=True)
        store.register_database("db-1")
        again = reopen()
        assert again is not store
        assert read_all(again, "kept/blob") == b"kept"
        assert again.identity() == made
        assert again.databases() == {"db-1"}
        assert list(again.keys()) == ["kept/blob"]
        again.delete("kept/blob")
        assert not store.exists("kept/blob")

    def test_store_objects_creating_the_identity_at_once_agree_on_one(
        self, store: BlobStore, request: pytest.FixtureRequest
    ) -> None:
        if not (self.durable and self.supports_concurrency):
            pytest.skip("needs durable = True and supports_concurrency = True")
        reopen: Callable[[], BlobStore] = request.getfixturevalue("reopen")
        stores = [reopen() for _ in range(8)]
        with ThreadPoolExecutor(max_workers=8) as pool:
            made = list(pool.map(lambda s: s.identity(create=True), stores))
        assert len(set(made)) == 1 and made[0]
        assert reopen().identity() == store.identity() == made[0]
        assert list(reopen().keys()) == []

    # -- concurrency (flag: supports_concurrency) -----------------------------

    def test_concurrent_puts_of_one_key_leave_one_whole_blob(self, store: BlobStore) -> None:
        if not self.supports_concurrency:
            pytest.skip("put is not thread-safe (supports_concurrency = False)")
        payloads = [pattern(100_000, seed=100 + n) for n in range(8)]
        with ThreadPoolExecutor(max_workers=8) as pool:
            sizes = list(pool.map(lambda p: store.put("race", [p[:999], p[999:]]), payloads))
        assert sizes == [100_000] * 8
        assert read_all(store, "race") in payloads
        assert list(store.keys()) == ["race"]

    def test_concurrent_puts_of_distinct_keys_all_land(self, store: BlobStore) -> None:
        if not self.supports_concurrency:
            pytest.skip("put is not thread-safe (supports_concurrency = False)")
        keys = [f"c{n % 4}/blob-{n:03d}" for n in range(32)]
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda k: store.put(k, [k.encode()]), keys))
        assert sorted(store.keys()) == sorted(keys)
        assert all(read_all(store, key) == key.encode() for key in keys)

    # -- properties ----------------------------------------------------------

    @settings(
        max_examples=25,
        deadline=None,
        # One store per test is enough (every example overwrites the same key), and
        # the method runs once per adapter subclass by design.
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.differing_executors,
        ],
    )
    @given(chunks=st.lists(st.binary(max_size=300), max_size=8))
    def test_any_chunking_round_trips(self, store: BlobStore, chunks: list[bytes]) -> None:
        data = b"".join(chunks)
        assert store.put("prop/blob", chunks) == len(data)
        assert read_all(store, "prop/blob", chunk_size=97) == data
        assert store.stat("prop/blob").size == len(data)
