"""The extraction cache in front of a content extractor (feature B10).

:class:`CachingExtractor` wraps a :class:`~docbinder.ports.extractor.ContentExtractor`:
parts are looked up by the FileItem's content hash (``sha256``) and the
extractor's ``version`` string, so identical bytes are converted once for
every workflow and user, and a new extractor or converter version misses. It
is called only with a FileItem the caller already passed the read check for
(the resolver's, or ``get_file``'s): a hit never shows content to someone who
could not read a FileItem with those bytes.

Entries are kept per *scope*: the key's version string ends in the scope of
the read call in progress (:func:`~docbinder.domain.reading.current_read_call`,
mandate, user and feature instance, :func:`~docbinder.domain.reading.scope_key`), so a
principal's first read of bytes another principal already read is a miss that
converts, and costs what any miss costs: the cache is no existence oracle
across scopes, neither by content nor by timing (ADR 0008, ADR 0072).

Payload: ``{"state", "reason", "budget", "parts"}`` as UTF-8 JSON compressed
with zlib (RFC 1950); ``parts`` are the parts without their per-document
fields (document id, file name, MIME type, size). ``state`` is the inner
extractor's verdict (:class:`~docbinder.ports.extractor.Extraction`):
``complete``; ``partial`` (its time budget ran out: ``budget`` seconds, and
an extractor with a larger budget converts again instead of using it); or
``fallback`` (a simpler reading stood in for a converter that failed). OCR
output is cached the same way; an image part (or, in a partial entry, the
binary part of a document that was not converted), whose ``data`` is the
file's own bytes, is stored as ``"data": "file"`` and gets them again from
the file on a hit (the payload never holds file bytes).
Removing entries no FileItem needs is the use case
:class:`~docbinder.application.use_cases.prune_extraction_cache.PruneExtractionCache`.
"""

from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Iterator
from typing import Any

import attrs

from docbinder.domain.errors import DocbinderError
from docbinder.domain.model import ContentKind, ContentPart, FileItem, PageCoverage
from docbinder.domain.reading import current_read_call
from docbinder.ports.extractor import ContentExtractor, Extraction, ExtractionCache

log = logging.getLogger(__name__)

PAYLOAD_FORMAT = 3
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


@attrs.frozen
class CacheEntry:
    """A decoded payload: its ``state`` (``complete``/``partial``/``fallback``), ``reason``,
    ``budget`` (seconds a partial conversion had, else ``None``) and the rows of its parts."""

    state: str
    reason: str | None
    budget: float | None
    rows: list[dict[str, Any]]


