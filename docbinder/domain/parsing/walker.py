"""The walk over one input value: :func:`coerce_document_references` and its collector.

The walker orchestrates the parse and owns its state: the work budgets
(:data:`~docbinder.domain.parsing.rules.MAX_VALUES`, ``MAX_REFERENCES``,
``MAX_REJECTED``, ``MAX_TEXT_LENGTH``, ``MAX_TOTAL_TEXT``), the depth, the cycle
guard and the de-duplicated results. For each value it asks the module that
knows that value's kind: :mod:`.raw` to read containers and strings safely and
to show a rejection, :mod:`.decoding` whether text holds a structure,
:mod:`.text` which references a string holds, :mod:`.shapes` what a dict's
fields mean, :mod:`.canonical` (through those) what a candidate becomes.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping

from docbinder.domain.parsing.canonical import Outcome
from docbinder.domain.parsing.decoding import decode_structure, embedded_structure, unfence
from docbinder.domain.parsing.raw import mapping_items, plain, sanitize, sequence_items, short_repr
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
    WRAPPER_KEYS,
    id_field_outcomes,
    named_file,
    normalise_key,
    reference_value,
)
from docbinder.domain.parsing.text import parse_text
from docbinder.domain.references import (
    DocumentItemReference,
    DocumentListReference,
    DocumentReference,
    DocumentReferenceList,
    FileReference,
    RejectedReference,
)

__all__ = ["coerce_document_references"]

_ContainerReader = Callable[[object, int], None]

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
        self.reject(short_repr(value), REASON_TOO_MANY_ITEMS)

    def reject(self, raw: str, reason: str, text: str | None = None) -> None:
        key = (raw, reason)
        if key in self._rejected_seen:
            return
        if len(self.rejected) >= MAX_REJECTED:
            self.omitted += 1
            return
        self._rejected_seen.add(key)
        self.rejected.append(RejectedReference(raw, reason, text))

    def add_reference(self, reference: DocumentReference) -> None:
        canonical = str(reference)
        if canonical in self._seen:
            return
        if parse_text(canonical) != [reference]:
            self.reject(short_repr(canonical), REASON_AMBIGUOUS)
            return
        if len(self.references) >= MAX_REFERENCES:
            self.stop(canonical)
            return
        self._seen.add(canonical)
        self.references.append(reference)

    def add_outcomes(self, outcomes: list[Outcome]) -> None:
        for outcome in outcomes:
            if not self.charge(outcome):
                return
            if isinstance(outcome, RejectedReference):
                self.reject(outcome.raw, outcome.reason, outcome.text)
            else:
                self.add_reference(outcome)

    # -- dispatch

    def visit(self, value: object, depth: int, *, optional: bool) -> None:
        """Read ``value``; ``optional`` says whether a null/empty value here means "nothing"."""
        if not self.charge(value):
            return
        if depth > MAX_DEPTH:
            self.reject(short_repr(value), REASON_TOO_DEEP)
            return
        try:
            self._dispatch(value, depth, optional)
        except Exception:
            self.reject(short_repr(value), REASON_UNREADABLE)

    def _dispatch(self, value: object, depth: int, optional: bool) -> None:
        if value is None:
            if not optional:
                self.reject("None", REASON_NULL)
        elif isinstance(value, bool):
            self.reject(short_repr(value), REASON_BOOLEAN_NOT_ALLOWED)
        elif isinstance(value, str):
            self._visit_text(plain(value), depth, optional)
        elif isinstance(value, (bytes, bytearray)):
            self._visit_bytes(value, depth, optional)
        elif isinstance(value, (DocumentItemReference, DocumentListReference, FileReference)):
            self.add_reference(value)
        elif isinstance(value, DocumentReferenceList):
            self._visit_reference_list(value, depth)
        elif isinstance(value, numbers.Number):
            self.reject(short_repr(value), REASON_NUMBER_NOT_ALLOWED)
        elif isinstance(value, Mapping):
            self._guarded(value, depth, self._visit_mapping)
        elif isinstance(value, (list, tuple)):
            self._guarded(value, depth, self._visit_sequence)
        else:
            self.reject(short_repr(value), REASON_UNSUPPORTED_TYPE)

    def _guarded(self, value: object, depth: int, read: _ContainerReader) -> None:
        key = id(value)
        if key in self._path:
            self.reject(short_repr(value), REASON_CYCLIC)
            return
        self._path.add(key)
        try:
            read(value, depth)
        finally:
            self._path.discard(key)

    def _visit_bytes(self, value: bytes | bytearray, depth: int, optional: bool) -> None:
        if len(value) > MAX_TEXT_LENGTH * 4:
            self.reject(short_repr(value), REASON_TOO_LONG)
            return
        try:
            text = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            self.reject(short_repr(value), REASON_UNSUPPORTED_TYPE)
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
                self.reject(sanitize(plain(rejected.raw)), plain(rejected.reason))

    def _visit_sequence(self, value: object, depth: int) -> None:
        items = sequence_items(value)
        for item in items:
            if self.stopped:
                return
            self.visit(item, depth + 1, optional=False)

    def _visit_mapping(self, value: object, depth: int) -> None:
        fields: dict[str, object] = {}
        wrappers: list[object] = []
        count = 0
        for key, item in mapping_items(value):
            count += 1
            if not self.charge(key):
                return
            if not isinstance(key, str):
                continue
            name = normalise_key(plain(key))
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
        reference = reference_value(fields)
        if reference is not None:
            self.visit(reference, depth + 1, optional=False)
            return
        raw = short_repr(value)
        outcomes = id_field_outcomes(fields, raw)
        if isinstance(outcomes, str):
            self.reject(raw, outcomes, named_file(fields))
        else:
            self.add_outcomes(outcomes)

    def _visit_text(self, text: str, depth: int, optional: bool) -> None:
        length = len(text)
        if length > MAX_TEXT_LENGTH or self.text_chars + length > MAX_TOTAL_TEXT:
            self.reject(short_repr(text), REASON_TOO_LONG)
            return
        self.text_chars += length
        stripped = text.strip()
        if not stripped:
            if not optional:
                self.reject(short_repr(text), REASON_EMPTY)
            return
        if stripped.lower() in NULL_WORDS:
            if not optional:
                self.reject(short_repr(text), REASON_NULL)
            return
        if stripped.startswith("```"):
            self.visit(unfence(stripped), depth + 1, optional=optional)
            return
        decoded = decode_structure(stripped)
        if decoded is not None:
            self.visit(decoded, depth + 1, optional=optional)
            return
        outcomes = parse_text(stripped)
        if outcomes:
            self.add_outcomes(outcomes)
            return
        embedded = embedded_structure(stripped)
        if embedded is not None:
            self.visit(embedded, depth + 1, optional=optional)
            return
        self.reject(short_repr(text), REASON_NOT_A_REFERENCE)
