"""The one cattrs converter: snake_case in Python, camelCase on the wire.

``to_wire(obj)`` gives JSON-ready dicts with camelCase keys (``fileId``,
``documentsLabel``, ``roundNumber``), datetimes as ISO 8601 strings in UTC,
enums as their values and ``bytes`` as base64. ``from_wire(data, cls)`` is the
inverse. Rows of the SQL adapter use their own snake_case converter
(:mod:`docbinder.adapters.sql.rows`) built on the same entities.
"""

from __future__ import annotations

import ast
import base64
import json
import re
from datetime import datetime
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from docbinder.domain.model import (
    ChatDocument,
    ChatMessage,
    ChatWorkflow,
    ContentPart,
    FileItem,
    PageCoverage,
    Principal,
    Provenance,
    Scope,
)
from docbinder.domain.references import (
    DocumentItemReference,
    DocumentListReference,
    DocumentReferenceList,
    FileReference,
    RejectedReference,
)

T = TypeVar("T")

_CAMEL_RE = re.compile(r"_([a-z0-9])")


def camel(name: str) -> str:
    """``documents_label`` -> ``documentsLabel``."""
    return _CAMEL_RE.sub(lambda m: m.group(1).upper(), name)


def _datetime_hooks(conv: cattrs.Converter) -> None:
    conv.register_unstructure_hook(datetime, lambda d: d.isoformat())
    conv.register_structure_hook(
        datetime, lambda v, _: v if isinstance(v, datetime) else datetime.fromisoformat(v)
    )


WIRE_TYPES: tuple[type, ...] = (
    Scope,
    Provenance,
    Principal,
    FileItem,
    ChatDocument,
    ChatMessage,
    ChatWorkflow,
    PageCoverage,
    ContentPart,
    DocumentItemReference,
    DocumentListReference,
    FileReference,
    RejectedReference,
)


def _make_wire_converter() -> cattrs.Converter:
    conv = cattrs.Converter()
    _datetime_hooks(conv)
    conv.register_unstructure_hook(bytes, lambda b: base64.b64encode(b).decode("ascii"))
    conv.register_structure_hook(
        bytes, lambda v, _: base64.b64decode(v) if isinstance(v, str) else bytes(v)
    )

    def register(cls: type) -> None:
        renames = {a.name: override(rename=camel(a.name)) for a in attrs.fields(cls)}
        conv.register_unstructure_hook(cls, make_dict_unstructure_fn(cls, conv, **renames))  # type: ignore[arg-type]
        conv.register_structure_hook(cls, make_dict_structure_fn(cls, conv, **renames))  # type: ignore[arg-type]

    for cls in WIRE_TYPES:
        register(cls)
    for ref_cls in (DocumentItemReference, DocumentListReference, FileReference):
        conv.register_unstructure_hook(ref_cls, str)
    conv.register_unstructure_hook(
        DocumentReferenceList,
        lambda rl: {
            "references": [str(r) for r in rl.references],
            "rejected": [conv.unstructure(r) for r in rl.rejected],
        },
    )
    _register_results(conv, register)
    return conv


def _register_results(conv: cattrs.Converter, register: Any) -> None:
    """Result types of the use cases, for ``--json`` and host APIs (unstructure only)."""
    from docbinder.application.binder import ToolFileResult
    from docbinder.application.use_cases.get_content import ContentResult, DocumentContent
    from docbinder.application.use_cases.resolve_document_list import (
        DocumentSuggestion,
        Resolution,
        ResolvedDocument,
        UnresolvedReference,
    )

    for cls in (ResolvedDocument, UnresolvedReference, DocumentSuggestion, DocumentContent):
        register(cls)
    conv.register_unstructure_hook(
        Resolution,
        lambda r: {
            "documents": [conv.unstructure(d) for d in r.documents],
            "unresolved": [conv.unstructure(u) for u in r.unresolved],
            "suggestions": [conv.unstructure(s) for s in r.suggestions],
        },
    )
    conv.register_unstructure_hook(
        ContentResult,
        lambda c: {
            "documents": [conv.unstructure(d) for d in c.documents],
            "unresolved": [conv.unstructure(u) for u in c.unresolved],
            "suggestions": [conv.unstructure(s) for s in c.resolution.suggestions],
        },
    )
    conv.register_unstructure_hook(
        ToolFileResult,
        lambda t: {
            "fileId": t.item.id,
            "documentId": t.document_id,
            "reference": t.reference,
            "text": t.text,
            "duplicate": t.duplicate,
            "label": t.label,
            "notAttached": None
            if t.not_attached is None
            else {"cause": t.not_attached.cause.value, "message": t.not_attached.message},
            "file": conv.unstructure(t.item),
        },
    )


wire_converter = _make_wire_converter()
"""camelCase JSON converter for the wire, the CLI's ``--json`` and the tool results."""


def to_wire(obj: Any) -> Any:
    """Unstructure ``obj`` (an entity, list or dict of them) to camelCase JSON-ready data."""
    return wire_converter.unstructure(obj)


def from_wire(data: Any, cls: type[T]) -> T:
    """Structure camelCase JSON data into ``cls``; raises ``cattrs`` errors on bad data."""
    return wire_converter.structure(data, cls)


def reference_value(reference: str) -> Any:
    """A rejected input's ``raw`` form (a bounded Python repr) as the JSON value it stands for.

    ``"'bogus'"`` -> ``"bogus"``, ``"{'id': ''}"`` -> ``{"id": ""}``, ``"None"`` -> ``null``;
    anything that is no complete literal (a cut ``...`` form, a canonical reference)
    stays the text it is.
    """
    if not reference or reference[0] not in "'\"[{(-0123456789NTFb":
        return reference
    try:
        value = ast.literal_eval(reference)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return reference
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return reference
    return value


def rejected_input_as_json(entry: dict[str, Any]) -> dict[str, Any]:
    """A wire ``UnresolvedReference`` whose ``reason`` is ``rejected_input`` with its
    ``reference`` as the JSON value the caller sent (:func:`reference_value`); others as they are."""
    if entry.get("reason") == "rejected_input" and isinstance(entry.get("reference"), str):
        return {**entry, "reference": reference_value(entry["reference"])}
    return entry
