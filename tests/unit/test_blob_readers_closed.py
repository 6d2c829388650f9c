"""Every reader of a blob that docbinder opens is closed, however the reading ends (ADR 0027).

The store below keeps a reference to every reader it hands out, so a reader a
caller drops without closing stays open (nothing closes it when collected) and
the count shows it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from docbinder.adapters.extract import DefaultContentExtractor
from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.application import DocBinder
from docbinder.application.binder import Run
from docbinder.domain.model import ContentPart, FileItem, Principal
from docbinder.ports.blobs import BlobReader
from docbinder.tools import consuming
from tests.wiring import wire_binder

U1 = Principal("u1", "m1", "f1", roles=("member",))


class KeepingReaders:
    """A memory store that holds on to every reader it opened."""

    def __init__(self) -> None:
        self.inner = MemoryBlobStore()
        self.readers: list[BlobReader] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def open(self, key: str, chunk_size: int = 1 << 20) -> BlobReader:
        reader = self.inner.open(key, chunk_size)
        self.readers.append(reader)
        return reader

    @property
    def still_open(self) -> int:
        return self.inner.open_readers


class FailsAfterOneChunk:
    """An extractor that reads one chunk and then fails (a converter crash)."""

    def extract(
        self, document_id: str, item: FileItem, chunks: Iterator[bytes]
    ) -> list[ContentPart]:
        next(iter(chunks))
        raise RuntimeError("converter crashed")


def _rig(extractor: Any = None) -> tuple[DocBinder, KeepingReaders, Run]:
    blobs = KeepingReaders()
    options = {"extractor": extractor} if extractor is not None else {}
    binder = wire_binder(MemoryMetadataStore().unit_of_work, blobs, **options)  # type: ignore[arg-type]
    return binder, blobs, binder.start_new_run(U1)


def test_reading_a_file_whole_or_in_part_closes_it() -> None:
    _, blobs, run = _rig()
    item = run.produce_file("notes.md", b"# Notes\n" + b"x" * 5000, verb="Wrote").item
    assert run.read_file(item.id).startswith(b"# Notes")
    with run.open_file(item.id, 10) as chunks:
        assert next(chunks) == b"# Notes\nxx"
    with pytest.raises(ValueError), run.open_file(item.id, 10) as chunks:
        for _chunk in chunks:
            raise ValueError("the host stopped reading")
    assert len(blobs.readers) == 3
    assert blobs.still_open == 0


def test_content_for_consuming_tools_closes_every_blob() -> None:
    _, blobs, run = _rig()
    one = run.produce_file("a.md", b"alpha\nbeta\n", verb="Wrote", label="a")
    two = run.produce_file("b.csv", b"x,y\n1,2\n", verb="Wrote", label="b")
    content = run.get_content([one.reference, two.reference])
    assert [d.file_name for d in content.documents] == ["a.md", "b.csv"]
    assert "alpha" in consuming.read_file(run, one.item.id)
    assert [m.line for m in consuming.search_in_file_content(run, "beta")] == ["beta"]
    consuming.replace_in_file(run, one.item.id, "alpha", "gamma")
    run.binder.update_file.append(U1, two.item.id, b"3,4\n")
    assert run.read_file(two.item.id) == b"x,y\n1,2\n3,4\n"
    assert len(blobs.readers) >= 6
    assert blobs.still_open == 0


def test_an_extractor_that_fails_half_way_leaves_no_blob_open() -> None:
    _, blobs, run = _rig(FailsAfterOneChunk())
    produced = run.produce_file("a.md", b"alpha " * 100_000, verb="Wrote")
    content = run.get_content([produced.reference])
    assert [u.reason.value for u in content.unresolved] == ["extraction_failed"]
    with pytest.raises(RuntimeError):
        consuming.read_file(run, produced.item.id)
    assert len(blobs.readers) == 2
    assert blobs.still_open == 0


def test_an_extractor_reading_part_of_a_large_file_closes_it() -> None:
    _, blobs, run = _rig(DefaultContentExtractor(max_bytes=1000))
    produced = run.produce_file("big.txt", b"line\n" * 100_000, verb="Wrote")
    assert run.get_content([produced.reference]).parts[0].truncated
    assert "[truncated" in consuming.read_file(run, produced.item.id)
    assert len(blobs.readers) == 2
    assert blobs.still_open == 0
