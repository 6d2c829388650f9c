"""Recognising dict shapes: wrapper, reference, id and label keys, and ``type`` fields."""

from __future__ import annotations

import numbers
from typing import Final

from docbinder.domain.parsing.raw import _plain
from docbinder.domain.parsing.rules import (
    _MAX_KEY_LENGTH,
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
from docbinder.domain.parsing.text import (
    _KIND_FILE,
    _KIND_ITEM,
    _KIND_LIST,
    _STARTS_WITH_PREFIX_RE,
    _make_id,
    _make_label,
    _Outcome,
    _parse_text,
)
from docbinder.domain.references import RejectedReference

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

_ITEM_TYPES: Final = frozenset({"docitem", "document", "chatdocument", "item"})
_FILE_TYPES: Final = frozenset({"file", "fileitem"})
_LIST_TYPES: Final = frozenset({"doclist", "documentlist", "label", "list"})


def _normalise_key(key: str) -> str | None:
    if len(key) > _MAX_KEY_LENGTH:
        return None
    return key.lower().replace("_", "").replace("-", "").replace(" ", "")


def _kind_from_type(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    name = _normalise_key(_plain(value))
    if name in _ITEM_TYPES:
        return _KIND_ITEM
    if name in _FILE_TYPES:
        return _KIND_FILE
    if name in _LIST_TYPES:
        return _KIND_LIST
    return None


def _field_outcomes(kind: str, value: object, raw: str) -> list[_Outcome] | str:
    """Outcomes of one id/label field, or the reason it is missing (null or empty)."""
    if value is None:
        return REASON_NULL_ID
    if isinstance(value, bool):
        return [RejectedReference(raw, REASON_BOOLEAN_NOT_ALLOWED)]
    if isinstance(value, numbers.Number):
        return [RejectedReference(raw, REASON_NUMBER_NOT_ALLOWED)]
    if not isinstance(value, str):
        return [RejectedReference(raw, REASON_UNSUPPORTED_TYPE)]
    text = _plain(value)
    if len(text) > MAX_TEXT_LENGTH:
        return [RejectedReference(raw, REASON_TOO_LONG)]
    text = text.strip()
    if not text:
        return REASON_EMPTY_ID
    if text.lower() in NULL_WORDS:
        return REASON_NULL_ID
    if _STARTS_WITH_PREFIX_RE.match(text):
        return _parse_text(text) or [RejectedReference(raw, REASON_NOT_A_REFERENCE)]
    if kind == _KIND_LIST:
        return [_make_label(text, raw, normalise=False)]
    return [_make_id(kind, text, raw)]
