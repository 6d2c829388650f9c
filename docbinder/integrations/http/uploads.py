"""A request body as the chunks a blob store reads, streamed: raw bytes or one multipart field.

The store use cases are synchronous and read an iterator of chunks; a request's
body arrives on the event loop. :class:`BodyChunks` is that iterator, read by
whichever thread the blob store reads with (the storing worker thread, or the
S3 transfer manager's own) and fetching each next piece of the body from the
event loop (``asyncio.run_coroutine_threadsafe``): at most one network chunk of the
body is held at a time, however large the file. A body that ends early (the
client went away) raises :class:`UploadAborted` inside the store, which then
keeps nothing (SPEC section 5).

A ``multipart/form-data`` body (RFC 7578) is read with ``python-multipart``'s
streaming parser: the bytes of the field ``file`` are the file, its ``filename``
the name when the query gives none; other fields are skipped.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections import deque
from collections.abc import Iterator
from typing import Any

from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import ClientDisconnect, Request

from docbinder.domain.errors import DocbinderError, InvalidInput

FILE_FIELD = "file"
"""The multipart field that carries the file."""
MAX_PART_HEADER_BYTES = 16 * 1024
BODY_WAIT_SECONDS = 120.0
"""Longest wait (seconds) for the next piece of a body; the connection guard's read timeout is shorter."""


class UploadAborted(DocbinderError, ConnectionError):
    """The request body ended before the file did (the client disconnected)."""


class BodyChunks(Iterator[bytes]):
    """The raw request body as a synchronous iterator, for use in a worker thread."""

    def __init__(self, request: Request, wait: float = BODY_WAIT_SECONDS) -> None:
        self._stream = request.stream().__aiter__()
        self._loop = asyncio.get_running_loop()
        self._wait = wait
        self.received = 0

    def call(self, coroutine: Any) -> Any:
        """Run ``coroutine`` on the request's event loop from another thread; its result."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(self._wait)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise UploadAborted("the request body stopped arriving") from None

    async def _next(self) -> bytes | None:
        try:
            while True:
                chunk: bytes = await self._stream.__anext__()
                if chunk:
                    return chunk
        except StopAsyncIteration:
            return None
        except ClientDisconnect:
            raise UploadAborted("the client disconnected during the upload") from None

    def __next__(self) -> bytes:
        chunk: bytes | None = self.call(self._next())
        if chunk is None:
            raise StopIteration
        self.received += len(chunk)
        return chunk


class MultipartFile(Iterator[bytes]):
    """The bytes of the multipart field ``file`` of a request, streamed.

    Await :meth:`start` on the event loop first: it reads until the field's
    headers have come and gives the field's ``filename`` (or ``None``).
    :class:`InvalidInput` for a body that is not ``multipart/form-data`` or has no
    ``file`` field.
    """

    def __init__(self, request: Request) -> None:
        ctype, options = parse_options_header(request.headers.get("content-type", ""))
        boundary = options.get(b"boundary")
        if ctype != b"multipart/form-data" or not boundary:
            raise InvalidInput("expected multipart/form-data with a boundary")
        self._body = BodyChunks(request)
        self._ready: deque[bytes] = deque()
        self._header_field = b""
        self._header_value = b""
        self._headers: dict[bytes, bytes] = {}
        self._header_bytes = 0
        self._in_file = False
        self._file_started = False
        self._file_done = False
        self._ended = False
        self.filename: str | None = None
        callbacks: Any = {
            "on_part_begin": self._part_begin,
            "on_part_data": self._part_data,
            "on_part_end": self._part_end,
            "on_header_field": self._field,
            "on_header_value": self._value,
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_done,
            "on_end": self._end,
        }
        self._parser = MultipartParser(boundary, callbacks)

    # -- parser callbacks --------------------------------------------------------------------
    def _part_begin(self) -> None:
        self._headers = {}
        self._header_bytes = 0

    def _field(self, data: bytes, start: int, end: int) -> None:
        self._header_field += data[start:end]
        self._count(end - start)

    def _value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]
        self._count(end - start)

    def _count(self, n: int) -> None:
        self._header_bytes += n
        if self._header_bytes > MAX_PART_HEADER_BYTES:
            raise InvalidInput("a multipart part's headers are too long")

    def _header_end(self) -> None:
        self._headers[self._header_field.strip().lower()] = self._header_value.strip()
        self._header_field = self._header_value = b""

    def _headers_done(self) -> None:
        _, options = parse_options_header(self._headers.get(b"content-disposition", b""))
        if options.get(b"name") == FILE_FIELD.encode() and not self._file_started:
            self._in_file = self._file_started = True
            raw = options.get(b"filename")
            self.filename = raw.decode("utf-8", "replace") if raw is not None else None

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if self._in_file and end > start:
            self._ready.append(bytes(data[start:end]))

    def _part_end(self) -> None:
        if self._in_file:
            self._in_file = False
            self._file_done = True

    def _end(self) -> None:
        self._ended = True

    # -- reading -----------------------------------------------------------------------------
    async def _pump(self) -> bool:
        """Feed the next body chunk to the parser; ``False`` at the end of the body."""
        chunk = await self._body._next()
        if chunk is None:
            return False
        self._parser.write(chunk)
        return True

    async def start(self) -> str | None:
        """Read up to the ``file`` field's first bytes; return its ``filename``."""
        while not self._file_started:
            if self._ended or not await self._pump():
                raise InvalidInput(f"the multipart body has no field named {FILE_FIELD!r}")
        return self.filename

    def __next__(self) -> bytes:
        while not self._ready:
            if self._file_done or self._ended:
                raise StopIteration
            if not self._body.call(self._pump()):
                if not self._file_done:
                    raise UploadAborted("the multipart body ended inside the file")
                raise StopIteration
        return self._ready.popleft()
