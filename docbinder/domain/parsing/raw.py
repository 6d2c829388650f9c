"""Reading untrusted values safely, and the short printable ``raw`` of a rejection.

A model's ``documentList`` may be a hostile object: a ``str`` or ``list``
subclass that overrides its methods, a list that shrinks while it is read, a
dict with a million keys, a ``__repr__`` that raises. The walker reads every
value through this module:

* :func:`plain` (the characters of a string as an exact ``str``),
  :func:`sequence_items` and :func:`mapping_items` (the items of a container,
  calling no method a subclass overrides, at most ``MAX_VALUES + 1`` pairs);
* :func:`short_repr` (what a rejection shows of any value: printable, at most
  :data:`~docbinder.domain.parsing.rules.MAX_RAW_LENGTH` characters, never
  raises) and :func:`sanitize` (the same bound for text that is already a
  ``raw``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import islice

from docbinder.domain.parsing.rules import MAX_RAW_LENGTH, MAX_VALUES

__all__ = ["mapping_items", "plain", "sanitize", "sequence_items", "short_repr"]

# --------------------------------------------------------------------------- containers


def sequence_items(value: object) -> Iterator[object]:
    """Yield the items of a list or tuple without calling overridden methods of subclasses.

    Anything else yields nothing. A list that shrinks while it is read ends
    early instead of raising.
    """
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


def mapping_items(value: object) -> Iterator[tuple[object, object]]:
    """Yield at most ``MAX_VALUES + 1`` key/value pairs, bypassing overrides on dict subclasses.

    Other mappings are read through their own ``items()``; anything else
    yields nothing.
    """
    if isinstance(value, dict):
        yield from islice(dict.items(value), MAX_VALUES + 1)
    elif isinstance(value, Mapping):
        yield from islice(value.items(), MAX_VALUES + 1)


def plain(text: str) -> str:
    """An exact ``str`` with the characters of ``text``, calling no method a subclass overrides."""
    return str.__getitem__(text, slice(None))


# --------------------------------------------------------------------------- raw


def short_repr(value: object) -> str:
    """A printable repr of ``value`` of at most :data:`MAX_RAW_LENGTH` characters; never raises."""
    try:
        text = _bounded_repr(value, 2)
    except Exception:
        try:
            text = f"<unreadable {type(value).__name__}>"
        except Exception:
            text = "<unreadable>"
    return sanitize(text)


def sanitize(text: str) -> str:
    """``text`` made printable (escapes for the rest) and cut to :data:`MAX_RAW_LENGTH` characters.

    A cut text ends with ``...``.
    """
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
        return repr(plain(value)[: MAX_RAW_LENGTH + 2])
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
        parts = [_bounded_repr(item, level - 1) for item in islice(sequence_items(value), 5)]
        if len(parts) > 4:
            parts[4] = "..."
        return opener + ", ".join(parts) + closer
    if isinstance(value, Mapping):
        if level <= 0:
            return "{...}"
        parts = [
            f"{_bounded_repr(key, level - 1)}: {_bounded_repr(item, level - 1)}"
            for key, item in islice(mapping_items(value), 5)
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
