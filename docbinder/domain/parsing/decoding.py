"""Decoding structures written as text: JSON, Python literals and markdown code fences.

A model often sends its ``documentList`` as text that holds a structure: JSON
(also encoded several times, which the walker peels layer by layer), Python
literal text (single quotes, ``None``, tuples), JSON inside free text, or any
of these in a markdown code fence. This module turns such text into the value
it holds, or says there is none; it never looks for references itself (that
is :mod:`.text`) and never recurses (that is :mod:`.walker`, which counts
each decoded layer against :data:`~docbinder.domain.parsing.rules.MAX_DEPTH`).

* :func:`decode_structure`: the value of text that *is* a structure;
* :func:`embedded_structure`: a list or dict written inside free text;
* :func:`unfence`: the body of a code fence.
"""

from __future__ import annotations

import json
import re
from typing import Final

from docbinder.domain.parsing.rules import MAX_DEPTH

__all__ = ["decode_structure", "embedded_structure", "unfence"]

_MAX_LITERAL_LENGTH: Final = 20_000
"""Longest text read as a Python literal, in characters (JSON has no such bound)."""

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

# --------------------------------------------------------------------------- decoding


def decode_structure(text: str) -> object | None:
    """The value of ``text`` read as JSON (or Python literal) text, or ``None`` if it is none.

    ``text`` is stripped and not empty. Only text starting with ``[``, ``{``,
    ``(`` or ``"`` is decoded, so a decoded value is a list, a dict or a
    string and never ``None`` itself: ``None`` always means "no structure".
    JSON comes first; a ``(`` tuple and JSON that does not load are read as
    Python literal text when at most ``_MAX_LITERAL_LENGTH`` characters long.
    """
    if text[0] not in '[{("':
        return None
    if text[0] != "(":
        try:
            decoded: object = json.loads(text)
            return decoded
        except Exception:  # malformed, too deep, or a number beyond the digit limit
            pass
    if text[0] in "[{(" and len(text) <= _MAX_LITERAL_LENGTH:
        return _read_literal(text)
    return None


def embedded_structure(text: str) -> list[object] | dict[str, object] | tuple[object, ...] | None:
    """A list or dict written as JSON/literal text inside free text, or ``None``.

    The structure runs from the first ``[`` or ``{`` to the last matching
    closer; text that is only the structure is not "embedded" (``None``: the
    caller decoded it already with :func:`decode_structure`).
    """
    starts = [index for index in (text.find("["), text.find("{")) if index >= 0]
    if not starts:
        return None
    start = min(starts)
    end = text.rfind("]" if text[start] == "[" else "}")
    if end <= start or (start == 0 and end == len(text) - 1):
        return None
    decoded = decode_structure(text[start : end + 1])
    if isinstance(decoded, (list, dict, tuple)):
        return decoded
    return None


_ONE_LINE_INFO_STRING = re.compile(r"\A[A-Za-z][\w+.-]*\s+(?=[\[{(\"'])")
"""An info string (a language name) before a structure on the opening line of a one-line fence."""


def unfence(text: str) -> str:
    """The body of a markdown code fence: opening line (with info string) and closing fence dropped.

    ``text`` starts with three backticks. A fence on one line (```` ```json ["a"]``` ````,
    as models write it; CommonMark would read it as a code span) loses its info string
    too when a structure or a quoted string follows it, so the structure is read whole.
    """
    opening, newline, rest = text[3:].partition("\n")
    body = rest if newline else _ONE_LINE_INFO_STRING.sub("", opening, count=1)
    body = body.rstrip()
    if body.endswith("```"):
        body = body[:-3]
    return body.strip("`")


class _Malformed(Exception):
    """The literal text cannot be read."""


def _read_literal(text: str) -> object | None:
    """Read Python-literal-like text (single quotes, ``None``/``True``, tuples), or ``None``.

    Only lists, tuples, dicts with string keys, strings, numbers and the words
    None/null/True/true/False/false are read; nesting is bounded by :data:`MAX_DEPTH`.
    """
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(text):
        match = _LITERAL_TOKEN_RE.match(text, position)
        if match is None:
            if text[position:].strip():
                return None
            break
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        position = match.end()
    try:
        value, index = _literal_value(tokens, 0, 0)
    except (_Malformed, IndexError, ValueError, OverflowError):
        return None
    if index != len(tokens):
        return None
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
