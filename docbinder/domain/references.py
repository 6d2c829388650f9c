"""References a model sends back to name documents (SPEC C6/C7).

``str(reference)`` is the canonical form: ``docItem:<id>``, ``docList:<label>``
or ``file:<id>``. :func:`docbinder.domain.parsing.coerce_document_references`
turns whatever a model sends into a :class:`DocumentReferenceList`.
"""

from __future__ import annotations

from typing import Union

import attrs


@attrs.frozen
class DocumentItemReference:
    """``docItem:<document_id>``: one ChatDocument of the active workflow.

    ``bare`` is True when the model sent the id alone (a bare UUID, no ``docItem:``
    prefix): such an id may also be a FileItem id, so the resolver falls back to the
    workflow's documents pointing at that FileItem. ``bare`` takes no part in equality,
    hashing or the canonical string.
    """

    document_id: str
    bare: bool = attrs.field(default=False, eq=False, repr=False, kw_only=True)

    def __str__(self) -> str:
        return f"docItem:{self.document_id}"


@attrs.frozen
class DocumentListReference:
    """``docList:<label>``: the documents of the messages with that ``documents_label``."""

    label: str

    def __str__(self) -> str:
        return f"docList:{self.label}"


@attrs.frozen
class FileReference:
    """``file:<file_id>``: the active workflow's documents that point at that FileItem."""

    file_id: str

    def __str__(self) -> str:
        return f"file:{self.file_id}"


DocumentReference = Union[DocumentItemReference, DocumentListReference, FileReference]  # noqa: UP007


@attrs.frozen
class RejectedReference:
    """An input the parser could not use: ``raw`` is a short printable form, ``reason`` says why.

    ``text`` is the id the input named when it named one that is not a usable id
    (``{"id": "Q3 report.pdf"}``: ``Q3 report.pdf``), else ``None``.
    """

    raw: str
    reason: str
    text: str | None = None


@attrs.frozen
class DocumentReferenceList:
    """Ordered, de-duplicated references plus the inputs that were rejected."""

    references: tuple[DocumentReference, ...] = ()
    rejected: tuple[RejectedReference, ...] = ()

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.references)

    def __len__(self) -> int:
        return len(self.references)

    def __bool__(self) -> bool:
        return bool(self.references) or bool(self.rejected)

    def canonical(self) -> list[str]:
        """The references in canonical string form, in order."""
        return [str(ref) for ref in self.references]
