"""Reading untrusted containers safely and showing rejected input as a short printable ``raw``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import islice

from docbinder.domain.parsing.rules import MAX_RAW_LENGTH, MAX_VALUES

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
