"""Hostile file names and oversized input (SPEC C1, C13, section 5).

Names: path separators, ``..``, absolute paths, 1,000-character names,
right-to-left marks, names that differ only by Unicode normalisation — stored
exactly as given, listed as given, never steering where a blob lands; or
rejected with :class:`InvalidInput` (empty, NUL and other C0 controls, DEL,
lone surrogates, more than 1,024 characters) with nothing stored.

Oversized input: a binder with ``max_file_size`` stops reading at the limit
(the input is not consumed beyond one chunk past it), raises
:class:`SizeLimitExceeded`, and keeps nothing: no blob, no temp file, no
unfinished multipart upload, no row.
"""

from __future__ import annotations

import io
import os
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.s3 import S3BlobStore
from docbinder.application import DocBinder
from docbinder.domain.errors import InvalidInput, SizeLimitExceeded
from docbinder.domain.model import MAX_FILE_NAME_LENGTH, Principal
from docbinder.ports.blobs import BlobStore
from docbinder.ports.metadata import UnitOfWorkFactory
from tests.contract.sql_backends import provision
from tests.reliability.harness import (
    LEDGER,
    CountingInput,
    check_consistent,
    files_under,
    inside,
    make_binder,
)

MiB = 1 << 20
U1 = Principal("u1", "m1", "f1", roles=("member",))

NFC = unicodedata.normalize("NFC", "café.txt")
NFD = unicodedata.normalize("NFD", "café.txt")

ACCEPTED_NAMES = [
    "../../etc/passwd",
    "../" * 40 + "escape.txt",
    "/etc/shadow",
    "/",
    "a/b/c.txt",
    "a\\b\\c.txt",
    "C:\\Windows\\System32\\drivers\\etc\\hosts",
    "\\\\server\\share\\x.doc",
    "..",
    ".",
    "...",
    ".hidden",
    ".tmp-0123456789abcdef0123456789abcdef.part",
    "~/.ssh/id_rsa",
    "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "file:///etc/passwd",
    "docItem:00000000-0000-4000-8000-000000000000",
    "x" * 1000,
    "é" * 1000,
    "😀" * 1000,
    "x" * MAX_FILE_NAME_LENGTH,
    "\u202egnp.exe",  # right-to-left override: displays as "exe.png"
    "report\u200f.pdf",  # right-to-left mark
    "\u200e\u200b\u2060zero-width.txt",
    "\ufeffbom.txt",
    "tab\tinside.txt",
    " ",
    " leading.txt",
    "trailing.txt ",
    "CON",
    "NUL.txt",
    "a:b*c?d<e>f|g\"h'.txt",
    "'; DROP TABLE file_items; --",
    "Robert'); DELETE FROM chat_messages;--.txt",
    "<script>alert(1)</script>.html",
    "[red]rich markup[/red].txt",
    "ﬁle.txt",  # a ligature NFKC folds to "file.txt"
    NFC,
    NFD,
]

REJECTED_NAMES = [
    "",
    "\x00",
    "a\x00b.txt",
    "evil.txt\x00.png",
    "\x01start",
    "line\nbreak.txt",
    "carriage\rreturn.txt",
    "\x1b[31mred\x1b[0m.txt",
    "bell\x07.txt",
    "del\x7f.txt",
    "\ud800lone-surrogate.txt",
    "x" * (MAX_FILE_NAME_LENGTH + 1),
    "é" * 5000,
]


@attrs.define
class Stack:
    name: str
    binder: DocBinder
    uow_factory: UnitOfWorkFactory
    blobs: BlobStore
    root: Path | None


@pytest.fixture(params=["memory", "sqlite+localdisk"])
def stack(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stack]:
    if request.param == "memory":
        meta, blobs = MemoryMetadataStore(), MemoryBlobStore()
        yield Stack("memory", make_binder(meta.unit_of_work, blobs), meta.unit_of_work, blobs, None)
        return
    with provision("sqlite", tmp_path) as db:
        store = LocalDiskBlobStore(tmp_path / "store" / "blobs")
        yield Stack(
            "sqlite+localdisk",
            make_binder(db.store.unit_of_work, store),
            db.store.unit_of_work,
            store,
            store.root,
        )


def _check_layout(stack: Stack) -> None:
    """Every blob is a file ``<root>/<id[:2]>/<id>``, nothing lies outside the root."""
    state = check_consistent(stack.uow_factory, stack.blobs)
    for item in state.items:
        assert item.blob_key == f"{item.id[:2]}/{item.id}"
    assert state.keys == state.named
    if stack.root is not None:
        on_disk = files_under(stack.root)
        assert all(inside(p, stack.root) for p in on_disk)
        assert sorted(p.relative_to(stack.root).as_posix() for p in on_disk) == sorted(state.keys)
        # the root's parent holds only the root: no name made the store write beside it
        assert sorted(p.name for p in stack.root.parent.iterdir()) == ["blobs"]


