"""The extraction cache in front of a content extractor (feature B10).

:class:`CachingExtractor` wraps a :class:`~docbinder.ports.extractor.ContentExtractor`:
parts are looked up by the FileItem's content hash (``sha256``) and the
extractor's ``version`` string, so identical bytes are converted once for
every workflow and user, and a new extractor or converter version misses. It
is called only with a FileItem the caller already passed the read check for
(the resolver's, or ``get_file``'s): a hit never shows content to someone who
could not read a FileItem with those bytes.

Payload: the parts without their per-document fields (document id, file
name, MIME type, size), as UTF-8 JSON compressed with zlib (RFC 1950). OCR
output is cached the same way; an image part, whose ``data`` is the file's
own bytes, is stored as ``"data": "file"`` and gets them again from the file
on a hit (the payload never holds file bytes).
Removing entries no FileItem needs is the use case
:class:`~docbinder.application.use_cases.prune_extraction_cache.PruneExtractionCache`.
"""

from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Iterator
from typing import Any

from docbinder.domain.errors import DocbinderError
from docbinder.domain.model import ContentKind, ContentPart, FileItem, PageCoverage
from docbinder.ports.extractor import ContentExtractor, ExtractionCache

log = logging.getLogger(__name__)

PAYLOAD_FORMAT = 2
"""Version of the payload encoding; part of the lookup key."""

_FIELDS = (
    "kind",
    "text",
    "position",
    "truncated",
    "truncated_reason",
    "note",
    "encoding",
    "encoding_guessed",
    "ocr",
    "ocr_engine",
    "ocr_confidence",
)

_COVERAGE_FIELDS = ("pages", "text_layer", "ocr", "nothing", "unread", "empty_pages")

WHOLE_FILE = "file"
"""The ``data`` of a cached part whose bytes are the file's own (an image part)."""


def encode_parts(parts: list[ContentPart], item: FileItem | None = None) -> bytes:
    """The cache payload of ``parts``.

    A part may carry ``data`` only when it is the whole file of ``item``
    (``len(data) == item.size``): it is stored as :data:`WHOLE_FILE`.
    Raises ``ValueError`` for other data.
    """
    rows: list[dict[str, Any]] = []
    for part in parts:
        row: dict[str, Any] = {name: getattr(part, name) for name in _FIELDS}
        row["kind"] = str(row["kind"])
        if part.data is not None:
            if item is None or len(part.data) != item.size:
                raise ValueError("only a part holding the whole file may carry data")
            row["data"] = WHOLE_FILE
        if part.coverage is not None:
            row["coverage"] = {
                name: list(value)
                if isinstance(value := getattr(part.coverage, name), tuple)
                else value
                for name in _COVERAGE_FIELDS
            }
        rows.append(row)
    return zlib.compress(json.dumps(rows, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def needs_file(payload_parts: list[ContentPart]) -> bool:
    """Whether decoded parts wait for the file's bytes (see :func:`decode_parts`)."""
    return any(part.kind is ContentKind.IMAGE and part.data == b"" for part in payload_parts)


def decode_parts(
    payload: bytes, document_id: str, item: FileItem, data: bytes | None = None
) -> list[ContentPart]:
    """Parts from a payload, stamped with this document's id and the FileItem's name/type/size.

    A :data:`WHOLE_FILE` part gets ``data`` (the file's bytes; ``b""`` as a
    placeholder when ``None``, see :func:`needs_file`). Raises ``ValueError``
    (or ``zlib.error``) for a payload that is not one.
    """
    rows: Any = json.loads(zlib.decompress(payload).decode("utf-8", "surrogatepass"))
    if not isinstance(rows, list) or not rows:
        raise ValueError("cache payload is not a non-empty list of parts")
    return [
        ContentPart(
            document_id=document_id,
            file_name=item.file_name,
            mime_type=item.mime_type,
            kind=ContentKind(row["kind"]),
            text=row["text"],
            size=item.size,
            position=row["position"],
            truncated=bool(row["truncated"]),
            truncated_reason=row["truncated_reason"],
            note=row["note"],
            encoding=row["encoding"],
            encoding_guessed=bool(row["encoding_guessed"]),
            data=(b"" if data is None else data) if row.get("data") == WHOLE_FILE else None,
            ocr=bool(row["ocr"]),
            ocr_engine=row["ocr_engine"],
            ocr_confidence=row["ocr_confidence"],
            coverage=PageCoverage(**row["coverage"]) if row.get("coverage") else None,
        )
        for row in rows
    ]


def _close(chunks: Iterator[bytes]) -> None:
    close = getattr(chunks, "close", None)
    if callable(close):
        close()


class CachingExtractor:
    """A :class:`~docbinder.ports.extractor.ContentExtractor` that consults an extraction cache.

    The inner extractor must have a ``version`` string attribute, else every
    call goes straight through. Which results are stored is the inner
    extractor's call (its ``cacheable(item, parts)`` method, if any); without
    one, results whose parts carry no ``data`` (other than an image part's
    whole file) are stored. Cache faults
    (:class:`~docbinder.domain.errors.StorageError`) are logged and the
    document is extracted as if there were no cache.
    """

    def __init__(self, inner: ContentExtractor, cache: ExtractionCache) -> None:
        self.inner = inner
        self.cache = cache

    @property
    def version(self) -> str | None:
        """The inner extractor's version plus the payload format, or ``None``."""
        version = getattr(self.inner, "version", None)
        return f"{version};payload={PAYLOAD_FORMAT}" if isinstance(version, str) else None

    def extract(
        self, document_id: str, item: FileItem, chunks: Iterator[bytes]
    ) -> list[ContentPart]:
        """Cached parts for ``item.sha256`` (the stream is then closed unread), else extract."""
        version = self.version
        if version is None:
            return self.inner.extract(document_id, item, chunks)
        try:
            payload = self.cache.get(item.sha256, version)
        except DocbinderError as exc:
            log.warning("extraction cache not read for file %s: %s", item.id, exc)
            payload = None
        if payload is not None:
            try:
                parts = decode_parts(payload, document_id, item)
            except (ValueError, KeyError, TypeError, zlib.error) as exc:
                log.warning("extraction cache entry of file %s unreadable: %s", item.id, exc)
            else:
                if not needs_file(parts):
                    _close(chunks)
                    return parts
                try:
                    data = b"".join(chunks)  # an image part: its bytes come from the file
                finally:
                    _close(chunks)
                if len(data) == item.size:
                    return decode_parts(payload, document_id, item, data)
                chunks = iter((data,))  # not the bytes the entry was made for: extract them
        parts = self.inner.extract(document_id, item, chunks)
        if self._cacheable(item, parts):
            try:
                self.cache.put(item.sha256, version, encode_parts(parts, item))
            except DocbinderError as exc:
                log.warning("extraction cache not written for file %s: %s", item.id, exc)
        return parts

    def _cacheable(self, item: FileItem, parts: list[ContentPart]) -> bool:
        if not parts or any(
            part.data is not None
            and (part.kind is not ContentKind.IMAGE or len(part.data) != item.size)
            for part in parts
        ):
            return False
        decide = getattr(self.inner, "cacheable", None)
        return bool(decide(item, parts)) if callable(decide) else True
