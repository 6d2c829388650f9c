"""Recognising dict shapes: wrapper, reference, id and label keys, and ``type`` fields.

A dict a model sends stands for references in one of a few shapes: a wrapper
(``{"documents": [...]}``), a reference field (``{"ref": "docItem:a1"}``), or
an id or label field, perhaps with a ``type`` that says which reference the
``id`` is (``{"id": "f1", "type": "file"}``). The walker collects the dict's
fields under :func:`normalise_key` and asks this module what they mean:
:func:`reference_value` (a value to read as a reference in any shape), then
:func:`id_field_outcomes` (the references of the first usable id or label
field, or the reason the dict names none).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Final

from docbinder.domain.parsing.canonical import Kind, Outcome, make_id, make_label
from docbinder.domain.parsing.raw import plain
from docbinder.domain.parsing.rules import (
    MAX_TEXT_LENGTH,
    NULL_WORDS,
    REASON_BOOLEAN_NOT_ALLOWED,
    REASON_EMPTY_ID,
    REASON_NOT_A_REFERENCE,
    REASON_NULL_ID,
    REASON_NUMBER_NOT_ALLOWED,
    REASON_TOO_LONG,
    REASON_UNSUPPORTED_TYPE,
)
from docbinder.domain.parsing.text import parse_text, starts_with_prefix
from docbinder.domain.references import DocumentItemReference, RejectedReference

__all__ = [
    "DOCUMENT_ID_KEYS",
    "FILE_ID_KEYS",
    "LABEL_KEYS",
    "REFERENCE_KEYS",
    "WRAPPER_KEYS",
    "id_field_outcomes",
    "normalise_key",
    "reference_value",
]

_MAX_KEY_LENGTH: Final = 64
"""Longest dict key looked at, in characters; longer keys are no field of any shape."""

# --------------------------------------------------------------------------- dict keys

WRAPPER_KEYS: Final = frozenset(
    {"documents", "documentlist", "documentreferences", "references", "refs", "items", "docs"}
)
"""Normalised keys whose value holds the references (``{"documents": [...]}``,
``documentList``, ``references``, ``items``, ...). When a dict has any, only those
values are read (in the dict's order) and the dict's other keys are ignored."""

REFERENCE_KEYS: Final = (
    "ref",
    "reference",
    "documentref",
    "docref",
    "documentreference",
    "document",
    "doc",
)
"""Normalised keys whose value is a reference in any accepted shape (``{"ref": "docItem:a1"}``).
Looked at first; the first present non-null one wins."""

DOCUMENT_ID_KEYS: Final = ("docitem", "docitemid", "chatdocumentid", "documentid", "id")
"""Normalised keys holding a ChatDocument id (``{"id": "a1", "name": "x.pdf"}`` ->
``docItem:a1``). A ``type``/``kind`` key of ``file`` or ``docList`` changes what ``id`` means.
Looked at after :data:`REFERENCE_KEYS`."""

FILE_ID_KEYS: Final = ("fileid",)
"""Normalised keys holding a FileItem id (``{"fileId": "f1"}`` -> ``file:f1``). Looked at after
:data:`DOCUMENT_ID_KEYS`, so a serialised ChatDocument (``id`` and ``fileId``) names the document."""

LABEL_KEYS: Final = ("doclist", "documentslabel", "documentlabel", "label")
"""Normalised keys holding a ``documents_label`` (``{"label": "writeFile:a.md"}`` ->
``docList:writeFile:a.md``). Looked at last."""

NAME_KEYS: Final = ("filename", "name", "title")
"""Normalised keys holding a file name: no reference, but what the resolver's hint for a
dict without one looks up (``{"fileName": "q3.pdf"}``)."""

_ITEM_TYPES: Final = frozenset({"docitem", "document", "chatdocument", "item"})
_FILE_TYPES: Final = frozenset({"file", "fileitem"})
_LIST_TYPES: Final = frozenset({"doclist", "documentlist", "label", "list"})

_FIELD_GROUPS: Final = (
    (Kind.ITEM, DOCUMENT_ID_KEYS),
    (Kind.FILE, FILE_ID_KEYS),
    (Kind.LIST, LABEL_KEYS),
)
"""The id and label keys in the order they are looked at, with the reference each names."""


def normalise_key(key: str) -> str | None:
    """``key`` in lower case without ``_``, ``-`` and spaces; ``None`` if it is too long to be one."""
    if len(key) > _MAX_KEY_LENGTH:
        return None
    return key.lower().replace("_", "").replace("-", "").replace(" ", "")


def reference_value(fields: Mapping[str, object]) -> object | None:
    """The value of the first :data:`REFERENCE_KEYS` field present and not ``None``, else ``None``.

    ``fields`` maps normalised keys (:func:`normalise_key`) to their values.
    """
    for name in REFERENCE_KEYS:
        value = fields.get(name)
        if value is not None:
            return value
    return None


def id_field_outcomes(fields: Mapping[str, object], raw: str) -> list[Outcome] | str:
    """The outcomes of the first id or label field that holds a value, else why the dict has none.

    Fields are looked at in the order of :data:`DOCUMENT_ID_KEYS`,
    :data:`FILE_ID_KEYS`, :data:`LABEL_KEYS`; a ``type`` (or ``kind``) field of
    ``file`` or ``docList`` changes what ``id`` names. A field holding
    ``None``, ``""`` or a null word is skipped; when no field is usable the
    answer is the reason of the first skipped one (:data:`REASON_NULL_ID`,
    :data:`REASON_EMPTY_ID`), or :data:`REASON_NOT_A_REFERENCE` when the dict
    has none of these keys. ``raw`` is what a rejection shows of the dict.
    """
    type_kind = _kind_from_type(fields.get("type", fields.get("kind")))
    missing_reason: str | None = None
    for group_kind, names in _FIELD_GROUPS:
        for name in names:
            if name not in fields:
                continue
            kind = type_kind if (name == "id" and type_kind) else group_kind
            outcomes = _field_outcomes(kind, fields[name], raw)
            if isinstance(outcomes, str):
                missing_reason = missing_reason or outcomes
                continue
            if name == "id" and type_kind is None:
                # a plain "id" may be the FileItem id a tool result showed, as a bare id may
                outcomes = [
                    DocumentItemReference(o.document_id, bare=True)
                    if type(o) is DocumentItemReference
                    else o
                    for o in outcomes
                ]
            return outcomes
    return missing_reason if missing_reason is not None else REASON_NOT_A_REFERENCE


def named_file(fields: Mapping[str, object]) -> str | None:
    """The first :data:`NAME_KEYS` field holding a short printable text, stripped; else ``None``."""
    for name in NAME_KEYS:
        value = fields.get(name)
        if isinstance(value, str):
            text = plain(value).strip()
            if text and len(text) <= MAX_TEXT_LENGTH and text.isprintable():
                return text
    return None


def _kind_from_type(value: object) -> Kind | None:
    if not isinstance(value, str):
        return None
    name = normalise_key(plain(value))
    if name in _ITEM_TYPES:
        return Kind.ITEM
    if name in _FILE_TYPES:
        return Kind.FILE
    if name in _LIST_TYPES:
        return Kind.LIST
    return None


def _field_outcomes(kind: Kind, value: object, raw: str) -> list[Outcome] | str:
    """Outcomes of one id/label field, or the reason it is missing (null or empty)."""
    if value is None:
        return REASON_NULL_ID
    if isinstance(value, bool):
        return [RejectedReference(raw, REASON_BOOLEAN_NOT_ALLOWED)]
    if isinstance(value, numbers.Number):
        return [RejectedReference(raw, REASON_NUMBER_NOT_ALLOWED)]
    if not isinstance(value, str):
        return [RejectedReference(raw, REASON_UNSUPPORTED_TYPE)]
    text = plain(value)
    if len(text) > MAX_TEXT_LENGTH:
        return [RejectedReference(raw, REASON_TOO_LONG)]
    text = text.strip()
    if not text:
        return REASON_EMPTY_ID
    if text.lower() in NULL_WORDS:
        return REASON_NULL_ID
    if starts_with_prefix(text):
        return parse_text(text) or [RejectedReference(raw, REASON_NOT_A_REFERENCE)]
    if kind is Kind.LIST:
        return [make_label(text, raw, normalise=False)]
    return [make_id(kind, text, raw)]
