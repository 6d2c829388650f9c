"""Entities <-> table rows, through one cattrs converter.

:func:`to_row` unstructures an entity with :data:`row_converter` and flattens
its ``scope`` into the ``mandate_id`` / ``feature_instance_id`` columns;
:func:`from_row` nests them again and structures the mapping back with the
same converter. Row-only columns (``dedup_key``, ``label_hash``,
``last_sequence_nr``, ``position``) are added by the repositories and ignored
when structuring. Nested collections are not part of a row: ``FileItem.tags``
becomes a JSON array (text), ``FileItem.provenance`` a JSON object (text,
``NULL`` when nothing was declared), ``ChatMessage.documents`` and
``ChatWorkflow.messages`` live in their own tables.

A save -> load -> equal round trip per entity and backend is part of the
metadata contract suite.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from docbinder.domain.model import (
    NO_PROVENANCE,
    ChatMessage,
    ChatWorkflow,
    FileItem,
    Provenance,
    Scope,
)

T = TypeVar("T")

SCOPE_COLUMNS: tuple[str, ...] = tuple(a.name for a in attrs.fields(Scope))
"""The columns a flattened :class:`Scope` occupies: ``mandate_id``, ``feature_instance_id``."""


# ensure_ascii keeps the stored text plain ASCII, so any str (even one with a lone
# surrogate) survives every driver and collation unchanged. Made once: json.dumps
# would build the same encoder on every call.
_TAGS_JSON = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))


def _tags_to_json(tags: tuple[str, ...]) -> str:
    if not tags:
        return "[]"  # what the encoder gives for no tags, the usual case
    return _TAGS_JSON.encode(list(tags))


def _tags_from_json(value: Any, _type: Any) -> tuple[str, ...]:
    data = json.loads(value) if isinstance(value, str) else value
    if not isinstance(data, list) or not all(isinstance(tag, str) for tag in data):
        raise ValueError("tags must be a JSON array of strings")
    return tuple(data)


_PROVENANCE_FIELDS = tuple(a.name for a in attrs.fields(Provenance))


def _provenance_to_json(provenance: Provenance) -> str | None:
    if provenance is NO_PROVENANCE or provenance == NO_PROVENANCE:
        return None  # the usual case of a plain store: the column stays NULL
    data: dict[str, Any] = {
        name: getattr(provenance, name)
        for name in _PROVENANCE_FIELDS
        if getattr(provenance, name) not in (None, ())
    }
    if "parents" in data:
        data["parents"] = list(data["parents"])
    return _TAGS_JSON.encode(data)


def _provenance_from_json(value: Any, _type: Any) -> Provenance:
    if value is None:
        return NO_PROVENANCE
    data = json.loads(value) if isinstance(value, str) else value
    if not isinstance(data, dict) or not set(data) <= set(_PROVENANCE_FIELDS):
        raise ValueError("provenance must be a JSON object of provenance fields")
    return Provenance(**data)


def _datetime_passthrough(value: Any, _type: Any) -> datetime:
    if not isinstance(value, datetime):
        raise ValueError(f"expected a datetime, got {type(value).__name__}")
    return value


def _make_row_converter() -> cattrs.Converter:
    conv = cattrs.Converter()
    # Datetimes stay datetime objects; the UtcDateTime column type owns the
    # conversion to and from each backend's storage.
    conv.register_unstructure_hook(datetime, lambda value: value)
    conv.register_structure_hook(datetime, _datetime_passthrough)

    tags = override(unstruct_hook=_tags_to_json, struct_hook=_tags_from_json)
    provenance = override(unstruct_hook=_provenance_to_json, struct_hook=_provenance_from_json)
    conv.register_unstructure_hook(
        FileItem, make_dict_unstructure_fn(FileItem, conv, tags=tags, provenance=provenance)
    )
    conv.register_structure_hook(
        FileItem, make_dict_structure_fn(FileItem, conv, tags=tags, provenance=provenance)
    )

    # Documents and messages are rows of their own tables, never columns.
    conv.register_unstructure_hook(
        ChatMessage, make_dict_unstructure_fn(ChatMessage, conv, documents=override(omit=True))
    )
    conv.register_structure_hook(
        ChatMessage, make_dict_structure_fn(ChatMessage, conv, documents=override(omit=True))
    )
    conv.register_unstructure_hook(
        ChatWorkflow, make_dict_unstructure_fn(ChatWorkflow, conv, messages=override(omit=True))
    )
    conv.register_structure_hook(
        ChatWorkflow, make_dict_structure_fn(ChatWorkflow, conv, messages=override(omit=True))
    )
    return conv


row_converter = _make_row_converter()
"""The cattrs converter for SQL rows: snake_case keys equal to column names."""

_UNSTRUCTURE: dict[type, Any] = {}
_STRUCTURE: dict[type, tuple[Any, bool]] = {}


def _unstructure_hook(cls: type) -> Any:
    hook = _UNSTRUCTURE.get(cls)
    if hook is None:
        hook = _UNSTRUCTURE[cls] = row_converter.get_unstructure_hook(cls)
    return hook


def _structure_hook(cls: type) -> tuple[Any, bool]:
    found = _STRUCTURE.get(cls)
    if found is None:
        scoped = "scope" in attrs.fields_dict(cls)
        found = _STRUCTURE[cls] = (row_converter.get_structure_hook(cls), scoped)
    return found


def to_row(entity: Any) -> dict[str, Any]:
    """The column values of ``entity`` (a FileItem, ChatWorkflow, ChatMessage or ChatDocument).

    Keys are column names; a ``scope`` is flattened to :data:`SCOPE_COLUMNS`.
    """
    row: dict[str, Any] = _unstructure_hook(type(entity))(entity)
    scope = row.pop("scope", None)
    if scope is not None:
        row.update(scope)
    return row


def from_row(row: Mapping[Any, Any], cls: type[T]) -> T:
    """Structure a row mapping (``Row._mapping`` or a dict) into an entity of type ``cls``.

    Columns that are not attributes of ``cls`` are ignored. Raises whatever
    the entity's validators or cattrs raise for bad data (``InvalidInput``,
    ``ValueError``, ``KeyError``, ...); the repositories report that as a
    :class:`~docbinder.domain.errors.StorageError`.
    """
    hook, scoped = _structure_hook(cls)
    data = dict(row)
    if scoped:
        data["scope"] = {name: data.pop(name) for name in SCOPE_COLUMNS}
    result: T = hook(data, cls)
    return result
