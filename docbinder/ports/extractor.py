"""The content-extraction port (SPEC C8)."""

from __future__ import annotations

from collections.abc import Iterator
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
