"""Standard input and output of the stdio MCP server, read and written on the event loop.

The MCP SDK's ``stdio_server()`` reads each line and writes each message through
``anyio.wrap_file``: every ``readline``, ``write`` and ``flush`` is a hop to a
worker thread and back, three per tool call besides the call's own (ADR 0061).
:func:`stdio_streams` hands the same SDK transport two small objects that do the
reads and writes on the event loop instead: the descriptors are switched to
non-blocking mode, a read or write that would block waits with
``anyio.wait_readable`` / ``anyio.wait_writable``, and a complete line is never
split. As the SDK does, the wire is moved to private descriptors while the
server runs: descriptor 0 reads the null device and descriptor 1 writes to
standard error, so a library that prints (or a child process) cannot corrupt the
protocol; both, and the descriptors' blocking mode, are put back on exit.

On Windows, where pipes have no non-blocking mode, the SDK's own transport serves.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
from mcp.server.stdio import stdio_server

_CHUNK = 1 << 16
"""Bytes asked of one ``read`` of standard input."""


class LineReader:
    """The lines of descriptor ``fd`` as ``str`` (UTF-8, bad bytes replaced), each with its ``\\n``.

    An async iterator for the SDK's reader loop; ends at end of input, where a
    last line without ``\\n`` is still given. ``fd`` must be in non-blocking
    mode (or a regular file, which never blocks).
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = bytearray()
        self._scanned = 0
        self._eof = False

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> str:
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                self._scanned = 0
                return line.decode("utf-8", "replace")
            self._scanned = len(self._buffer)
            if self._eof:
                if not self._buffer:
                    raise StopAsyncIteration
                rest = bytes(self._buffer)
                self._buffer.clear()
                self._scanned = 0
                return rest.decode("utf-8", "replace")
            try:
                chunk = os.read(self._fd, _CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
                continue
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True


class Writer:
    """Writes each message to descriptor ``fd`` at once, waiting only while the pipe is full.

    ``write`` sends the whole text (UTF-8) before it returns; ``flush`` has
    nothing left to do. ``fd`` must be in non-blocking mode (or a regular file).
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        while data:
            try:
                written = os.write(self._fd, data)
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
                continue
            data = data[written:]

    async def flush(self) -> None:
        return None


@contextlib.contextmanager
def _claimed(fd: int, divert: Callable[[], int]) -> Iterator[int]:
    """Move the wire on ``fd`` to a private, non-blocking descriptor; point ``fd`` at ``divert()``.

    Yields the private descriptor. On exit ``fd`` names the wire again, in
    its former blocking mode. When the descriptors cannot be duplicated, the
    wire is served on ``fd`` itself.
    """
    import fcntl  # POSIX only, as this transport

    try:
        # Above the standard range, so the wire cannot land on a descriptor being diverted.
        private: int | None = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        private = None
    wire = fd if private is None else private
    blocking = os.get_blocking(wire)
    if private is not None:
        diversion: int | None
        try:
            diversion = divert()
        except OSError:
            diversion = None
        if diversion is not None:
            os.dup2(diversion, fd)
            os.close(diversion)
    os.set_blocking(wire, False)
    try:
        yield wire
    finally:
        with contextlib.suppress(OSError):
            os.set_blocking(wire, blocking)
        if private is not None:
            with contextlib.suppress(OSError):
                os.dup2(private, fd)
            os.close(private)


def _null_input() -> int:
    return os.open(os.devnull, os.O_RDONLY)


def _standard_error() -> int:
    return os.dup(2)


@contextlib.asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport over this process's stdin and stdout, without worker threads.

    Yields ``(read_stream, write_stream)`` for ``Server.run``, as
    ``mcp.server.stdio.stdio_server()`` does; see the module documentation.
    """
    if sys.platform == "win32":  # pragma: no cover - no non-blocking pipes there
        async with stdio_server() as streams:
            yield streams
        return
    with _claimed(0, _null_input) as wire_in, _claimed(1, _standard_error) as wire_out:
        reader: Any = LineReader(wire_in)
        writer: Any = Writer(wire_out)
        async with stdio_server(stdin=reader, stdout=writer) as streams:
            yield streams
