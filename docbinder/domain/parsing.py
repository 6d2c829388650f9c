"""Tolerant documentList parsing (SPEC C6).

A model names documents in whatever shape it likes. :func:`coerce_document_references`
turns any JSON-like value into a :class:`DocumentReferenceList`: the references it
could read, in order and without duplicates, plus every input it could not use with
a machine-stable reason. It never raises for bad input.

Accepted shapes (nested freely, up to :data:`MAX_DEPTH` levels):

* strings: ``docItem:<id>``, ``docList:<label>``, ``file:<id>`` and bare UUIDs
  (read as ``docItem:<uuid>``). The prefix may have any letter case and may be
  written ``doc_item`` / ``doc-item`` (``doc_list`` / ``doc-list``); ``docItem`` and
  ``docList`` may have spaces or tabs around the colon (``file:`` inside free text must
  be followed directly by the id, so prose like "this file: is" is no reference; a
  string holding only ``file: abc`` is read). One string may hold several
  references separated by commas, semicolons, whitespace or newlines, or sit inside
  free text (``"Please summarise docItem:a1 and docItem:b2."``). Surrounding quotes,
  backticks, ``**``, angle brackets, parentheses, brackets, braces and trailing
  sentence punctuation (``. , ; : ! ?``) are dropped;
* JSON text inside a string (also encoded several times), with or without a
  markdown code fence (```` ```json ... ``` ```` or plain ```` ``` ````), Python
  literal text (single quotes, ``None``) and JSON embedded in free text;
* lists and tuples of any of these;
* dicts, see :data:`WRAPPER_KEYS`, :data:`REFERENCE_KEYS`, :data:`DOCUMENT_ID_KEYS`,
  :data:`FILE_ID_KEYS` and :data:`LABEL_KEYS` (keys are matched ignoring case,
  ``_``, ``-`` and spaces);
* reference objects and :class:`DocumentReferenceList` values (kept as they are).

Ids (``docItem`` and ``file``) are 1 to :data:`MAX_ID_LENGTH` ASCII characters from
``A-Z a-z 0-9 . _ -``, start with a letter or digit, never end with ``.`` (a final
dot is read as sentence punctuation) and keep their letter case. Inside text an id
ends at the first other character; when that character is a letter or digit outside
ASCII or one of ``/ @ # % + = ~ $ ^ &`` the whole token is rejected instead of cut. Labels
(``docList``) are printable text of at most ``MAX_LABEL_LENGTH`` characters
(the ``documents_label`` bound of :mod:`docbinder.domain.model`); inside free text
a label ends at whitespace or at one of ``, ; ' " ` < > ( ) [ ] { } | *``, while a
string that holds one ``docList:`` reference and nothing else keeps its spaces
(``docList:writeFile:Q3 report.pdf``). Colons and dots inside a label are kept
(``docList:writeFile:report.md``).

Every reference returned is canonical: ``str(reference)`` parses back to exactly
that reference. A candidate that would not (e.g. a label from a dict that ends with
``.``) is rejected with :data:`REASON_AMBIGUOUS`.
"""

from __future__ import annotations

import json
import numbers
import re
from collections.abc import Callable, Iterator, Mapping
from itertools import islice
from typing import Final, Union

import attrs

from docbinder.domain.model import MAX_LABEL_LENGTH
from docbinder.domain.references import (
    DocumentItemReference,
    DocumentListReference,
    DocumentReference,
    DocumentReferenceList,
    FileReference,
    RejectedReference,
)

__all__ = [
    "DOCUMENT_ID_KEYS",
    "FILE_ID_KEYS",
    "LABEL_KEYS",
    "MAX_DEPTH",
    "MAX_ID_LENGTH",
    "MAX_RAW_LENGTH",
    "MAX_REFERENCES",
    "MAX_REJECTED",
    "MAX_TEXT_LENGTH",
    "MAX_TOTAL_TEXT",
    "MAX_VALUES",
    "NULL_WORDS",
    "REASONS",
    "REASON_AMBIGUOUS",
    "REASON_BOOLEAN_NOT_ALLOWED",
    "REASON_CYCLIC",
    "REASON_EMPTY",
    "REASON_EMPTY_ID",
    "REASON_INVALID_ID",
    "REASON_INVALID_LABEL",
    "REASON_NOT_A_REFERENCE",
    "REASON_NULL",
    "REASON_NULL_ID",
    "REASON_NUMBER_NOT_ALLOWED",
    "REASON_TOO_DEEP",
    "REASON_TOO_LONG",
    "REASON_TOO_MANY_ITEMS",
    "REASON_UNREADABLE",
    "REASON_UNSUPPORTED_TYPE",
    "REFERENCE_KEYS",
    "WRAPPER_KEYS",
    "coerce_document_references",
]

