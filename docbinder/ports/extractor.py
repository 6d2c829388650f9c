"""The content-extraction port (SPEC C8)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

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