def encode_parts(
    parts: list[ContentPart],
    item: FileItem | None = None,
    *,
    state: str = "complete",
    reason: str | None = None,
    budget: float | None = None,
) -> bytes:
    """The cache payload of ``parts`` with their ``state``, ``reason`` and ``budget`` (seconds).

    A part may carry ``data`` only when it is the whole file of ``item``
    (``len(data) == item.size``): it is stored as :data:`WHOLE_FILE`.
    Raises ``ValueError`` for other data or an unknown state.
    """
    if state not in {"complete", "partial", "fallback"}:
        raise ValueError(f"not a state of a cache entry: {state!r}")
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
    entry = {"state": state, "reason": reason, "budget": budget, "parts": rows}
    return zlib.compress(json.dumps(entry, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def decode_entry(payload: bytes) -> CacheEntry:
    """The :class:`CacheEntry` of a payload; ``ValueError`` (or ``zlib.error``) if it is none."""
    entry: Any = json.loads(zlib.decompress(payload).decode("utf-8", "surrogatepass"))
    if not isinstance(entry, dict):
        raise ValueError("cache payload is not an entry")
    rows = entry.get("parts")
    state = entry.get("state")
    budget = entry.get("budget")
    if not isinstance(rows, list) or not rows or state not in {"complete", "partial", "fallback"}:
        raise ValueError("cache payload is not an entry with a state and parts")
    if budget is not None and not isinstance(budget, int | float):
        raise ValueError("cache payload has a budget that is not a number")
    reason = entry.get("reason")
    return CacheEntry(state, reason if isinstance(reason, str) else None, budget, rows)


def needs_file(payload_parts: list[ContentPart]) -> bool:
    """Whether decoded parts wait for the file's bytes (see :func:`decode_parts`)."""
    return any(part.data == b"" for part in payload_parts)


def decode_parts(
    payload: bytes, document_id: str, item: FileItem, data: bytes | None = None
) -> list[ContentPart]:
    """Parts from a payload, stamped with this document's id and the FileItem's name/type/size.

    A :data:`WHOLE_FILE` part gets ``data`` (the file's bytes; ``b""`` as a
    placeholder when ``None``, see :func:`needs_file`). Raises ``ValueError``
    (or ``zlib.error``) for a payload that is not one.
    """
    return _parts(decode_entry(payload).rows, document_id, item, data)


def _parts(
    rows: list[dict[str, Any]], document_id: str, item: FileItem, data: bytes | None
) -> list[ContentPart]:
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
    call goes straight through; so do the items its optional ``may_cache(item)``
    refuses (types it never lets a cache keep). What is stored is the inner extractor's call:
    its ``extract_with_verdict`` (an :class:`~docbinder.ports.extractor.Extraction`:
    complete, partial, fallback or nothing), else its ``cacheable(item, parts)``
    method, else results whose parts carry no ``data`` (other than an image
    part's whole file). A ``partial`` entry made with a smaller time budget than
    the inner extractor's ``time_budget`` is converted again. Entries are per
    scope of the read call in progress (see the module documentation). Cache faults
    (:class:`~docbinder.domain.errors.StorageError`) are logged and the
    document is extracted as if there were no cache.
    """

    def __init__(self, inner: ContentExtractor, cache: ExtractionCache) -> None:
        self.inner = inner
        self.cache = cache

    @property
    def version(self) -> str | None:
        """The inner extractor's version plus the payload format, or ``None`` (no scope yet)."""
        version = getattr(self.inner, "version", None)
        return f"{version};payload={PAYLOAD_FORMAT}" if isinstance(version, str) else None

    def key(self) -> str | None:
        """The version string the cache is asked with: :attr:`version` plus the read call's scope."""
        version = self.version
        if version is None:
            return None
        call = current_read_call()
        scope = call.scope if call is not None and call.scope is not None else "none"
        return f"{version};scope={scope}"

    def extract(
        self, document_id: str, item: FileItem, chunks: Iterator[bytes]
    ) -> list[ContentPart]:
        """Cached parts for ``item.sha256`` (the stream is then closed unread), else extract.

        An inner extractor with a ``may_cache(item)`` method that answers ``False``
        is called directly: the cache is neither asked nor written.
        """
        may_cache = getattr(self.inner, "may_cache", None)
        if callable(may_cache) and not may_cache(item):
            return self.inner.extract(document_id, item, chunks)
        version = self.key()
        if version is None:
            return self.inner.extract(document_id, item, chunks)
        try:
            payload = self.cache.get(item.sha256, version)
        except DocbinderError as exc:
            log.warning("extraction cache not read for file %s: %s", item.id, exc)
            payload = None
        if payload is not None:
            hit = self._from_entry(payload, document_id, item, chunks)
            if isinstance(hit, list):
                return hit
            chunks = hit
        extraction = self._extract(document_id, item, chunks)
        parts = extraction.parts
        if self._cacheable(item, extraction):
            try:
                payload = encode_parts(
                    parts,
                    item,
                    state=extraction.cache,
                    reason=extraction.reason,
                    budget=extraction.time_budget,
                )
                self.cache.put(item.sha256, version, payload)
            except DocbinderError as exc:
                log.warning("extraction cache not written for file %s: %s", item.id, exc)
        return parts

    def _from_entry(
        self, payload: bytes, document_id: str, item: FileItem, chunks: Iterator[bytes]
    ) -> list[ContentPart] | Iterator[bytes]:
        """The parts of a usable entry, else the chunks to extract from (maybe re-read)."""
        try:
            entry = decode_entry(payload)
            parts = _parts(entry.rows, document_id, item, None)
        except (ValueError, KeyError, TypeError, zlib.error) as exc:
            log.warning("extraction cache entry of file %s unreadable: %s", item.id, exc)
            return chunks
        budget = getattr(self.inner, "time_budget", None)
        if (
            entry.state == "partial"
            and isinstance(budget, int | float)
            and (entry.budget is None or budget > entry.budget)
        ):
            return chunks  # made with less time than this extractor has: convert again
        if not needs_file(parts):
            _close(chunks)
            return parts
        try:
            data = b"".join(chunks)  # an image (or unconverted) part: bytes come from the file
        finally:
            _close(chunks)
        if len(data) == item.size:
            return _parts(entry.rows, document_id, item, data)
        return iter((data,))  # not the bytes the entry was made for: extract them

    def _extract(self, document_id: str, item: FileItem, chunks: Iterator[bytes]) -> Extraction:
        with_verdict = getattr(self.inner, "extract_with_verdict", None)
        if callable(with_verdict):
            extraction = with_verdict(document_id, item, chunks)
            if isinstance(extraction, Extraction):
                return extraction
        parts = self.inner.extract(document_id, item, chunks)
        decide = getattr(self.inner, "cacheable", None)
        keep = bool(decide(item, parts)) if callable(decide) else True
        return Extraction(parts, "complete" if keep else "none")

    @staticmethod
    def _cacheable(item: FileItem, extraction: Extraction) -> bool:
        if extraction.cache not in {"complete", "partial", "fallback"} or not extraction.parts:
            return False
        binary_allowed = extraction.cache == "partial"
        for part in extraction.parts:
            if part.data is None:
                continue
            if len(part.data) != item.size:
                return False
            if part.kind is ContentKind.BINARY and not binary_allowed:
                return False
            if part.kind is ContentKind.TEXT:
                return False
        return True