# --------------------------------------------------------------------------- reasons

REASON_NULL: Final = "null"
"""A null value (``None``, ``"null"``, ``"None"``, ...) stands where a reference was expected,
e.g. as a list element. A null at the top level or as a wrapper's value means "no documents"
and is not rejected."""

REASON_EMPTY: Final = "empty"
"""An empty or whitespace-only string stands where a reference was expected (a list element)."""

REASON_EMPTY_ID: Final = "empty_id"
"""A prefix without an id or label (``docItem:``), or an id field holding ``""``."""

REASON_NULL_ID: Final = "null_id"
"""The id or label is a null word (see :data:`NULL_WORDS`), or an id field holds ``None``."""

REASON_INVALID_ID: Final = "invalid_id"
"""The id has characters outside ``A-Z a-z 0-9 . _ -`` or does not start with a letter/digit."""

REASON_INVALID_LABEL: Final = "invalid_label"
"""The label holds non-printable characters (control characters, tabs, lone surrogates, ...)."""

REASON_NOT_A_REFERENCE: Final = "not_a_reference"
"""A string or dict holds no reference at all."""

REASON_NUMBER_NOT_ALLOWED: Final = "number_not_allowed"
"""A number; numbers are never turned into ids."""

REASON_BOOLEAN_NOT_ALLOWED: Final = "boolean_not_allowed"
"""A boolean; booleans are never turned into ids."""

REASON_UNSUPPORTED_TYPE: Final = "unsupported_type"
"""A value of a type the parser does not read (sets, arbitrary objects, undecodable bytes)."""

REASON_TOO_DEEP: Final = "too_deep"
"""The value is nested deeper than :data:`MAX_DEPTH` (containers and decoding layers)."""

REASON_TOO_MANY_ITEMS: Final = "too_many_items"
"""The work budget (:data:`MAX_VALUES`, :data:`MAX_REFERENCES`) or the number of kept
rejections (:data:`MAX_REJECTED`) ran out; the rest of the input was not read."""

REASON_TOO_LONG: Final = "too_long"
"""A string longer than :data:`MAX_TEXT_LENGTH` (or past :data:`MAX_TOTAL_TEXT` in all),
an id longer than :data:`MAX_ID_LENGTH` or a label longer than ``MAX_LABEL_LENGTH``."""

REASON_CYCLIC: Final = "cyclic"
"""A list or dict that contains itself."""

REASON_AMBIGUOUS: Final = "ambiguous"
"""The candidate's canonical form would not read back as the same reference."""

REASON_UNREADABLE: Final = "unreadable"
"""Inspecting the value raised (e.g. an object with a broken ``__class__``)."""

REASONS: Final = frozenset(
    {
        REASON_NULL,
        REASON_EMPTY,
        REASON_EMPTY_ID,
        REASON_NULL_ID,
        REASON_INVALID_ID,
        REASON_INVALID_LABEL,
        REASON_NOT_A_REFERENCE,
        REASON_NUMBER_NOT_ALLOWED,
        REASON_BOOLEAN_NOT_ALLOWED,
        REASON_UNSUPPORTED_TYPE,
        REASON_TOO_DEEP,
        REASON_TOO_MANY_ITEMS,
        REASON_TOO_LONG,
        REASON_CYCLIC,
        REASON_AMBIGUOUS,
        REASON_UNREADABLE,
    }
)
"""Every reason a :class:`RejectedReference` made by this module can carry."""

# --------------------------------------------------------------------------- limits

MAX_DEPTH: Final = 32
"""Deepest nesting read: each list, dict and decoding layer (JSON in a string, a code
fence) adds one level. Deeper values are rejected with :data:`REASON_TOO_DEEP`."""

MAX_VALUES: Final = 10_000
"""Values examined in one call (containers, dict keys, scalars, references found in
text). Past it, reading stops with :data:`REASON_TOO_MANY_ITEMS`."""

