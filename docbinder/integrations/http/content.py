"""How a file's bytes go out over HTTP: ranges, validators, file names, and safety headers.

- ``Range: bytes=...`` (RFC 9110 section 14), read from the blob store with a
  ranged read (:func:`byte_span`; nothing before the range is read): one satisfiable range is answered
  ``206`` with ``Content-Range``; an unsatisfiable one ``416``; up to
  :data:`MAX_RANGES` ranges in ascending order that do not overlap are answered ``206``
  ``multipart/byteranges`` (section 14.6), read in one pass; other sets of ranges, or a
  syntax this module does not read, are answered with the whole file (``200``), as the
  RFC allows.
- ``ETag`` is the FileItem's SHA-256 in quotes (a strong validator: the same bytes
  always have it); ``If-None-Match`` (RFC 9110 section 13.1.2) answers ``304``.
- ``Content-Disposition`` (RFC 6266) carries an ASCII ``filename`` fallback and the
  real name as ``filename*`` in UTF-8 percent-encoding (RFC 8187, which replaced
  RFC 5987): no name can end the header, add one, or name a path.
- Content a browser would run (HTML, SVG, XML, JavaScript) is sent as an
  attachment, and every file with ``Content-Security-Policy: sandbox`` and
  ``X-Content-Type-Options: nosniff``, so no stored file runs in the service's origin.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import AsyncIterator, Callable
from typing import Final
from urllib.parse import quote

import anyio.to_thread

from docbinder.domain.mime import served_content_type
from docbinder.domain.model import FileItem
from docbinder.ports.blobs import BlobReader

ACTIVE_TYPES: Final = frozenset(
    {
        "text/html",
        "application/xhtml+xml",
        "image/svg+xml",
        "text/xml",
        "application/xml",
        "text/javascript",
        "application/javascript",
        "application/ecmascript",
        "text/xsl",
        "application/xslt+xml",
        "application/pdf",
        "text/rdf+xml",
        "multipart/x-mixed-replace",
    }
)
"""MIME types a browser may run scripts in (or render active content from)."""

CONTENT_SECURITY_POLICY: Final = (
    "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'"
)
"""On every file's bytes: scripts, forms and plugins are off, even if a browser renders it."""

_RANGE: Final = re.compile(r"^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$", re.I)
_FALLBACK_UNSAFE: Final = re.compile(r"[^A-Za-z0-9 !#$&+\-.^_`|~()\[\]{}=@]")


def is_active(mime_type: str) -> bool:
    """Whether ``mime_type`` (parameters ignored) is one a browser may run: :data:`ACTIVE_TYPES` or ``+xml``."""
    base = mime_type.split(";", 1)[0].strip().lower()
    return base in ACTIVE_TYPES or base.endswith("+xml") or base.endswith("/xml")


def etag(item: FileItem) -> str:
    """The strong ``ETag`` of ``item``: its SHA-256 in double quotes."""
    return f'"{item.sha256}"'


def none_match(header: str | None, item: FileItem) -> bool:
    """Whether an ``If-None-Match`` value matches ``item`` (``*`` or its ETag, weak or strong)."""
    if not header:
        return False
    tag = etag(item)
    for candidate in header.split(","):
        value = candidate.strip()
        if value == "*" or value.removeprefix("W/") == tag:
            return True
    return False


MAX_RANGES: Final = 16
"""Most ranges one request gets as ``multipart/byteranges``."""


def parse_ranges(header: str | None, size: int) -> list[tuple[int, int]] | bool | None:
    """The byte ranges ``[(first, last), ...]`` (inclusive) ``header`` asks of ``size`` bytes.

    ``None``: serve the whole file (no header, bad syntax, more than
    :data:`MAX_RANGES`, ranges out of order or overlapping); ``False``: none of them is
    satisfiable (``416``). Unsatisfiable ranges among satisfiable ones are dropped.
    """
    if header is None:
        return None
    unit, sep, specs = header.partition("=")
    if not sep or unit.strip().lower() != "bytes":
        return None
    parts = [p for p in specs.split(",") if p.strip()]
    if not parts or len(parts) > MAX_RANGES:
        return None
    ranges: list[tuple[int, int]] = []
    for part in parts:
        one = parse_range(f"bytes={part}", size)
        if one is None:
            return None
        if isinstance(one, tuple):
            ranges.append(one)
    if not ranges:
        return False
    for (_, last), (first, _) in itertools.pairwise(ranges):
        if first <= last:
            return None
    return ranges


def byte_span(
    range_header: str | None, if_none_match: str | None, *, head: bool = False
) -> Callable[[FileItem], tuple[int, int] | None]:
    """Which bytes of a FileItem an answer to these request headers sends: ``(offset, length)``.

    The span the blob store reads (a ranged read), decided from the item once it is
    known: nothing for ``304``, ``416`` and ``HEAD``; from the first byte of the first
    range to the last byte of the last for ``206`` (one range, or
    ``multipart/byteranges`` read in one pass); ``None`` (all of it) for ``200``.
    """

    sends = sends_bytes(range_header, if_none_match, head=head)

    def span(item: FileItem) -> tuple[int, int] | None:
        if not sends(item):
            return 0, 0
        wanted = parse_ranges(range_header, item.size)
        if not isinstance(wanted, list):
            return None
        return wanted[0][0], wanted[-1][1] - wanted[0][0] + 1

    return span


