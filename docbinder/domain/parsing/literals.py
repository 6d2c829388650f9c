"""Decoding structures written as text: JSON (also encoded several times) and Python literals."""

from __future__ import annotations

import json
import re
from typing import Final

from docbinder.domain.parsing.rules import _MAX_LITERAL_LENGTH, MAX_DEPTH

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