MAX_REFERENCES: Final = 1_000
"""Distinct references returned at most. Past it, reading stops with
:data:`REASON_TOO_MANY_ITEMS`."""

MAX_REJECTED: Final = 100
"""Distinct rejections kept; further ones are summed up in one last entry with
:data:`REASON_TOO_MANY_ITEMS`."""

MAX_TEXT_LENGTH: Final = 100_000
"""Longest string examined, in characters; longer ones are rejected unread with
:data:`REASON_TOO_LONG`."""

MAX_TOTAL_TEXT: Final = 1_000_000
"""Characters examined in one call across all strings and decoding layers; strings past
it are rejected unread with :data:`REASON_TOO_LONG`."""

MAX_ID_LENGTH: Final = 128
"""Longest id, in characters (the bound the domain model puts on ids)."""

MAX_RAW_LENGTH: Final = 80
"""Longest ``RejectedReference.raw``, in characters."""

_MAX_LITERAL_LENGTH: Final = 20_000
_MAX_KEY_LENGTH: Final = 64
_MAX_WRAPPER_ROUNDS: Final = 8

NULL_WORDS: Final = frozenset({"null", "none", "undefined", "nan", "nil"})
"""Words (compared in lower case) that mean "no value" where an id, label or reference
stands."""

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

# --------------------------------------------------------------------------- patterns

_KIND_ITEM: Final = "item"
_KIND_LIST: Final = "list"
_KIND_FILE: Final = "file"

_ITEM_PREFIX: Final = r"(?ai:doc[_-]?item)"
_LIST_PREFIX: Final = r"(?ai:doc[_-]?list)"
_FILE_PREFIX: Final = r"(?ai:file)"
_FILE_LINE_PREFIX: Final = r"(?ai:file[ _-]?id)"
_NOT_AFTER: Final = r"(?<![A-Za-z0-9_./-])"

_WHOLE_RE: Final = re.compile(
    rf"({_ITEM_PREFIX}|{_LIST_PREFIX}|{_FILE_PREFIX})[ \t]*:[ \t]*(.*)", re.ASCII
)
_OTHER_PREFIX_RE: Final = re.compile(
    rf"{_NOT_AFTER}(?:(?:{_ITEM_PREFIX}|{_LIST_PREFIX})[ \t]*:|{_FILE_PREFIX}:[A-Za-z0-9])"
)
_STARTS_WITH_PREFIX_RE: Final = re.compile(
    rf"[\s'\"`<(\[{{*]*(?:{_ITEM_PREFIX}|{_LIST_PREFIX}|{_FILE_PREFIX})[ \t]*:"
)
_SCAN_RE: Final = re.compile(
    _NOT_AFTER
    + r"(?:"
    + rf"(?P<item>{_ITEM_PREFIX})[ \t]{{0,16}}:[ \t]{{0,16}}"
    + r"(?:(?P<item_open>[{<(\['\"`])(?P<item_wrapped>[A-Za-z0-9._-]+)(?P<item_close>[}>)\]'\"`])"
    + r"|(?P<item_id>[A-Za-z0-9._-]*))"
    + rf"|(?P<list>{_LIST_PREFIX})[ \t]{{0,16}}:[ \t]{{0,16}}"
    + r"(?P<label>[^\s,;'\"`<>()\[\]{}|*]*)"
    + rf"|(?P<file>{_FILE_PREFIX}):(?P<file_id>[A-Za-z0-9][A-Za-z0-9._-]*)"
    + rf"|(?P<fileline>{_FILE_LINE_PREFIX})[ \t]{{0,16}}:[ \t]{{0,16}}"
    + r"(?P<fileline_id>[A-Za-z0-9][A-Za-z0-9._-]*)"
    + r"|(?P<uuid>[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})"
    + r"(?![A-Za-z0-9_-]|\.[A-Za-z0-9])"
    + r")"
)
_ID_TOKEN_RE: Final = re.compile(r"[A-Za-z0-9._-]+", re.ASCII)
_ID_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*", re.ASCII)
_ID_CONTINUES: Final = frozenset("/@#%+=~$^&")

_PAIRS: Final = {
    "'": "'",
    '"': '"',
    "`": "`",
    "*": "*",
    "<": ">",
    "(": ")",
    "[": "]",
    "{": "}",
    "\u201c": "\u201d",
    "\u2018": "\u2019",
    "\u00ab": "\u00bb",
}
_TRAILING_PUNCTUATION: Final = ".,;!?"
_LABEL_TRAILING: Final = ".,;:!?* \t"

