"""The byte-range rules of ``docbinder serve`` (RFC 9110 section 14), read with any chunking."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from docbinder.integrations.http.content import (
    ascii_fallback,
    content_disposition,
    parse_range,
    parse_ranges,
    stream_parts,
    stream_range,
)

DATA = bytes(range(256)) * 4


class Chunks:
    """A blob reader of ``data`` in chunks of ``size`` bytes, recording that it was closed."""

    def __init__(self, data: bytes, size: int) -> None:
        self._chunks: Iterator[bytes] = iter(
            [data[i : i + size] for i in range(0, len(data), size)]
        )
        self.closed = False

    def __iter__(self) -> Chunks:
        return self

    def __next__(self) -> bytes:
        return next(self._chunks)

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("bytes=0-9", (0, 9)),
        ("bytes=-10", (1014, 1023)),
        ("bytes=1000-", (1000, 1023)),
        ("bytes=1000-5000", (1000, 1023)),
        ("bytes=1024-", False),
        ("bytes=-0", False),
        ("bytes=9-0", None),
        ("items=0-1", None),
        ("bytes=x-1", None),
        (None, None),
    ],
)
def test_one_range(header: str | None, expected: object) -> None:
    assert parse_range(header, len(DATA)) == expected


def test_positions_of_thousands_of_digits_are_read_as_beyond_the_end() -> None:
    nines = "9" * 5000  # int() refuses more than 4,300 digits
    assert parse_range(f"bytes={nines}-", 100) is False
    assert parse_range(f"bytes=0-{nines}", 100) == (0, 99)
    assert parse_range(f"bytes=-{nines}", 100) == (0, 99)
    assert parse_range(f"bytes={'0' * 5000}5-9", 100) == (5, 9)
    assert parse_ranges(f"bytes=0-1,{nines}-", 100) == [(0, 1)]


def test_several_ranges() -> None:
    assert parse_ranges("bytes=0-1, 5-6,-2", len(DATA)) == [(0, 1), (5, 6), (1022, 1023)]
    assert parse_ranges("bytes=0-1,2000-3000", len(DATA)) == [(0, 1)]  # the unsatisfiable dropped
    assert parse_ranges("bytes=2000-,3000-", len(DATA)) is False
    assert parse_ranges("bytes=5-6,0-1", len(DATA)) is None  # out of order: whole file
    assert parse_ranges("bytes=0-5,5-6", len(DATA)) is None  # overlapping
    assert parse_ranges("bytes=" + ",".join(f"{n}-{n}" for n in range(0, 40, 2)), 1024) is None


def _collect(stream: object) -> bytes:
    async def run() -> bytes:
        out = b""
        async for piece in stream:  # type: ignore[attr-defined]
            out += piece
        return out

    return anyio.run(run)


@pytest.mark.parametrize("size", [1, 7, 64, 300, 4096])
def test_ranges_are_cut_right_whatever_the_chunks(size: int) -> None:
    reader = Chunks(DATA, size)
    assert _collect(stream_range(reader, 10, 700)) == DATA[10:701]
    assert reader.closed
    ranges = [(0, 0), (3, 9), (10, 10), (250, 520), (1023, 1023)]
    heads = [f"<{a}>".encode() for a, _ in ranges]
    reader = Chunks(DATA, size)
    body = _collect(stream_parts(reader, ranges, heads, b"<end>"))
    assert (
        body
        == b"".join(h + DATA[a : b + 1] for h, (a, b) in zip(heads, ranges, strict=True)) + b"<end>"
    )
    assert reader.closed


@pytest.mark.parametrize(
    "name", ['a"b.txt', "x;y,z.txt", "../../etc/passwd", "résumé.pdf", "\u202etxt.exe", ""]
)
def test_a_disposition_holds_any_name_safely(name: str) -> None:
    value = content_disposition(name, attachment=True)
    assert value.startswith('attachment; filename="')
    fallback = ascii_fallback(name)
    assert fallback.isascii() and not set(fallback) & set('";,/\\') and fallback
    assert "\r" not in value and "\n" not in value
