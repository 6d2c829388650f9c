"""The extraction cache in front of a content extractor (feature B10).

:class:`CachingExtractor` wraps a :class:`~docbinder.ports.extractor.ContentExtractor`:
parts are looked up by the FileItem's content hash (``sha256``) and the
extractor's ``version`` string, so identical bytes are converted once for
every workflow and user, and a new extractor or converter version misses. It
is called only with a FileItem the caller already passed the read check for
(the resolver's, or ``get_file``'s): a hit never shows content to someone who
could not read a FileItem with those bytes.

Payload: the parts without their per-document fields (document id, file
name, MIME type, size), as UTF-8 JSON compressed with zlib (RFC 1950).
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
from docbinder.domain.model import ContentKind, ContentPart, FileItem
from docbinder.ports.extractor import ContentExtractor, ExtractionCache

log = logging.getLogger(__name__)

PAYLOAD_FORMAT = 1
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
)


def encode_parts(parts: list[ContentPart]) -> bytes:
    """The cache payload of ``parts`` (which must carry no ``data``)."""
    rows = [{name: getattr(part, name) for name in _FIELDS} for part in parts]
    for row in rows:
        row["kind"] = str(row["kind"])
    return zlib.compress(json.dumps(rows, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def decode_parts(payload: bytes, document_id: str, item: FileItem) -> list[ContentPart]:
    """Parts from a payload, stamped with this document's id and the FileItem's name/type/size.

    Raises ``ValueError`` (or ``zlib.error``) for a payload that is not one.
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
    one, results whose parts carry no ``data`` are stored. Cache faults
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
                _close(chunks)
                return parts
        parts = self.inner.extract(document_id, item, chunks)
        if self._cacheable(item, parts):
            try:
                self.cache.put(item.sha256, version, encode_parts(parts))
            except DocbinderError as exc:
                log.warning("extraction cache not written for file %s: %s", item.id, exc)
        return parts

    def _cacheable(self, item: FileItem, parts: list[ContentPart]) -> bool:
        if not parts or any(part.data is not None for part in parts):
            return False
        decide = getattr(self.inner, "cacheable", None)
        return bool(decide(item, parts)) if callable(decide) else True
