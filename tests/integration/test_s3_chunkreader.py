"""The file object that feeds boto3's managed transfer from a chunk iterator."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator

import pytest

from docbinder.adapters.s3.chunkreader import ChunkReader, SourceFailed
from docbinder.testing.blob_suite import Boom, Generated, failing, pattern


def test_read_returns_exactly_the_amount_across_chunk_boundaries() -> None:
    data = pattern(10_000)
    reader = ChunkReader(iter([data[:1], data[1:4000], b"", data[4000:]]))
    assert reader.read(3000) == data[:3000]
    assert reader.read(6999) == data[3000:9999]
    assert reader.read(5000) == data[9999:]
    assert reader.read(5000) == b""
    assert reader.bytes_read == 10_000


def test_readinto_fills_the_whole_buffer_unless_at_end() -> None:
    reader = ChunkReader(iter([b"ab", b"cd", b"e"]))
    buffer = bytearray(4)
    assert reader.readinto(buffer) == 4
    assert buffer == b"abcd"
    assert reader.readinto(buffer) == 1
    assert buffer[:1] == b"e"
    assert reader.readinto(buffer) == 0


def test_read_all() -> None:
    reader = ChunkReader(iter([b"ab", b"cd"]))
    assert reader.read(1) == b"a"
    assert reader.read() == b"bcd"
    assert reader.read(-1) == b""
    assert reader.bytes_read == 4


def test_is_a_readable_non_seekable_stream() -> None:
    reader = ChunkReader(iter([]))
    assert reader.readable()
    assert not reader.seekable()


@pytest.mark.parametrize("error", [Boom("source"), KeyboardInterrupt()], ids=repr)
def test_a_failing_source_is_kept_and_reported_as_source_failed(error: BaseException) -> None:
    reader = ChunkReader(failing(b"abcdef", error))
    assert reader.read(2) == b"ab"
    with pytest.raises(SourceFailed) as caught:
        reader.read(100)
    assert caught.value.__cause__ is error
    assert reader.error is error
    with pytest.raises(SourceFailed):
        reader.read(1)


def test_a_part_needs_about_its_own_size_in_memory() -> None:
    part = 8 << 20
    source: Iterator[bytes] = iter(Generated(part, chunk=1 << 20))
    reader = ChunkReader(source)
    tracemalloc.start()
    try:
        data = reader.read(part)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(data) == part
    assert peak < part * 1.5, f"reading an 8 MiB part peaked at {peak} bytes"
