"""Scanning text for references: the reference patterns, whole references and free text.

One string (already decoded: no JSON, no code fence, see :mod:`.decoding`) is
read as the references it holds, left to right: :func:`parse_text` takes a
string that is exactly one reference (``"docList:Q3 report.pdf"``, ``"`docItem:a1`."``)
as a whole, and otherwise scans it as free text or as a list of entries,
including the unified tool-result block of SPEC C5. What a token becomes is
decided by :mod:`.canonical`; :func:`starts_with_prefix` tells a dict field
whose value is written as a reference from a bare id.
"""

from __future__ import annotations

import re
from typing import Final

import attrs

from docbinder.domain.parsing.canonical import (
    Kind,
    Outcome,
    canonical_uuid,
    make_id,
    make_label,
)
from docbinder.domain.parsing.raw import short_repr
from docbinder.domain.parsing.rules import (
    MAX_RAW_LENGTH,
    REASON_INVALID_ID,
    REASON_NOT_A_REFERENCE,
)
from docbinder.domain.references import DocumentItemReference, RejectedReference

__all__ = ["parse_text", "starts_with_prefix"]

_MAX_WRAPPER_ROUNDS: Final = 8
"""Layers of quotes, brackets and punctuation stripped around one whole reference."""

# --------------------------------------------------------------------------- patterns

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

# --------------------------------------------------------------------------- text


def parse_text(text: str) -> list[Outcome]:
    """References and rejected tokens found in one string (no JSON decoding), in order; pure.

    Empty when the text holds no reference at all (the caller decides whether
    that is a rejection). Never raises for any ``str``.
    """
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


def _whole_reference(cleaned: str) -> Outcome | None:
    """The single reference ``cleaned`` consists of, or None when it is not exactly one."""
    match = _WHOLE_RE.fullmatch(cleaned)
    if match is None:
        return None
    prefix, rest = match.group(1), match.group(2)
    if _OTHER_PREFIX_RE.search(rest):
        return None
    kind = _prefix_kind(prefix)
    raw = short_repr(cleaned)
    if kind is Kind.LIST:
        return make_label(rest, raw, normalise=True)
    if _ID_TOKEN_RE.fullmatch(rest):
        return make_id(kind, rest, raw)
    return None


def _scan(text: str) -> list[Outcome]:
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
    outcomes: list[Outcome | _FileLine] = []
    for entry in entries:
        word = _strip_wrappers(entry).strip("[](){}<>`'\"*-+ \t")
        if not word:
            continue
        entry_found = _scan_references(entry)
        if entry_found:
            outcomes.extend(entry_found)
        elif len(word.split()) == 1 and not _is_prose_word(entry):
            outcomes.append(RejectedReference(short_repr(entry.strip()), REASON_NOT_A_REFERENCE))
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


def _pair_file_lines(found: list[Outcome | _FileLine]) -> list[Outcome]:
    """Drop each ``file id:`` line that follows a docItem reference; read the others as ``file:``."""
    outcomes: list[Outcome] = []
    after_item = False
    for outcome in found:
        if isinstance(outcome, _FileLine):
            if not after_item:
                outcomes.append(make_id(Kind.FILE, outcome.file_id, outcome.raw))
            after_item = False
            continue
        if isinstance(outcome, DocumentItemReference):
            after_item = True
        outcomes.append(outcome)
    return outcomes


def _scan_references(text: str) -> list[Outcome | _FileLine]:
    outcomes: list[Outcome | _FileLine] = []
    for match in _SCAN_RE.finditer(text):
        if match.group("uuid") is not None:
            uuid = canonical_uuid(match.group("uuid")) or ""
            outcomes.append(DocumentItemReference(uuid, bare=True))
        elif match.group("list") is not None:
            outcomes.append(
                make_label(match.group("label"), short_repr(match.group(0)), normalise=True)
            )
        elif match.group("fileline") is not None:
            end = match.end("fileline_id")
            if end < len(text) and (text[end].isalnum() or text[end] in _ID_CONTINUES):
                continue  # "file id: x/y" is prose about something else
            outcomes.append(_FileLine(match.group("fileline_id"), short_repr(match.group(0))))
        elif match.group("item_wrapped") is not None:
            raw = short_repr(match.group(0))
            if _PAIRS.get(match.group("item_open")) != match.group("item_close"):
                outcomes.append(RejectedReference(raw, REASON_INVALID_ID))
            else:
                outcomes.append(make_id(Kind.ITEM, match.group("item_wrapped"), raw))
        else:
            group = "item_id" if match.group("item") is not None else "file_id"
            kind = Kind.ITEM if group == "item_id" else Kind.FILE
            end = match.end(group)
            if end < len(text) and (text[end].isalnum() or text[end] in _ID_CONTINUES):
                token = text[match.start() : end + 1 + MAX_RAW_LENGTH].split(maxsplit=1)[0]
                outcomes.append(RejectedReference(short_repr(token), REASON_INVALID_ID))
            else:
                outcomes.append(make_id(kind, match.group(group), short_repr(match.group(0))))
    return outcomes


_ENTRY_SPLIT_RE: Final = re.compile(r"[,;\n]")


def _prefix_kind(prefix: str) -> Kind:
    lowered = prefix.lower()
    if lowered.endswith("item"):
        return Kind.ITEM
    if lowered.endswith("list"):
        return Kind.LIST
    return Kind.FILE


def starts_with_prefix(text: str) -> bool:
    """Whether ``text`` begins (after quotes, brackets, ``*`` and blanks) with a reference prefix.

    ``docItem``, ``docList`` or ``file`` in any accepted spelling, then a colon:
    such a field value is read with :func:`parse_text` rather than as a bare id.
    """
    return _STARTS_WITH_PREFIX_RE.match(text) is not None
