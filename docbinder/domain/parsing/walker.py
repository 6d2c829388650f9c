"""The walk over one input value: :func:`coerce_document_references` and its collector."""

from __future__ import annotations

import numbers
from collections.abc import Mapping

from docbinder.domain.parsing.literals import _NOTHING, _decode_structure, _embedded_structure
from docbinder.domain.parsing.raw import (
    _mapping_items,
    _plain,
    _sanitize,
    _sequence_items,
    _short_repr,
)
from docbinder.domain.parsing.rules import (
    MAX_DEPTH,
    MAX_REFERENCES,
    MAX_REJECTED,
    MAX_TEXT_LENGTH,
    MAX_TOTAL_TEXT,
    MAX_VALUES,
    NULL_WORDS,
    REASON_AMBIGUOUS,
    REASON_BOOLEAN_NOT_ALLOWED,
    REASON_CYCLIC,
    REASON_EMPTY,
    REASON_NOT_A_REFERENCE,
    REASON_NULL,
    REASON_NUMBER_NOT_ALLOWED,
    REASON_TOO_DEEP,
    REASON_TOO_LONG,
    REASON_TOO_MANY_ITEMS,
    REASON_UNREADABLE,
    REASON_UNSUPPORTED_TYPE,
)
from docbinder.domain.parsing.shapes import (
    DOCUMENT_ID_KEYS,
    FILE_ID_KEYS,
    LABEL_KEYS,
    REFERENCE_KEYS,
    WRAPPER_KEYS,
    _field_outcomes,
    _kind_from_type,
    _normalise_key,
)
from docbinder.domain.parsing.text import (
    _KIND_FILE,
    _KIND_ITEM,
    _KIND_LIST,
    _ContainerReader,
    _Outcome,
    _parse_text,
    _unfence,
)
from docbinder.domain.references import (
    DocumentItemReference,
    DocumentListReference,
    DocumentReference,
    DocumentReferenceList,
    FileReference,
    RejectedReference,
)

# --------------------------------------------------------------------------- public


def coerce_document_references(value: object) -> DocumentReferenceList:
    """Read whatever a model sent as ``documentList`` into a :class:`DocumentReferenceList`.

    ``value`` is any JSON-like value (``None``, bool, number, str, bytes, list, tuple,
    dict, nested freely) or a reference / :class:`DocumentReferenceList`; the accepted
    shapes are listed in the docstring of :mod:`docbinder.domain.parsing` (SPEC C6).

    Returns the references in input order, duplicates (by canonical string) dropped,
    at most :data:`MAX_REFERENCES`; and the rejected inputs in order, duplicates (same
    ``raw`` and ``reason``) dropped, each with ``raw`` a printable repr of at most
    :data:`MAX_RAW_LENGTH` characters and ``reason`` one of :data:`REASONS`.
    ``None``, ``""``, ``"null"``, ``[]`` and ``{}`` at the top level give an empty result
    with nothing rejected. Numbers and booleans are never turned into ids; an empty or
    null id (``docItem:``, ``docItem:null``, ``{"id": None}``) is rejected, so no lookup is
    ever made with one. Free text around references is ignored; a string without any
    reference is rejected with :data:`REASON_NOT_A_REFERENCE`.

    Never raises an :class:`Exception`, whatever the input (cyclic or very deep
    structures, huge strings, control characters, lone surrogates, objects whose
    ``__str__``/``__eq__``/``__class__`` raise): work is bounded by :data:`MAX_DEPTH`,
    :data:`MAX_VALUES`, :data:`MAX_TEXT_LENGTH` and :data:`MAX_TOTAL_TEXT`, and what lies
    beyond them is rejected with a reason.
    """
    collector = _Collector()
    try:
        collector.visit(value, 0, optional=True)
    except Exception:
        collector.reject("<input>", REASON_UNREADABLE)
    return collector.result()


# --------------------------------------------------------------------------- walker