def test_hostile_names_are_stored_as_given_and_never_steer_the_blob(stack: Stack) -> None:
    run = stack.binder.start_new_run(U1)
    produced = {}
    for index, name in enumerate(ACCEPTED_NAMES):
        result = run.produce_file(name, f"content {index}".encode(), label=f"n:{index}")
        assert result.item.file_name == name
        assert result.document_id is not None
        produced[name] = result
    LEDGER.hostile["file names accepted and stored safely"] += len(ACCEPTED_NAMES)
    _check_layout(stack)
    # listed exactly as given, code point for code point
    listed = sorted(i.file_name for i in run.list_files())
    assert listed == sorted(ACCEPTED_NAMES)
    # and each resolves to its own document with the name as given
    resolution = run.resolve([r.reference for r in produced.values()])
    assert resolution.ok
    assert [d.file.file_name for d in resolution.documents] == list(produced)
    content = run.get_content([produced[NFD].reference])
    assert [p.text for p in content.parts] == [f"content {ACCEPTED_NAMES.index(NFD)}"]


def test_names_that_differ_only_by_normalisation_are_distinct_items(stack: Stack) -> None:
    assert NFC != NFD and unicodedata.normalize("NFC", NFD) == NFC
    run = stack.binder.start_new_run(U1)
    composed = run.produce_file(NFC, b"same bytes")
    decomposed = run.produce_file(NFD, b"same bytes")
    assert not decomposed.duplicate
    assert composed.item.id != decomposed.item.id
    assert composed.item.file_name.encode() == NFC.encode()
    assert decomposed.item.file_name.encode() == NFD.encode()
    # each normalisation is its own duplicate key
    again = run.produce_file(NFD, b"same bytes")
    assert again.duplicate and again.item.id == decomposed.item.id
    listed = [i.file_name.encode() for i in run.list_files()]
    assert sorted(listed) == sorted([NFC.encode(), NFD.encode()])
    assert [d.file.file_name for d in run.resolve(f"file:{decomposed.item.id}").documents] == [
        NFD,
        NFD,
    ]
    LEDGER.hostile["file names accepted and stored safely"] += 3
    _check_layout(stack)


@pytest.mark.parametrize("name", REJECTED_NAMES, ids=lambda n: repr(n)[:40])
def test_rejected_names_store_nothing(stack: Stack, name: str) -> None:
    run = stack.binder.start_new_run(U1)
    with pytest.raises(InvalidInput, match="file name"):
        run.produce_file(name, b"payload")
    LEDGER.hostile["file names rejected"] += 1
    state = check_consistent(stack.uow_factory, stack.blobs)
    assert state.items == () and state.keys == frozenset()
    assert run.workflow is not None and run.workflow.messages == ()
    if stack.root is not None:
        assert files_under(stack.root) == []


@pytest.mark.parametrize("name", [None, b"bytes.txt", 42, ["a"]], ids=repr)
def test_non_text_names_are_rejected(stack: Stack, name: object) -> None:
    with pytest.raises(InvalidInput):
        stack.binder.start_run(U1).store_file(name, b"payload")  # type: ignore[arg-type]
    LEDGER.hostile["file names rejected"] += 1
    assert list(stack.blobs.keys()) == []


@pytest.mark.parametrize("name", ["\x9b31mred.txt", "next\x85line.txt"], ids=["CSI", "NEL"])
def test_c1_control_characters_are_rejected(name: str) -> None:
    meta, blobs = MemoryMetadataStore(), MemoryBlobStore()
    with pytest.raises(InvalidInput):
        make_binder(meta.unit_of_work, blobs).start_run(U1).store_file(name, b"x")


NAME_PIECES = ["/", "\\", ".", "..", "\x00", "\x85", "\u202e", "e\u0301", "é", "~", ":", " ", "a"]
NAME_TEXT = st.text(st.characters(codec=None, categories=None), max_size=40) | st.lists(
    st.sampled_from(NAME_PIECES), max_size=30
).map("".join)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(name=NAME_TEXT)
def test_any_name_is_rejected_or_kept_exactly(name: str, tmp_path: Path) -> None:
    meta = MemoryMetadataStore()
    store = LocalDiskBlobStore(tmp_path / f"fuzz-{os.urandom(6).hex()}" / "blobs")
    binder = make_binder(meta.unit_of_work, store)
    LEDGER.hostile["generated file names (hypothesis)"] += 1
    try:
        item = binder.start_run(U1).store_file(name, b"x").item
    except InvalidInput:
        assert list(store.keys()) == [] and files_under(store.root) == []
        return
    assert item.file_name == name
    assert item.blob_key == f"{item.id[:2]}/{item.id}"
    assert [p.relative_to(store.root).as_posix() for p in files_under(store.root)] == [
        item.blob_key
    ]
    assert binder.get_file(U1, item.id).file_name == name


# ----------------------------------------------------------------------------- size limit


@attrs.define
class SizeStack:
    binder: DocBinder
    uow_factory: UnitOfWorkFactory
    blobs: BlobStore
    leftovers: object  # () -> list of temp files / unfinished uploads


LIMIT = 6 * MiB + 7  # above the S3 multipart threshold used below, so a multipart upload starts


