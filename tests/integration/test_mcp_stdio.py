"""The stdio MCP server's standard input and output, read and written on the event loop (ADR 0061).

Over real pipes: lines arrive whole whatever the chunks (a UTF-8 character
split between reads included), the last line without newline still counts, a
write larger than the pipe waits for the reader without stopping the event
loop, and the wire moves to a private descriptor while the server runs and
comes back, blocking mode included, afterwards. The server itself over stdio
is in ``tests/e2e/test_mcp.py``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import anyio
import pytest

pytest.importorskip("mcp")

from docbinder.integrations.mcp.stdio import LineReader, Writer, _claimed


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read_end, write_end = os.pipe()
    try:
        yield read_end, write_end
    finally:
        for fd in (read_end, write_end):
            with contextlib.suppress(OSError):  # a test closed it already
                os.close(fd)


def test_lines_arrive_whole_whatever_the_chunks(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    os.set_blocking(read_end, False)
    euro = "€".encode()
    chunks = [b'{"a": 1}\n{"b"', b': "x' + euro[:1], euro[1:] + b'"}\n\n{"c": 3}\n{"d"', b": 4}"]

    async def main() -> list[str]:
        lines: list[str] = []

        async def feed() -> None:
            for chunk in chunks:
                await anyio.sleep(0.01)  # the reader waits in between
                os.write(write_end, chunk)
            os.close(write_end)

        async with anyio.create_task_group() as group:
            group.start_soon(feed)
            async for line in LineReader(read_end):
                lines.append(line)
        return lines

    assert anyio.run(main) == ['{"a": 1}\n', '{"b": "x€"}\n', "\n", '{"c": 3}\n', '{"d": 4}']


def test_bad_bytes_are_replaced_not_fatal(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    os.set_blocking(read_end, False)
    os.write(write_end, b"ok\n\xff\xfe\n")
    os.close(write_end)

    async def main() -> list[str]:
        return [line async for line in LineReader(read_end)]

    assert anyio.run(main) == ["ok\n", "\ufffd\ufffd\n"]


def test_a_write_larger_than_the_pipe_waits_without_blocking_the_loop(
    pipe: tuple[int, int],
) -> None:
    read_end, write_end = pipe
    os.set_blocking(write_end, False)
    message = "x" * (1 << 20) + "\n"  # far beyond a pipe's 64 KiB buffer

    async def main() -> tuple[bytes, int]:
        received = bytearray()
        ticks = 0

        async def drain() -> None:
            await anyio.sleep(0.05)  # the writer finds the pipe full first
            while len(received) < len(message):
                await anyio.wait_readable(read_end)
                received.extend(os.read(read_end, 1 << 16))

        async def tick() -> None:
            nonlocal ticks
            while len(received) < len(message):
                ticks += 1
                await anyio.sleep(0.001)

        async with anyio.create_task_group() as group:
            group.start_soon(drain)
            group.start_soon(tick)
            writer = Writer(write_end)
            await writer.write(message)
            await writer.flush()
        return bytes(received), ticks

    received, ticks = anyio.run(main)
    assert received == message.encode()
    assert ticks > 5  # the loop ran other tasks while the write waited


def test_the_wire_moves_to_a_private_descriptor_and_comes_back(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    os.write(write_end, b"wire\n")
    assert os.get_blocking(read_end)
    with _claimed(read_end, lambda: os.open(os.devnull, os.O_RDONLY)) as wire:
        assert wire != read_end and wire > 2
        assert not os.get_blocking(wire)
        assert os.read(read_end, 10) == b""  # the old number now reads the null device
        assert os.read(wire, 10) == b"wire\n"
        os.write(write_end, b"after\n")
    assert os.get_blocking(read_end)  # blocking mode put back
    assert os.read(read_end, 10) == b"after\n"  # the wire is back on its number
    with pytest.raises(OSError):
        os.fstat(wire)  # the private descriptor is closed
