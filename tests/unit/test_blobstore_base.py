"""The blob-store base class: what it does over its primitives (ADR 0046).

The shipped contract suite runs every store built on it (memory, local disk, S3, the
third-party example); these cases pin what the suite cannot see from outside: the
marks ``put`` hands the primitive, which database they name, that a store which
loses its own records is refused rather than left without an identity, and that an
unkept commit record is said once.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import ClassVar

import pytest

from docbinder.adapters.blobstore_base import (
    DATABASES_PREFIX,
    IDENTITY_NAME,
    NO_RECORDS,
    BlobStoreBase,
)
from docbinder.adapters.streams import ChunkReader
from docbinder.domain.errors import BlobMissing, InvalidInput, StorageError
from docbinder.ports.blobs import BlobOrigin, BlobStat, BlobStore, read_origin

DB = "2c9e4b71-5d3a-4f6e-8b1c-7a0d9e8f6b5c"
OTHER_DB = "9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"


class DictStore(BlobStoreBase):
    """The five primitives over a dict; ``calls`` records what the base class asked for."""

    url = "dict://test"

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[str, tuple[bytes, str | None]] = {}
        self.calls: list[tuple[str, str]] = []

    def _write(
        self, name: str, chunks: Iterator[bytes], mark: str | None, *, replace: bool = True
    ) -> int:
        self.calls.append(("write" if replace else "write-if-absent", name))
        data = b"".join(chunks)
        if replace or name not in self.entries:
            self.entries[name] = (data, mark)
        return len(data)

    def _open(self, name: str, chunk_size: int) -> ChunkReader:
        self.calls.append(("open", name))
        if name not in self.entries:
            raise BlobMissing(name)
        return ChunkReader(iter([self.entries[name][0]]))

    def _stat(self, name: str) -> BlobStat:
        self.calls.append(("stat", name))
        if name not in self.entries:
            raise BlobMissing(name)
        data, mark = self.entries[name]
        return BlobStat(len(data), datetime.now(UTC), mark)

    def _delete(self, name: str) -> None:
        self.entries.pop(name, None)

    def _list(self, prefix: str) -> Iterator[str]:
        return iter([name for name in self.entries if name.startswith(prefix)])


class CompactDictStore(DictStore):
    compact_marks: ClassVar[bool] = True


class ForgetfulStore(DictStore):
    """Drops whatever is not a blob key: the store's own records never land."""

    def _write(
        self, name: str, chunks: Iterator[bytes], mark: str | None, *, replace: bool = True
    ) -> int:
        return 0 if name.startswith(".") else super()._write(name, chunks, mark, replace=replace)


def test_the_five_primitives_make_a_store_the_port_accepts() -> None:
    store: BlobStore = DictStore()  # type-checked against the protocol
    assert store.put("ab/abc", [b"x", b"y"]) == 2
    with store.open("ab/abc") as chunks:
        assert b"".join(chunks) == b"xy"
    assert store.exists("ab/abc") and not store.exists("ab/other")
    assert list(store.keys()) == ["ab/abc"]


def test_no_mark_before_an_identity_then_one_naming_the_one_registered_database() -> None:
    store = DictStore()
    store.put("ab/before", [b"x"])
    assert store.stat("ab/before").origin is None
    identity = store.identity(create=True)
    assert identity is not None
    store.put("ab/anon", [b"x"])
    assert read_origin(store.stat("ab/anon").origin, "ab/anon") == BlobOrigin(identity, None)
    store.register_database(DB)
    store.put("ab/mine", [b"x"])
    assert read_origin(store.stat("ab/mine").origin, "ab/mine") == BlobOrigin(identity, DB)
    store.register_database(OTHER_DB)  # two databases on one object: the mark names none
    store.put("ab/both", [b"x"])
    assert read_origin(store.stat("ab/both").origin, "ab/both") == BlobOrigin(identity, None)
    assert store.databases() == {DB, OTHER_DB}
    assert sorted(store.keys()) == ["ab/anon", "ab/before", "ab/both", "ab/mine"]


