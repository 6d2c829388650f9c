"""Output of the CLI: every path goes through here, so no data can spoof what is printed.

People get rich output, scripts one JSON document. Whatever comes from data (ids, file
names, labels, content, error messages) is printed as plain text, never as rich markup
(``[/x]`` in a mandate id is shown as it is), with every character that could move the
cursor, reorder or hide text escaped the way the tool-result text escapes it
(:func:`docbinder.application.steps.results.printable`): C0/C1 controls, bidi and other
format characters (U+202E, U+2066...), line and paragraph separators (U+2028, U+2029)
and lone surrogates. Styling is added only with :func:`styled` around cleaned text.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import sys
from typing import Any

from rich.console import Console
from rich.logging import RichHandler
from rich.table import Table as _RichTable
from rich.text import Text

from docbinder.application.steps.results import printable

__all__ = [
    "SafeLogHandler",
    "Table",
    "clean",
    "emit_json",
    "err",
    "fail",
    "masked_url",
    "out",
    "styled",
]


def clean(value: object, *, multiline: bool = True) -> str:
    """``value`` as text with every non-printable character escaped (``\\u202e``, ``\\t``...).

    With ``multiline`` line feeds stay (they separate the lines the CLI itself prints,
    data never holds one where it is printed on one line: names and labels refuse
    control characters); without it they are escaped too.
    """
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text
    if multiline:
        return "\n".join(printable(line) for line in text.split("\n"))
    return printable(text).replace("\n", "\\n")


def styled(value: object, style: str) -> Text:
    """Cleaned ``value`` in a rich ``style`` (the only way the CLI adds colour)."""
    return Text(clean(value), style=style)


def _plain(objects: tuple[Any, ...]) -> tuple[Any, ...]:
    """Strings become cleaned, markup-free ``Text``; ``Text`` and tables pass through."""
    return tuple(Text(clean(o)) if isinstance(o, str) else o for o in objects)


class _SafeConsole(Console):
    """A console that prints strings as plain cleaned text, never as markup."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        kwargs.pop("markup", None)
        super().print(*_plain(objects), markup=False, **kwargs)


class _Console(_SafeConsole):
    """stdout: also ends quietly when its reader goes away (``docbinder demo | head``)."""

    def on_broken_pipe(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(0)


out = _Console(soft_wrap=True, highlight=False, emoji=False, markup=False)
err = _SafeConsole(stderr=True, soft_wrap=True, highlight=False, emoji=False, markup=False)


class SafeLogHandler(RichHandler):
    """Log lines on stderr with the data in them cleaned like every other output."""

    def render_message(self, record: logging.LogRecord, message: str) -> Any:
        return super().render_message(record, clean(message))


def Table(*headers: str, whole: tuple[str, ...] = ()) -> _RichTable:
    """A table whose cells are plain cleaned text; an ``id`` column keeps each id on one line.

    The columns named in ``whole`` (short fixed-width values such as timestamps) never
    wrap either. Other columns give way first, so an id or a timestamp can be read and
    copied on an 80-column terminal or in a pipe; ``--json`` gives every value whole.
    String cells are never read as markup.
    """
    table = _SafeTable()
    for header in headers:
        if header == "id":
            table.add_column(header, overflow="fold", no_wrap=True, min_width=36)
        elif header in whole:
            table.add_column(header, no_wrap=True)
        else:
            table.add_column(header, overflow="fold")
    return table


class _SafeTable(_RichTable):
    def add_row(self, *renderables: Any, **kwargs: Any) -> None:
        super().add_row(*_plain(renderables), **kwargs)


def _json_safe(text: str) -> str:
    r"""JSON text with every non-printable character written as a ``\u`` + 4-hex-digit escape.

    ``json.dumps(ensure_ascii=False)`` escapes C0 controls only; bidi and format
    characters, U+2028/U+2029 and lone surrogates would reach the terminal raw (a
    lone surrogate cannot even be encoded). Outside strings JSON holds only ASCII,
    so every such character is inside a string and its escape is the same value.
    """
    if text.isprintable():
        return text
    parts: list[str] = []
    for ch in text:
        if ch.isprintable() or ch in " \n":
            parts.append(ch)
            continue
        code = ord(ch)
        if code > 0xFFFF:
            code -= 0x10000
            parts.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            parts.append(f"\\u{code:04x}")
    return "".join(parts)


def _json_references(value: Any) -> Any:
    """Unresolved entries' ``reference`` values as JSON values (:func:`~docbinder.serialization.reference_value`)."""
    if isinstance(value, dict):
        result = {k: _json_references(v) for k, v in value.items()}
        from docbinder.serialization import rejected_input_as_json

        return rejected_input_as_json(result)
    if isinstance(value, list):
        return [_json_references(v) for v in value]
    return value


def emit_json(payload: Any) -> None:
    """Print ``payload`` (entities are converted with the wire converter) as one JSON document.

    Rejected inputs among unresolved references are shown as the JSON values they
    stand for, not as Python reprs. Non-ASCII text stays readable; every non-printable character is escaped
    (:func:`_json_safe`), so the document is always valid UTF-8 and parses back to
    the same values.
    """
    from docbinder.serialization import to_wire

    data = to_wire(payload)
    text = json.dumps(_json_references(_strip_bytes(data)), ensure_ascii=False, indent=2)
    sys.stdout.write(_json_safe(text) + "\n")
    sys.stdout.flush()


def _strip_bytes(value: Any) -> Any:
    """Replace base64 ``data`` of content parts by ``dataSize`` (bytes) to keep output small."""
    if isinstance(value, dict):
        result = {k: _strip_bytes(v) for k, v in value.items() if k != "data"}
        if "data" in value and "kind" in value:
            data = value["data"]
            result["dataSize"] = None if data is None else len(base64.b64decode(data))
        elif "data" in value:
            result["data"] = _strip_bytes(value["data"])
        return result
    if isinstance(value, list):
        return [_strip_bytes(v) for v in value]
    return value


def fail(message: str) -> None:
    """Print one ``error: ...`` line on stderr (the message cleaned, line breaks escaped)."""
    line = Text("error:", style="bold red")
    line.append(" " + clean(message, multiline=False))
    err.print(line)


def masked_url(value: Any) -> str:
    """``value`` as text; a URL with credentials (``scheme://user:secret@host``) has its password masked."""
    text = str(value)
    if "://" in text and "@" in text:
        from docbinder.adapters.sql.engine import safe_url
        from docbinder.domain.errors import DocbinderError

        try:
            return safe_url(text)
        except DocbinderError:
            return text
    return text
