"""Tolerant documentList parsing (SPEC C6). Placeholder until the parser lands."""

from __future__ import annotations

from docbinder.domain.references import DocumentReferenceList


def coerce_document_references(value: object) -> DocumentReferenceList:
    """Parse any JSON-like value into a :class:`DocumentReferenceList`; never raises."""
    raise NotImplementedError
