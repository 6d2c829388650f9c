"""get_content keeps the readable documents when one document's blob cannot be read."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.streams import ChunkReader
from docbinder.application.use_cases.resolve_document_list import UnresolvedReason
from docbinder.domain.errors import StorageError
from docbinder.domain.model import ContentPart, FileItem, Principal
from docbinder.ports.blobs import BlobReader
from tests.wiring import wire_binder

U1 = Principal("u1", "m1", "f1", roles=("member",))


class FaultyOnKeys:
    """A blob store that fails reading chosen keys after the first chunk."""

    def __init__(self, inner: MemoryBlobStore) -> None:
        self.inner = inner
        self.failing: set[str] = set()
        self.error: Exception = StorageError("connection reset while reading the blob")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def open(self, key: str, chunk_size: int = 1 << 20) -> BlobReader:
        inner = self.inner.open(key, chunk_size)
        if key not in self.failing:
            return inner

        def failing() -> Iterator[bytes]:
            yield b"partial "
            raise self.error

        return ChunkReader(failing(), inner.close)


@pytest.fixture
def rig() -> tuple[Any, FaultyOnKeys]:
    blobs = FaultyOnKeys(MemoryBlobStore())
    binder = wire_binder(MemoryMetadataStore().unit_of_work, blobs)  # type: ignore[arg-type]
    return binder, blobs


def _produce(run: Any, name: str, data: bytes) -> tuple[str, FileItem]:
    result = run.produce_file(name, data)
    assert result.reference is not None
    return result.reference, result.item


@pytest.mark.parametrize(
    "error",
    [StorageError("connection reset while reading the blob"), OSError(5, "Input/output error")],
)
def test_storage_fault_on_one_document_keeps_the_others(
    rig: tuple[Any, FaultyOnKeys], error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    binder, blobs = rig
    run = binder.start_new_run(U1)
    good_ref, _ = _produce(run, "a.txt", b"first readable document")
    bad_ref, bad_item = _produce(run, "b.txt", b"this one fails")
    other_ref, _ = _produce(run, "c.md", b"# third")
    blobs.failing.add(bad_item.blob_key)
    blobs.error = error

    with caplog.at_level(logging.WARNING, logger="docbinder.application.use_cases.get_content"):
        content = run.get_content([good_ref, bad_ref, other_ref])

    texts = [p.text for p in content.parts]
    assert texts == ["first readable document", "# third"]
    assert [d.reference for d in content.documents] == [good_ref, other_ref]
    (miss,) = content.unresolved
    assert miss.reference == bad_ref
    assert miss.reason is UnresolvedReason.STORAGE_FAULT
    assert str(error.args[-1]) in miss.message
    assert any("storage fault" in r.getMessage() for r in caplog.records)


def test_extractor_crash_on_one_document_keeps_the_others(rig: tuple[Any, FaultyOnKeys]) -> None:
    binder, _ = rig
    inner = binder.extractor

    class Crashing:
        def extract(self, document_id: str, item: FileItem, chunks: Any) -> list[ContentPart]:
            if item.file_name == "boom.txt":
                raise RuntimeError("converter bug")
            return list(inner.extract(document_id, item, chunks))

    binder.get_content._extractor = Crashing()
    run = binder.start_new_run(U1)
    good_ref, _ = _produce(run, "a.txt", b"fine")
    bad_ref, _ = _produce(run, "boom.txt", b"crashes")
    content = run.get_content([bad_ref, good_ref])
    assert [p.text for p in content.parts] == ["fine"]
    assert [(u.reference, u.reason) for u in content.unresolved] == [
        (bad_ref, UnresolvedReason.EXTRACTION_FAILED)
    ]


def test_hostile_document_among_good_ones_gives_a_part_each() -> None:
    from docbinder.adapters.extract import DefaultContentExtractor
    from tests import documents

    binder = wire_binder(
        MemoryMetadataStore().unit_of_work,
        MemoryBlobStore(),
        extractor=DefaultContentExtractor(max_decoded_bytes=5_000_000),
    )
    run = binder.start_new_run(U1)
    good_ref, _ = _produce(run, "a.txt", b"readable")
    bomb_ref, _ = _produce(run, "bomb.docx", documents.zip_bomb_docx(20_000_000))
    deck_ref, _ = _produce(run, "deck.pptx", documents.pptx_bytes(slides=1))
    content = run.get_content([good_ref, bomb_ref, deck_ref])
    assert content.unresolved == ()
    by_ref = {d.reference: d.parts for d in content.documents}
    assert [p.text for p in by_ref[good_ref]] == ["readable"]
    (bomb,) = by_ref[bomb_ref]
    assert bomb.truncated and bomb.note is not None and "zip bomb" in bomb.note
    assert [p.position for p in by_ref[deck_ref]] == ["slide 1"]