@pytest.fixture(params=["sqlite+localdisk", "sqlite+s3"])
def limited(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SizeStack]:
    with provision("sqlite", tmp_path) as db:
        if request.param == "sqlite+localdisk":
            disk = LocalDiskBlobStore(tmp_path / "blobs")
            yield SizeStack(
                make_binder(db.store.unit_of_work, disk, max_file_size=LIMIT),
                db.store.unit_of_work,
                disk,
                lambda: (
                    [str(p) for p in disk.stale_temp_files(0)]
                    + [str(p) for p in files_under(disk.root)]
                ),
            )
            return
        bucket = request.getfixturevalue("s3_bucket")
        endpoint = request.getfixturevalue("s3_endpoint")
        s3 = S3BlobStore(
            bucket,
            "blobs",
            endpoint_url=endpoint,
            region_name="us-east-1",
            multipart_threshold=5 * MiB,
            multipart_chunksize=5 * MiB,
            max_concurrency=2,
        )

        def s3_leftovers() -> list[str]:
            pending = [u.key for u in s3.pending_uploads(older_than_seconds=-3600)]
            listed = s3.client.list_objects_v2(Bucket=bucket).get("Contents", [])
            # The store's own records (identity, databases) are not leftovers.
            own = "blobs/.docbinder-"
            return pending + [o["Key"] for o in listed if not o["Key"].startswith(own)]

        yield SizeStack(
            make_binder(db.store.unit_of_work, s3, max_file_size=LIMIT),
            db.store.unit_of_work,
            s3,
            s3_leftovers,
        )


def _nothing_kept(stack: SizeStack) -> None:
    state = check_consistent(stack.uow_factory, stack.blobs)
    assert state.items == () and state.keys == frozenset()
    assert stack.leftovers() == []  # type: ignore[operator]


def test_oversized_chunk_stream_stops_at_the_limit(limited: SizeStack) -> None:
    source = CountingInput(count=4096, size=64 * 1024)  # 256 MiB on offer
    run = limited.binder.start_new_run(U1)
    with pytest.raises(SizeLimitExceeded) as caught:
        run.produce_file("huge.bin", source)
    assert caught.value.limit == LIMIT
    assert LIMIT < source.taken <= LIMIT + source.size
    assert run.workflow is not None and run.workflow.messages == ()
    LEDGER.hostile["oversized inputs"] += 1
    _nothing_kept(limited)


class _CountingFile(io.RawIOBase):
    """A readable, endless binary file that counts the bytes read from it."""

    def __init__(self) -> None:
        self.taken = 0
        self.largest_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        size = len(buffer)
        buffer[:size] = b"\x00" * size
        self.taken += size
        self.largest_read = max(self.largest_read, size)
        return size


def test_oversized_file_object_stops_at_the_limit(limited: SizeStack) -> None:
    source = _CountingFile()
    with pytest.raises(SizeLimitExceeded):
        limited.binder.start_run(U1).store_file("endless.bin", source)  # type: ignore[arg-type]
    assert LIMIT < source.taken <= LIMIT + source.largest_read
    LEDGER.hostile["oversized inputs"] += 1
    _nothing_kept(limited)


def test_input_of_exactly_the_limit_is_stored(limited: SizeStack) -> None:
    source = CountingInput(count=1, size=LIMIT)
    result = limited.binder.start_new_run(U1).produce_file("exact.bin", source)
    assert result.item.size == LIMIT and result.document_id is not None
    check_consistent(limited.uow_factory, limited.blobs)


def test_append_beyond_the_limit_changes_nothing(limited: SizeStack) -> None:
    item = limited.binder.start_run(U1).store_file("log.txt", b"line\n" * 1000).item
    source = CountingInput(count=4096, size=64 * 1024)
    with pytest.raises(SizeLimitExceeded):
        limited.binder.update_file.append(U1, item.id, source)
    assert source.taken <= LIMIT + source.size
    LEDGER.hostile["oversized inputs"] += 1
    assert limited.binder.get_file(U1, item.id) == item
    state = check_consistent(limited.uow_factory, limited.blobs)
    assert state.keys == frozenset({item.blob_key})


@pytest.mark.parametrize("limit", [-1, -100, True, 1.5, "3"], ids=repr)
def test_listing_with_a_bad_limit_is_rejected(stack: Stack, limit: object) -> None:
    """A negative limit used to slice from the end: ``[:-1]`` hid the last file instead of failing."""
    run = stack.binder.start_run(U1)
    for name in ("a.txt", "b.txt"):
        run.store_file(name, name.encode())
    with pytest.raises(InvalidInput, match="limit"):
        run.list_files(limit=limit)  # type: ignore[arg-type]
    LEDGER.hostile["bad list limits"] += 1
    assert len(run.list_files(limit=0)) == 0 and len(run.list_files(limit=5)) == 2


def test_listing_workflows_with_a_negative_limit_is_rejected(stack: Stack) -> None:
    for _ in range(2):
        stack.binder.start_new_run(U1)
    with pytest.raises(InvalidInput, match="limit"):
        stack.binder.list_workflows(U1, limit=-1)