class _Collector:
    """Mutable state of one parse: results, duplicate sets, budgets, the current path."""

    __slots__ = (
        "_path",
        "_rejected_seen",
        "_seen",
        "omitted",
        "references",
        "rejected",
        "stopped",
        "text_chars",
        "values",
    )

    def __init__(self) -> None:
        self.references: list[DocumentReference] = []
        self.rejected: list[RejectedReference] = []
        self._seen: set[str] = set()
        self._rejected_seen: set[tuple[str, str]] = set()
        self._path: set[int] = set()
        self.values = 0
        self.text_chars = 0
        self.omitted = 0
        self.stopped = False

    def result(self) -> DocumentReferenceList:
        rejected = list(self.rejected)
        if self.omitted:
            rejected.append(
                RejectedReference(f"<{self.omitted} more rejected inputs>", REASON_TOO_MANY_ITEMS)
            )
        return DocumentReferenceList(tuple(self.references), tuple(rejected))

    # -- budget and output

    def charge(self, value: object) -> bool:
        """Count one examined value; False (and stop) once :data:`MAX_VALUES` is used up."""
        if self.stopped:
            return False
        self.values += 1
        if self.values > MAX_VALUES:
            self.stop(value)
            return False
        return True

    def stop(self, value: object) -> None:
        self.stopped = True
        self.reject(_short_repr(value), REASON_TOO_MANY_ITEMS)

    def reject(self, raw: str, reason: str) -> None:
        key = (raw, reason)
        if key in self._rejected_seen:
            return
        if len(self.rejected) >= MAX_REJECTED:
            self.omitted += 1
            return
        self._rejected_seen.add(key)
        self.rejected.append(RejectedReference(raw, reason))

    def add_reference(self, reference: DocumentReference) -> None:
        canonical = str(reference)
        if canonical in self._seen:
            return
        if _parse_text(canonical) != [reference]:
            self.reject(_short_repr(canonical), REASON_AMBIGUOUS)
            return
        if len(self.references) >= MAX_REFERENCES:
            self.stop(canonical)
            return
        self._seen.add(canonical)
        self.references.append(reference)

    def add_outcomes(self, outcomes: list[_Outcome]) -> None:
        for outcome in outcomes:
            if not self.charge(outcome):
                return
            if isinstance(outcome, RejectedReference):
                self.reject(outcome.raw, outcome.reason)
            else:
                self.add_reference(outcome)

    # -- dispatch

    def visit(self, value: object, depth: int, *, optional: bool) -> None:
        """Read ``value``; ``optional`` says whether a null/empty value here means "nothing"."""
        if not self.charge(value):
            return
        if depth > MAX_DEPTH:
            self.reject(_short_repr(value), REASON_TOO_DEEP)
            return
        try:
            self._dispatch(value, depth, optional)
        except Exception:
            self.reject(_short_repr(value), REASON_UNREADABLE)

    def _dispatch(self, value: object, depth: int, optional: bool) -> None:
        if value is None:
            if not optional:
                self.reject("None", REASON_NULL)
        elif isinstance(value, bool):
            self.reject(_short_repr(value), REASON_BOOLEAN_NOT_ALLOWED)
        elif isinstance(value, str):
            self._visit_text(_plain(value), depth, optional)
        elif isinstance(value, (bytes, bytearray)):
            self._visit_bytes(value, depth, optional)
        elif isinstance(value, (DocumentItemReference, DocumentListReference, FileReference)):
            self.add_reference(value)
        elif isinstance(value, DocumentReferenceList):
            self._visit_reference_list(value, depth)
        elif isinstance(value, numbers.Number):
            self.reject(_short_repr(value), REASON_NUMBER_NOT_ALLOWED)
        elif isinstance(value, Mapping):
            self._guarded(value, depth, self._visit_mapping)
        elif isinstance(value, (list, tuple)):
            self._guarded(value, depth, self._visit_sequence)
        else:
            self.reject(_short_repr(value), REASON_UNSUPPORTED_TYPE)

    def _guarded(self, value: object, depth: int, read: _ContainerReader) -> None:
        key = id(value)
        if key in self._path:
            self.reject(_short_repr(value), REASON_CYCLIC)
            return
        self._path.add(key)
        try:
            read(value, depth)
        finally:
            self._path.discard(key)

    def _visit_bytes(self, value: bytes | bytearray, depth: int, optional: bool) -> None:
        if len(value) > MAX_TEXT_LENGTH * 4:
            self.reject(_short_repr(value), REASON_TOO_LONG)
            return
        try:
            text = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            self.reject(_short_repr(value), REASON_UNSUPPORTED_TYPE)
            return
        self._visit_text(text, depth, optional)

    def _visit_reference_list(self, value: DocumentReferenceList, depth: int) -> None:
        for reference in tuple(value.references):
            if self.stopped:
                return
            self.visit(reference, depth + 1, optional=False)
        for rejected in tuple(value.rejected):
            if (
                isinstance(rejected, RejectedReference)
                and isinstance(rejected.raw, str)
                and isinstance(rejected.reason, str)
            ):
                self.reject(_sanitize(_plain(rejected.raw)), _plain(rejected.reason))

    def _visit_sequence(self, value: object, depth: int) -> None:
        items = _sequence_items(value)
        for item in items:
            if self.stopped:
                return
            self.visit(item, depth + 1, optional=False)

    def _visit_mapping(self, value: object, depth: int) -> None:
        fields: dict[str, object] = {}
        wrappers: list[object] = []
        count = 0
        for key, item in _mapping_items(value):
            count += 1
            if not self.charge(key):
                return
            if not isinstance(key, str):
                continue
            name = _normalise_key(_plain(key))
            if name is None:
                continue
            fields.setdefault(name, item)
            if name in WRAPPER_KEYS:
                wrappers.append(item)
        if count == 0:
            return
        if wrappers:
            for wrapped in wrappers:
                if self.stopped:
                    return
                self.visit(wrapped, depth + 1, optional=True)
            return
        self._visit_fields(value, fields, depth)

    def _visit_fields(self, value: object, fields: dict[str, object], depth: int) -> None:
        for name in REFERENCE_KEYS:
            if fields.get(name) is not None:
                self.visit(fields[name], depth + 1, optional=False)
                return
        type_kind = _kind_from_type(fields.get("type", fields.get("kind")))
        missing_reason: str | None = None
        raw = _short_repr(value)
        groups = (
            (_KIND_ITEM, DOCUMENT_ID_KEYS),
            (_KIND_FILE, FILE_ID_KEYS),
            (_KIND_LIST, LABEL_KEYS),
        )
        for group_kind, names in groups:
            for name in names:
                if name not in fields:
                    continue
                kind = type_kind if (name == "id" and type_kind) else group_kind
                outcomes = _field_outcomes(kind, fields[name], raw)
                if isinstance(outcomes, str):
                    missing_reason = missing_reason or outcomes
                    continue
                self.add_outcomes(outcomes)
                return
        if missing_reason is not None:
            self.reject(raw, missing_reason)
        else:
            self.reject(raw, REASON_NOT_A_REFERENCE)

    def _visit_text(self, text: str, depth: int, optional: bool) -> None:
        length = len(text)
        if length > MAX_TEXT_LENGTH or self.text_chars + length > MAX_TOTAL_TEXT:
            self.reject(_short_repr(text), REASON_TOO_LONG)
            return
        self.text_chars += length
        stripped = text.strip()
        if not stripped:
            if not optional:
                self.reject(_short_repr(text), REASON_EMPTY)
            return
        if stripped.lower() in NULL_WORDS:
            if not optional:
                self.reject(_short_repr(text), REASON_NULL)
            return
        if stripped.startswith("```"):
            self.visit(_unfence(stripped), depth + 1, optional=optional)
            return
        decoded = _decode_structure(stripped)
        if decoded is not _NOTHING:
            self.visit(decoded, depth + 1, optional=optional)
            return
        outcomes = _parse_text(stripped)
        if outcomes:
            self.add_outcomes(outcomes)
            return
        embedded = _embedded_structure(stripped)
        if embedded is not _NOTHING:
            self.visit(embedded, depth + 1, optional=optional)
            return
        self.reject(_short_repr(text), REASON_NOT_A_REFERENCE)
