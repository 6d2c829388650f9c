"""Canonical references from candidate ids and labels, or the reason a candidate is none.

Whatever found a candidate (a token in text, a dict field), this module
decides what it becomes: a :class:`~docbinder.domain.references.DocumentItemReference`,
:class:`~docbinder.domain.references.FileReference` or
:class:`~docbinder.domain.references.DocumentListReference` in canonical form, or a
:class:`~docbinder.domain.references.RejectedReference` naming the reason. Together
these are an :data:`Outcome`, and :class:`Kind` says which reference a
candidate is meant to be.

* :func:`make_id`: the id rule (1 to :data:`~docbinder.domain.parsing.rules.MAX_ID_LENGTH`
  ASCII characters from ``A-Z a-z 0-9 . _ -``, starting with a letter or digit,
  a final dot read as punctuation, UUIDs in canonical form);
* :func:`make_label`: the label rule (printable, at most ``MAX_LABEL_LENGTH``
  characters, the ``documents_label`` bound of :mod:`docbinder.domain.model`);
* :func:`canonical_uuid`: one spelling per UUID (RFC 9562).
"""

from __future__ import annotations

import enum
import re
from typing import Final, Union

from docbinder.domain.model import MAX_LABEL_LENGTH
from docbinder.domain.parsing.rules import (
    MAX_ID_LENGTH,
    NULL_WORDS,
    REASON_EMPTY_ID,
    REASON_INVALID_ID,
    REASON_INVALID_LABEL,
    REASON_NULL_ID,
    REASON_TOO_LONG,
)
from docbinder.domain.references import (
    DocumentItemReference,
    DocumentListReference,
    FileReference,
    RejectedReference,
)

__all__ = ["Kind", "Outcome", "canonical_uuid", "make_id", "make_label"]

Outcome = Union[DocumentItemReference, DocumentListReference, FileReference, RejectedReference]  # noqa: UP007
"""What one candidate becomes: a canonical reference, or the rejection that says why not."""


class Kind(enum.Enum):
    """Which reference a candidate is meant to be: ``docItem``, ``docList`` or ``file``."""

    ITEM = "item"
    LIST = "list"
    FILE = "file"


_ID_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*", re.ASCII)
_UUID_RE: Final = re.compile(
    r"[0-9A-Fa-f]{8}-?[0-9A-Fa-f]{4}-?[0-9A-Fa-f]{4}-?[0-9A-Fa-f]{4}-?[0-9A-Fa-f]{12}"
)
_LABEL_TRAILING: Final = ".,;:!?* \t"
"""What a label read from text drops at its end: sentence punctuation, emphasis, blanks."""


def canonical_uuid(text: str) -> str | None:
    """``text`` as a canonical lowercase hyphenated UUID (RFC 9562), or None if it is none.

    Accepts any letter case and the 32-digit form without hyphens, so a model
    that upper-cases or compacts an id still names the same document.
    """
    match = _UUID_RE.fullmatch(text)
    if match is None:
        return None
    digits = text.replace("-", "").lower()
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def make_id(kind: Kind, text: str, raw: str) -> Outcome:
    """A docItem/file reference (``kind``) for the id ``text``, or the reason it is not a usable id.

    ``raw`` is what a rejection shows. ``kind`` is :attr:`Kind.ITEM` or
    :attr:`Kind.FILE`; labels go through :func:`make_label` (:attr:`Kind.LIST`
    here gives a docList reference of the checked id).
    """
    ident = text.rstrip(".")
    if not ident:
        return RejectedReference(raw, REASON_EMPTY_ID)
    if ident.lower() in NULL_WORDS:
        return RejectedReference(raw, REASON_NULL_ID)
    if len(ident) > MAX_ID_LENGTH:
        return RejectedReference(raw, REASON_TOO_LONG)
    if not _ID_RE.fullmatch(ident):
        return RejectedReference(raw, REASON_INVALID_ID, ident)
    ident = canonical_uuid(ident) or ident
    if kind is Kind.FILE:
        return FileReference(ident)
    if kind is Kind.LIST:
        return DocumentListReference(ident)
    return DocumentItemReference(ident)


def make_label(text: str, raw: str, *, normalise: bool) -> Outcome:
    """A docList reference for ``text``, or the reason it is not a usable label.

    ``normalise`` drops trailing sentence punctuation (text input); labels from dict
    fields are taken as they are.
    """
    label = text.strip()
    if normalise:
        label = label.rstrip(_LABEL_TRAILING)
    if not label:
        return RejectedReference(raw, REASON_EMPTY_ID)
    if label.lower() in NULL_WORDS:
        return RejectedReference(raw, REASON_NULL_ID)
    if len(label) > MAX_LABEL_LENGTH:
        return RejectedReference(raw, REASON_TOO_LONG)
    if not label.isprintable():
        return RejectedReference(raw, REASON_INVALID_LABEL)
    return DocumentListReference(label)
