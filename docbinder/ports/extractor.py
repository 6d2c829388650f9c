"""The content-extraction port (SPEC C8)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Protocol

import attrs

from docbinder.domain.model import ContentPart, FileItem


class ContentExtractor(Protocol):
    """Turns a document's bytes into content parts for a consuming tool."""

    def extract(
        self, document_id: str, item: FileItem, chunks: Iterator[bytes]
    ) -> list[ContentPart]:
        """Return the parts of one document.

        ``document_id`` is what every part names as its ``document_id`` (the
        ChatDocument's id, or the FileItem's id for a file read outside any
        workflow); ``chunks`` streams the FileItem's bytes. Text formats give text parts,
        images an image part, anything else one binary part; an extractor never
        returns an empty list for a readable document.
        """
        ...


@attrs.frozen
class RecognizedText:
    """What optical character recognition read from one page image.

    ``text`` as the engine gave it (lines separated by ``\\n``, may be empty);
    ``confidence`` the engine's mean word confidence from 0.0 to 1.0 (``None``
    when it reports none); ``complete`` is false when the timeout stopped the
    engine before the end of the page.
    """

    text: str
    confidence: float | None = None
    complete: bool = True


class RecognitionSession(Protocol):
    """An engine loaded with its language data, for the pages of one document."""

    def read(
        self, pixels: bytes, width: int, height: int, *, dpi: int, timeout: float
    ) -> RecognizedText:
        """Recognize the text of one 8-bit grayscale image.

        ``pixels`` holds ``width * height`` bytes, row by row from the top, 0
        black to 255 white; ``dpi`` is its resolution in dots per inch;
        ``timeout`` the seconds the engine may spend (it then stops and
        returns what it has, ``complete=False``). Raises only for a broken
        engine (the converter reports it as a failed page).
        """
        ...


class TextRecognizer(Protocol):
    """Optical character recognition (the OCR port): text from page images (SPEC C8).

    Implementations must be picklable (they are handed to the converter
    process) and cheap to ask :meth:`problem` and :attr:`engine` in the
    calling process; the engine itself is loaded only by :meth:`session`, in
    the converter process.
    """

    @property
    def engine(self) -> str:
        """The engine, its version and languages, e.g. ``"tesseract (tesserocr 2.13.0) eng"``.

        Part of the extraction cache key: a new engine or language misses.
        """
        ...

    def problem(self) -> str | None:
        """Why OCR cannot run here (library or language data missing), or ``None``.

        The sentence names what to install, e.g. the ``ocr`` extra.
        """
        ...

    def session(self) -> AbstractContextManager[RecognitionSession]:
        """Load the engine for the pages of one document; released when the block ends."""
        ...


SNIFF_BYTES = 8192
"""How many leading bytes of a file a :class:`MimeDetector` is given."""


class MimeDetector(Protocol):
    """Decides a file's MIME type from its leading bytes and its name."""

    def detect(self, head: bytes, file_name: str, declared: str | None) -> str:
        """Return a MIME type like ``text/plain``.

        ``head`` holds at most :data:`SNIFF_BYTES` leading bytes of the file;
        ``declared`` is what the producer claimed, if anything. The bytes win
        over the name and the claim where they are conclusive.
        """
        ...


class ExtractionCache(Protocol):
    """Stores encoded content parts by content hash and extractor version (feature B10).

    ``sha256`` is a FileItem's content hash (64 lowercase hex digits),
    ``version`` the extractor's version string; ``payload`` is opaque bytes.
    The store is bounded (entries and payload bytes) and evicts the least
    recently used entries to stay within it. A cache is shared by every
    principal: callers consult it only after the read check of a FileItem
    with those bytes. Errors: :class:`~docbinder.domain.errors.StorageError`.
    """

    def get(self, sha256: str, version: str) -> bytes | None:
        """The payload stored for ``(sha256, version)``, or ``None``."""
        ...

    def put(self, sha256: str, version: str, payload: bytes) -> None:
        """Store ``payload`` (replacing an entry of the same key), then evict down to the bounds."""
        ...

    def hashes(self) -> set[str]:
        """The content hashes that have at least one entry."""
        ...

    def remove(self, sha256s: Iterable[str]) -> int:
        """Remove every entry of the given hashes; return how many entries went."""
        ...


@attrs.frozen
class Extraction:
    """One document's parts plus what an extraction cache may do with them.

    ``cache`` is ``"complete"`` (the converter finished: store under the
    extractor's version), ``"partial"`` (the converter ran out of its time
    budget of ``time_budget`` seconds: store, marked, so the same bytes do not
    cost that time again; an extractor with a larger budget converts again),
    ``"fallback"`` (the converter failed the same way it would fail again and a
    simpler reading stands in: store, marked as a fallback) or ``"none"``
    (do not store: a crash, no free converter process, a cancelled caller, a
    budget the read call cut short, or a result not worth keeping). ``reason``
    says why an entry is partial or a fallback.
    """

    parts: list[ContentPart]
    cache: str = "complete"
    reason: str | None = None
    time_budget: float | None = None


CACHE_VERDICTS = ("complete", "partial", "fallback", "none")
"""The values of :attr:`Extraction.cache`."""