def sends_bytes(
    range_header: str | None, if_none_match: str | None, *, head: bool = False
) -> Callable[[FileItem], bool]:
    """Whether the answer to these request headers sends any of a FileItem's bytes.

    ``False`` for ``HEAD``, for ``304 Not Modified`` (``If-None-Match`` matches) and
    for ``416 Range Not Satisfiable`` (RFC 9110 sections 13.1.2 and 14.1.2); such an
    answer does not use up a one-time link.
    """

    def sends(item: FileItem) -> bool:
        if head or none_match(if_none_match, item):
            return False
        return parse_ranges(range_header, item.size) is not False

    return sends


async def stream_parts(
    reader: BlobReader,
    ranges: list[tuple[int, int]],
    heads: list[bytes],
    tail: bytes,
    start: int = 0,
) -> AsyncIterator[bytes]:
    """The body of a ``multipart/byteranges`` answer: each head, its range's bytes, then ``tail``.

    ``ranges`` ascending and disjoint; ``reader`` gives the blob's bytes from byte
    ``start`` on (a ranged read from the first range's start), read once, the bytes
    between ranges dropped. The reader is closed however the response ends.
    """
    position = start
    index = 0
    pending = b""
    try:
        yield heads[0]
        while index < len(ranges):
            if pending:
                chunk: bytes | None = pending
                pending = b""
            else:
                chunk = await anyio.to_thread.run_sync(next, reader, None)
            if chunk is None:
                break
            start, end = position, position + len(chunk)
            first, last = ranges[index]
            if end <= first:
                position = end
                continue
            lo, hi = max(first - start, 0), min(len(chunk), last + 1 - start)
            yield chunk[lo:hi]
            if last + 1 <= end:  # the range ends in this chunk; the next may start in it
                index += 1
                if index < len(ranges):
                    yield heads[index]
                    pending = chunk[last + 1 - start :]
                    position = last + 1
                    continue
            position = end
        yield tail
    finally:
        await anyio.to_thread.run_sync(reader.close)


_HUGE_POSITION = 10**19
"""Beyond any blob's size (bytes): what a longer run of digits stands for."""


def _position(digits: str) -> int:
    """A byte position or length written as ASCII digits; a number of more than 19 digits
    (beyond 2**63, and beyond what ``int()`` reads past 4,300 digits) is :data:`_HUGE_POSITION`."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= 19 else _HUGE_POSITION


def parse_range(header: str | None, size: int) -> tuple[int, int] | bool | None:
    """The one byte range ``(first, last)`` (inclusive) that ``header`` asks of ``size`` bytes.

    ``None``: no range asked for, or one this module serves whole (several ranges,
    other units, bad syntax). ``False``: unsatisfiable (answer ``416``).
    """
    if header is None:
        return None
    match = _RANGE.match(header)
    if match is None:
        return None
    first_text, last_text = match.groups()
    if not first_text and not last_text:
        return None
    if not first_text:  # a suffix: the last N bytes
        length = _position(last_text)
        if length == 0 or size == 0:
            return False
        return max(size - length, 0), size - 1
    first = _position(first_text)
    last = _position(last_text) if last_text else size - 1
    if last_text and last < first:
        return None  # invalid: ignored, the whole file is sent
    if first >= size:
        return False
    return first, min(last, size - 1)


def ascii_fallback(name: str) -> str:
    """``name`` with every character that is not plain printable ASCII replaced by ``_``.

    The characters that end or split a quoted header value (``"``, ``\\``, ``;``,
    ``,``), path separators and controls are replaced as well.
    """
    cleaned = _FALLBACK_UNSAFE.sub("_", name).strip(" .")
    return (cleaned or "download")[:150]


def content_disposition(name: str, *, attachment: bool) -> str:
    """A ``Content-Disposition`` value for ``name`` (RFC 6266, ``filename*`` per RFC 8187)."""
    kind = "attachment" if attachment else "inline"
    encoded = quote(name, safe="!#$&+-.^_`|~")
    return f"{kind}; filename=\"{ascii_fallback(name)}\"; filename*=UTF-8''{encoded}"


def file_headers(item: FileItem, *, download: bool) -> dict[str, str]:
    """The headers of a file's bytes: type, disposition, validators and the safety headers."""
    attachment = download or is_active(item.mime_type)
    return {
        "content-type": served_content_type(item.mime_type),
        "content-disposition": content_disposition(item.file_name, attachment=attachment),
        "etag": etag(item),
        "accept-ranges": "bytes",
        "x-content-type-options": "nosniff",
        "content-security-policy": CONTENT_SECURITY_POLICY,
        "cross-origin-resource-policy": "same-origin",
        "cache-control": "private, no-cache",
    }


async def stream_range(
    reader: BlobReader, first: int = 0, last: int | None = None, start: int = 0
) -> AsyncIterator[bytes]:
    """The bytes ``first`` to ``last`` (inclusive; ``None``: to the end) of a blob.

    ``reader`` gives the blob's bytes from byte ``start`` on (``start == first`` when
    it is a ranged read of exactly these bytes, :func:`byte_span`; then nothing is
    dropped). Chunks are read in a worker thread (the blob stores block). The reader
    is closed however the response ends.
    """
    position = start
    try:
        while last is None or position <= last:
            chunk = await anyio.to_thread.run_sync(next, reader, None)
            if chunk is None:
                break
            start, end = position, position + len(chunk)
            position = end
            if end <= first:
                continue
            lo = max(first - start, 0)
            hi = len(chunk) if last is None else min(len(chunk), last + 1 - start)
            if lo == 0 and hi == len(chunk):
                yield chunk
            else:
                yield chunk[lo:hi]
    finally:
        await anyio.to_thread.run_sync(reader.close)