_LITERAL_TOKEN_RE: Final = re.compile(
    r"\s*(?:"
    r"(?P<punct>[\[\](){}:,])"
    r"|'(?P<sq>[^'\\]*(?:\\.[^'\\]*)*)'"
    r"|\"(?P<dq>[^\"\\]*(?:\\.[^\"\\]*)*)\""
    r"|(?P<num>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
    r"|(?P<word>[A-Za-z_]+)"
    r")",
    re.DOTALL,
)
_ESCAPE_RE: Final = re.compile(r"\\(u[0-9A-Fa-f]{4}|.)", re.DOTALL)
_ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "0": "\0"}

_Outcome = Union[DocumentItemReference, DocumentListReference, FileReference, RejectedReference]  # noqa: UP007
_ContainerReader = Callable[[object, int], None]


# --------------------------------------------------------------------------- public


def coerce_document_references(value: object) -> DocumentReferenceList:
    """Read whatever a model sent as ``documentList`` into a :class:`DocumentReferenceList`.

    ``value`` is any JSON-like value (``None``, bool, number, str, bytes, list, tuple,
    dict, nested freely) or a reference / :class:`DocumentReferenceList`; the accepted
    shapes are listed in this module's docstring (SPEC C6).

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


# --------------------------------------------------------------------------- containers


def _sequence_items(value: object) -> Iterator[object]:
    """Yield the items of a list or tuple without calling overridden methods of subclasses."""
    if isinstance(value, list):
        length = list.__len__(value)
        for index in range(length):
            try:
                yield list.__getitem__(value, index)
            except IndexError:  # the list shrank while being read
                return
    elif isinstance(value, tuple):
        for index in range(tuple.__len__(value)):
            yield tuple.__getitem__(value, index)


def _mapping_items(value: object) -> Iterator[tuple[object, object]]:
    """Yield at most ``MAX_VALUES + 1`` key/value pairs, bypassing overrides on dict subclasses."""
    if isinstance(value, dict):
        yield from islice(dict.items(value), MAX_VALUES + 1)
    elif isinstance(value, Mapping):
        yield from islice(value.items(), MAX_VALUES + 1)


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


# --------------------------------------------------------------------------- text


def _parse_text(text: str) -> list[_Outcome]:
    """References and rejected tokens found in one string (no JSON decoding); pure."""
    cleaned = _strip_wrappers(text)
    whole = _whole_reference(cleaned)
    if whole is not None:
        return [whole]
    return _scan(text)


def _strip_wrappers(text: str) -> str:
    """Drop surrounding whitespace, matching quote/bracket pairs and trailing punctuation."""
    current = text.strip()
    for _ in range(_MAX_WRAPPER_ROUNDS):
        stripped = current.rstrip(_TRAILING_PUNCTUATION).rstrip()
        if len(stripped) >= 2 and _PAIRS.get(stripped[0]) == stripped[-1]:
            stripped = stripped[1:-1].strip()
        if stripped == current:
            break
        current = stripped
    return current


def _whole_reference(cleaned: str) -> _Outcome | None:
    """The single reference ``cleaned`` consists of, or None when it is not exactly one."""
    match = _WHOLE_RE.fullmatch(cleaned)
    if match is None:
        return None
    prefix, rest = match.group(1), match.group(2)
    if _OTHER_PREFIX_RE.search(rest):
        return None
    kind = _prefix_kind(prefix)
    raw = _short_repr(cleaned)
    if kind == _KIND_LIST:
        return _make_label(rest, raw, normalise=True)
    if _ID_TOKEN_RE.fullmatch(rest):
        return _make_id(kind, rest, raw)
    return None


def _scan(text: str) -> list[_Outcome]:
    """Every reference-shaped token in free text, left to right.

    When the text is a list (entries separated by commas, semicolons or line
    breaks), an entry that is a single word and no reference (``bogus``,
    ``data.csv``) is rejected with :data:`REASON_NOT_A_REFERENCE`, so nothing the
    model listed disappears silently; entries of several words are prose
    (``"this file: is nice, read docItem:q1"``) and ignored like the words
    around a reference, and so are single words that end a sentence with ``!`` or
    ``?`` and the courtesy words of :data:`_COURTESY_WORDS` (``"docItem:a1; thanks!"``).

    A ``file id: <id>`` line (also ``fileId:``, ``file_id:``) is the FileItem line of the
    unified tool-result block (SPEC C5): when it follows a ``docItem`` reference it
    describes that document and is dropped, so the block names exactly its own
    document; alone (no workflow was bound) it reads as ``file:<id>``. In such a text
    the block's first line (``<Verb> '<name>' (<size> bytes)``) is skipped: the quoted
    file name is no reference even when it looks like one.
    Returns nothing when the text holds no reference at all.
    """
    if _BLOCK_LINE_RE.search(text):
        # The header line quotes a file name, which may look like a reference.
        text = _BLOCK_HEADER_RE.sub("", text)
    found = _scan_references(text)
    if not found:
        return []
    entries = _ENTRY_SPLIT_RE.split(text)
    if len(entries) < 2:
        return _pair_file_lines(found)
    outcomes: list[_Outcome | _FileLine] = []
    for entry in entries:
        word = _strip_wrappers(entry).strip("[](){}<>`'\"*-+ \t")
        if not word:
            continue
        entry_found = _scan_references(entry)
        if entry_found:
            outcomes.extend(entry_found)
        elif len(word.split()) == 1 and not _is_prose_word(entry):
            outcomes.append(RejectedReference(_short_repr(entry.strip()), REASON_NOT_A_REFERENCE))
    return _pair_file_lines(outcomes)


_BLOCK_LINE_RE: Final = re.compile(r"(?mi)^[ \t]*(?:documentList ref|file id)[ \t]*:")
_BLOCK_HEADER_RE: Final = re.compile(
    r"(?m)^[ \t]*[A-Z][A-Za-z]{0,31} '[^\n]*' \(\d+ bytes\)[ \t]*$"
)
"""``<Verb> '<name>' (<size> bytes)``: the first line of a tool-result block (SPEC C5)."""

_COURTESY_WORDS: Final = frozenset(
    {"thanks", "thank", "thx", "ty", "please", "pls", "cheers", "regards", "ok", "okay"}
)
"""Single words a model writes around a list of references that are never meant as one."""


def _is_prose_word(entry: str) -> bool:
    """True for a listed single word that is prose: ends with ``!``/``?`` or is a courtesy word."""
    stripped = entry.strip().strip("'\"`*)]}>")
    if stripped.endswith(("!", "?")):
        return True
    return stripped.rstrip(".").lower() in _COURTESY_WORDS


@attrs.frozen
class _FileLine:
    """A ``file id: <id>`` line found in text, before it is paired with its docItem."""

    file_id: str
    raw: str


def _pair_file_lines(found: list[_Outcome | _FileLine]) -> list[_Outcome]:
    """Drop each ``file id:`` line that follows a docItem reference; read the others as ``file:``."""
    outcomes: list[_Outcome] = []
    after_item = False
    for outcome in found:
        if isinstance(outcome, _FileLine):
            if not after_item:
                outcomes.append(_make_id(_KIND_FILE, outcome.file_id, outcome.raw))
            after_item = False
            continue
        if isinstance(outcome, DocumentItemReference):
            after_item = True
        outcomes.append(outcome)
    return outcomes


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


def _scan_references(text: str) -> list[_Outcome | _FileLine]:
    outcomes: list[_Outcome | _FileLine] = []
    for match in _SCAN_RE.finditer(text):
        if match.group("uuid") is not None:
            uuid = canonical_uuid(match.group("uuid")) or ""
            outcomes.append(DocumentItemReference(uuid, bare=True))
        elif match.group("list") is not None:
            outcomes.append(
                _make_label(match.group("label"), _short_repr(match.group(0)), normalise=True)
            )
        elif match.group("fileline") is not None:
            end = match.end("fileline_id")
            if end < len(text) and (text[end].isalnum() or text[end] in _ID_CONTINUES):
                continue  # "file id: x/y" is prose about something else
            outcomes.append(_FileLine(match.group("fileline_id"), _short_repr(match.group(0))))
        elif match.group("item_wrapped") is not None:
            raw = _short_repr(match.group(0))
            if _PAIRS.get(match.group("item_open")) != match.group("item_close"):
                outcomes.append(RejectedReference(raw, REASON_INVALID_ID))
            else:
                outcomes.append(_make_id(_KIND_ITEM, match.group("item_wrapped"), raw))
        else:
            group = "item_id" if match.group("item") is not None else "file_id"
            kind = _KIND_ITEM if group == "item_id" else _KIND_FILE
            end = match.end(group)
            if end < len(text) and (text[end].isalnum() or text[end] in _ID_CONTINUES):
                token = text[match.start() : end + 1 + MAX_RAW_LENGTH].split(maxsplit=1)[0]
                outcomes.append(RejectedReference(_short_repr(token), REASON_INVALID_ID))
            else:
                outcomes.append(_make_id(kind, match.group(group), _short_repr(match.group(0))))
    return outcomes


_ENTRY_SPLIT_RE: Final = re.compile(r"[,;\n]")
_UUID_RE: Final = re.compile(
    r"[0-9A-Fa-f]{8}-?[0-9A-Fa-f]{4}-?[0-9A-Fa-f]{4}-?[0-9A-Fa-f]{4}-?[0-9A-Fa-f]{12}"
)


def _prefix_kind(prefix: str) -> str:
    lowered = prefix.lower()
    if lowered.endswith("item"):
        return _KIND_ITEM
    if lowered.endswith("list"):
        return _KIND_LIST
    return _KIND_FILE


def _make_id(kind: str, text: str, raw: str) -> _Outcome:
    """A docItem/file reference for ``text``, or the reason it is not a usable id."""
    ident = text.rstrip(".")
    if not ident:
        return RejectedReference(raw, REASON_EMPTY_ID)
    if ident.lower() in NULL_WORDS:
        return RejectedReference(raw, REASON_NULL_ID)
    if len(ident) > MAX_ID_LENGTH:
        return RejectedReference(raw, REASON_TOO_LONG)
    if not _ID_RE.fullmatch(ident):
        return RejectedReference(raw, REASON_INVALID_ID)
    ident = canonical_uuid(ident) or ident
    if kind == _KIND_FILE:
        return FileReference(ident)
    if kind == _KIND_LIST:
        return DocumentListReference(ident)
    return DocumentItemReference(ident)


def _make_label(text: str, raw: str, *, normalise: bool) -> _Outcome:
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


def _unfence(text: str) -> str:
    """The body of a markdown code fence: opening line (with info string) and closing fence dropped."""
    body = text[3:]
    if "\n" in body:
        body = body.split("\n", 1)[1]
    body = body.rstrip()
    if body.endswith("```"):
        body = body[:-3]
    return body.strip("`")


# --------------------------------------------------------------------------- decoding


class _Nothing:
    """Marker: no structure could be decoded."""


_NOTHING: Final = _Nothing()


def _decode_structure(text: str) -> object:
    """The value of JSON (or Python literal) text, or ``_NOTHING``."""
    if text[0] not in '[{("':
        return _NOTHING
    if text[0] != "(":
        try:
            return json.loads(text)
        except Exception:  # malformed, too deep, or a number beyond the digit limit
            pass
    if text[0] in "[{(" and len(text) <= _MAX_LITERAL_LENGTH:
        return _read_literal(text)
    return _NOTHING


def _embedded_structure(text: str) -> object:
    """A list or dict written as JSON/literal text inside free text, or ``_NOTHING``."""
    starts = [index for index in (text.find("["), text.find("{")) if index >= 0]
    if not starts:
        return _NOTHING
    start = min(starts)
    end = text.rfind("]" if text[start] == "[" else "}")
    if end <= start or (start == 0 and end == len(text) - 1):
        return _NOTHING
    decoded = _decode_structure(text[start : end + 1])
    if isinstance(decoded, (list, dict, tuple)):
        return decoded
    return _NOTHING


class _Malformed(Exception):
    """The literal text cannot be read."""


def _read_literal(text: str) -> object:
    """Read Python-literal-like text (single quotes, ``None``/``True``, tuples) or ``_NOTHING``.

    Only lists, tuples, dicts with string keys, strings, numbers and the words
    None/null/True/true/False/false are read; nesting is bounded by :data:`MAX_DEPTH`.
    """
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(text):
        match = _LITERAL_TOKEN_RE.match(text, position)
        if match is None:
            if text[position:].strip():
                return _NOTHING
            break
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        position = match.end()
    try:
        value, index = _literal_value(tokens, 0, 0)
    except (_Malformed, IndexError, ValueError, OverflowError):
        return _NOTHING
    if index != len(tokens):
        return _NOTHING
    return value


_CLOSERS: Final = {"[": "]", "(": ")"}
_WORDS: Final[dict[str, object]] = {
    "None": None,
    "null": None,
    "True": True,
    "true": True,
    "False": False,
    "false": False,
}


def _literal_value(tokens: list[tuple[str, str]], index: int, depth: int) -> tuple[object, int]:
    if depth > MAX_DEPTH:
        raise _Malformed
    kind, text = tokens[index]
    if kind in ("sq", "dq"):
        return _ESCAPE_RE.sub(_unescape, text), index + 1
    if kind == "num":
        if len(text) > 40:
            raise _Malformed
        number: object = float(text) if any(c in text for c in ".eE") else int(text)
        return number, index + 1
    if kind == "word":
        if text not in _WORDS:
            raise _Malformed
        return _WORDS[text], index + 1
    if text in _CLOSERS:
        closer = _CLOSERS[text]
        items: list[object] = []
        index += 1
        while tokens[index][1] != closer:
            item, index = _literal_value(tokens, index, depth + 1)
            items.append(item)
            if tokens[index][1] == ",":
                index += 1
            elif tokens[index][1] != closer:
                raise _Malformed
        return items, index + 1
    if text == "{":
        mapping: dict[str, object] = {}
        index += 1
        while tokens[index][1] != "}":
            key, index = _literal_value(tokens, index, depth + 1)
            if not isinstance(key, str) or tokens[index][1] != ":":
                raise _Malformed
            mapping[key], index = _literal_value(tokens, index + 1, depth + 1)
            if tokens[index][1] == ",":
                index += 1
            elif tokens[index][1] != "}":
                raise _Malformed
        return mapping, index + 1
    raise _Malformed


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if len(code) == 5:
        return chr(int(code[1:], 16))
    return _ESCAPES.get(code, code)


# --------------------------------------------------------------------------- raw


def _plain(text: str) -> str:
    """An exact ``str`` with the characters of ``text``, calling no method a subclass overrides."""
    return str.__getitem__(text, slice(None))


def _short_repr(value: object) -> str:
    """A printable repr of ``value`` of at most :data:`MAX_RAW_LENGTH` characters; never raises."""
    try:
        text = _bounded_repr(value, 2)
    except Exception:
        try:
            text = f"<unreadable {type(value).__name__}>"
        except Exception:
            text = "<unreadable>"
    return _sanitize(text)


def _sanitize(text: str) -> str:
    head = text[: MAX_RAW_LENGTH * 2]
    if head.isprintable():
        printable = head
    else:
        printable = "".join(char if char.isprintable() else repr(char)[1:-1] for char in head)
    if len(printable) > MAX_RAW_LENGTH:
        return printable[: MAX_RAW_LENGTH - 3] + "..."
    return printable


def _bounded_repr(value: object, level: int) -> str:
    """Like ``repr`` but reads at most a few items per container and ``level`` levels."""
    if value is None or isinstance(value, bool):
        return "None" if value is None else ("True" if value else "False")
    if isinstance(value, str):
        return repr(_plain(value)[: MAX_RAW_LENGTH + 2])
    if isinstance(value, (bytes, bytearray)):
        return repr(bytes(value[: MAX_RAW_LENGTH + 2]))
    if isinstance(value, int):
        return int.__repr__(value) if value.bit_length() < 256 else "<int>"
    if isinstance(value, float):
        return float.__repr__(value)
    if isinstance(value, (list, tuple)):
        opener, closer = ("[", "]") if isinstance(value, list) else ("(", ")")
        if level <= 0:
            return opener + "..." + closer
        parts = [_bounded_repr(item, level - 1) for item in islice(_sequence_items(value), 5)]
        if len(parts) > 4:
            parts[4] = "..."
        return opener + ", ".join(parts) + closer
    if isinstance(value, Mapping):
        if level <= 0:
            return "{...}"
        parts = [
            f"{_bounded_repr(key, level - 1)}: {_bounded_repr(item, level - 1)}"
            for key, item in islice(_mapping_items(value), 5)
        ]
        if len(parts) > 4:
            parts[4] = "..."
        return "{" + ", ".join(parts) + "}"
    try:
        return repr(value)[: MAX_RAW_LENGTH + 2]
    except Exception:
        try:
            return f"<{type(value).__name__}>"
        except Exception:
            return "<object>"