def test_compact_marks_verify_only_against_the_store_and_the_database() -> None:
    store = CompactDictStore()
    identity = store.identity(create=True)
    store.register_database(DB)
    store.put("ab/abc", [b"x"])
    mark = store.stat("ab/abc").origin
    assert mark is not None and mark.startswith("v2 ") and len(mark) == 15
    assert read_origin(mark, "ab/abc", identity, [None, DB]) == BlobOrigin(identity or "", DB)
    assert read_origin(mark, "ab/abc", identity, [None, OTHER_DB]) is None


def test_the_identity_is_written_if_absent_once_and_kept_by_the_object() -> None:
    store = DictStore()
    assert store.identity() is None
    assert ("write-if-absent", IDENTITY_NAME) not in store.calls  # nothing made without create
    store.entries[IDENTITY_NAME] = (b"the-winner\n", None)  # another writer got there first
    assert store.identity(create=True) == "the-winner"
    store.calls.clear()
    assert store.identity() == "the-winner"
    assert store.calls == []  # cached


def test_a_lost_identity_record_is_refused_not_passed_over() -> None:
    with pytest.raises(StorageError, match=r"\.docbinder-store.*cannot be read back"):
        ForgetfulStore().identity(create=True)


def test_an_identity_record_of_bytes_docbinder_never_writes_is_a_storage_error() -> None:
    store = DictStore()
    store.entries[IDENTITY_NAME] = ("é\n".encode(), None)
    with pytest.raises(StorageError, match="never writes"):
        store.identity()


def test_a_registration_is_written_only_when_it_is_not_there() -> None:
    store = DictStore()
    store.register_database(DB)
    store.register_database(DB)
    writes = [call for call in store.calls if call[0].startswith("write")]
    assert writes == [("write-if-absent", DATABASES_PREFIX + DB)]
    for bad in ("a/b", "../x", "", ".hidden"):
        with pytest.raises(InvalidInput):
            store.register_database(bad)


def test_keys_and_databases_leave_out_what_is_not_theirs() -> None:
    store = DictStore()
    store.identity(create=True)
    store.register_database(DB)
    store.entries[DATABASES_PREFIX + "x/y"] = (b"", None)  # not one segment
    store.entries[DATABASES_PREFIX + "bad name"] = (b"", None)
    store.entries["not a key"] = (b"", None)
    store.put("ab/abc", [b"x"])
    assert list(store.keys()) == ["ab/abc"]
    assert store.databases() == {DB}


def test_a_refused_key_reaches_no_primitive_and_consumes_no_input() -> None:
    store = DictStore()
    consumed: list[bytes] = []

    def chunks() -> Iterator[bytes]:
        consumed.append(b"x")
        yield b"x"

    for call in (
        lambda: store.put("../x", chunks()),
        lambda: store.open("../x"),
        lambda: store.stat("../x"),
        lambda: store.exists("../x"),
        lambda: store.delete("../x"),
        lambda: store.mark_committed("../x"),
        lambda: store.is_committed("../x"),
        lambda: store.open("ab/abc", 0),
    ):
        with pytest.raises(InvalidInput):
            call()
    assert store.calls == [] and consumed == []


def test_a_store_without_commit_records_answers_false_and_says_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = DictStore()
    store.put("ab/one", [b"1"])
    store.put("ab/two", [b"2"])
    with caplog.at_level(logging.DEBUG, logger="docbinder.adapters.blobstore_base"):
        assert store.mark_committed("ab/one") is False
        assert store.mark_committed("ab/two") is False
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert NO_RECORDS in warnings[0] and "dict://test" in warnings[0] and "ab/one" in warnings[0]
    assert store.is_committed("ab/one") is False
    with pytest.raises(BlobMissing):
        store.mark_committed("ab/absent")
    with pytest.raises(BlobMissing):
        store.is_committed("ab/absent")


def test_check_writable_leaves_nothing() -> None:
    store = DictStore()
    store.check_writable()
    assert list(store.keys()) == []
    [probe] = [name for kind, name in store.calls if kind == "write"]
    assert probe.startswith("docbinder-probe-") and ("open", probe) in store.calls
