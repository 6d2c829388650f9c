"""Tolerant tool arguments: accept the shapes models send, refuse the rest with a usable reason.

The producing tools (:mod:`docbinder.tools.producing`) pass every argument a
model fills in through the functions here before using it, the way the
documentList parser (:mod:`docbinder.domain.parsing`) treats references: the
common shapes are normalised, and what cannot be used is refused with an
:class:`~docbinder.domain.errors.InvalidInput` whose message says what was
received, what is accepted and gives an example (:func:`refusal`)::

    the document formats: got 'pdf, docx' (str), and 'docx' is not one of them;
    accepted: html, pdf, as a list or a comma/space-separated string; example: "pdf, html"

Nothing is reinterpreted silently: a value is either used with the meaning it
visibly has (``"true"`` for a boolean, ``"2"`` for a number, ``"pdf, html"`` for
a list of formats, a ``data:`` URI for a PNG file) or refused.

What is accepted, per argument:

* whole arguments: surrounding whitespace and one enclosing markdown code fence
  (```` ```json ... ``` ````) are removed (:func:`strip_fence`; file content
  has its own rule, see :func:`coerce_file_content`);
* booleans (:func:`coerce_bool`): ``true``/``false``, the strings ``true``,
  ``false``, ``yes``, ``no``, ``on``, ``off``, ``1``, ``0`` (any case) and the
  integers 1 and 0;
* integers and numbers (:func:`coerce_int`, :func:`coerce_number`): numbers,
  and strings holding one (``"2"``, ``" 48.5 "``, ``"1e3"``, ``"1,234.5"`` with
  comma thousands separators); never booleans;
* lists of choices (:func:`coerce_choices`): a list, a JSON array as text, or a
  string separated by commas, semicolons, slashes, ``|``, ``+``, ``and`` or
  whitespace; each item case-insensitive, a leading dot ignored;
* lists of identifiers (:func:`coerce_string_list`): a list, a JSON array as
  text, or a string separated by commas, semicolons or whitespace;
* base64 (:func:`coerce_base64`): standard or URL-safe, padding optional;
* file names (:func:`coerce_file_name`): a directory part (``/`` or ``\\``) is
  dropped, a repeated extension (``data.json.json``) is kept once, a missing
  extension is added when the content decides it; invisible format characters
  and trailing dots are removed (``x.png.`` is ``x.png``); a name that is only
  an extension (``.json``) is refused;
* JSON text (:func:`load_json`): strict RFC 8259, at most
  :data:`MAX_JSON_DEPTH` levels deep;
* file content for ``write_file`` (:func:`coerce_file_content`): see there.

:data:`ARGUMENT_SHAPES` lists these shapes per tool argument, each with a tiny
example; :data:`ACCEPTED_SHAPES` is the text made from it for the argument
descriptions of the shared tool set's schemas (MCP and the framework
integrations, :mod:`docbinder.toolset.specs`), which call these functions too.
"""

from __future__ import annotations

import base64
import binascii
import csv
import io
import json
import math
import mimetypes
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Final
from urllib.parse import unquote_to_bytes

import attrs

from docbinder.domain.errors import InvalidInput
from docbinder.domain.mime import is_textual_mime

_PREVIEW_CHARS: Final = 80

_FENCE_RE: Final = re.compile(
    r"\A\s*(`{3,}|~{3,})[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)\n?[ \t]*\1\s*\Z", re.DOTALL
)
_TRUE: Final = frozenset({"true", "yes", "on", "1", "y", "t"})
_FALSE: Final = frozenset({"false", "no", "off", "0", "n", "f"})
_THOUSANDS_RE: Final = re.compile(r"\A[+-]?\d{1,3}(,\d{3})+(\.\d+)?\Z")
_CHOICE_SPLIT_RE: Final = re.compile(r"\s*(?:[,;/|+]|\band\b|\s)\s*", re.IGNORECASE)
_DATA_URI_RE: Final = re.compile(
    r"\Adata:(?P<mime>[A-Za-z0-9.+-]+/[A-Za-z0-9.+-]+)?(?P<params>(;[^,;]*)*?)(?P<b64>;base64)?,(?P<data>.*)\Z",
    re.DOTALL | re.IGNORECASE,
)
_BASE64_RE: Final = re.compile(r"\A[A-Za-z0-9+/_-]+={0,2}\Z")


def preview(value: object) -> str:
    """A short description of a received value: its ``repr`` (at most 80 characters) and type.

    Example: ``preview("pdf, html")`` is ``"'pdf, html' (str)"``; long values
    end in ``...`` and bytes show their length.
    """
    if isinstance(value, bytes | bytearray | memoryview):
        return f"{len(bytes(value))} bytes"
    try:
        text = repr(value)
    except RecursionError:
        return f"a {type(value).__name__} nested too deep to show"
    if len(text) > _PREVIEW_CHARS:
        text = text[: _PREVIEW_CHARS - 3] + "..."
    return f"{text} ({type(value).__name__})"


def refusal(what: str, received: object, accepted: str, example: str) -> InvalidInput:
    """The :class:`InvalidInput` for an unusable argument: what came, what is accepted, an example.

    Message: ``<what>: got <preview(received)>; accepted: <accepted>; example: <example>``.
    """
    return InvalidInput(
        f"{what}: got {preview(received)}; accepted: {accepted}; example: {example}"
    )


def strip_fence(text: str) -> str:
    """``text`` without surrounding whitespace and without one markdown code fence around it all.

    A fence is three or more backticks or tildes, an optional language word on
    the opening line, and the same fence closing the text (CommonMark fenced
    code blocks, https://spec.commonmark.org/0.31.2/#fenced-code-blocks). Text
    with anything outside the fence is returned stripped but otherwise as is.
    """
    fenced = _FENCE_RE.match(text)
    if fenced:
        return fenced.group(3).strip()
    return text.strip()


def fence_language(text: str) -> str | None:
    """The language word of a code fence around all of ``text`` (``""`` without one), else ``None``."""
    fenced = _FENCE_RE.match(text)
    return fenced.group(2).lower() if fenced else None


MAX_JSON_DEPTH: Final = 100
"""Deepest nesting of arrays and objects accepted in JSON (file content and arguments).

RFC 8259 §9 lets a parser limit nesting depth; 100 (as Ruby's JSON parser) is far
beyond what documents and tool arguments need and far below the interpreter's
recursion limit, so that reading or writing JSON never runs out of stack.
"""

MAX_JSON_NUMBER_DIGITS: Final = 4300
"""Most digits of one number in JSON text: Python's limit for converting text to an int
(``sys.int_info.default_max_str_digits``); RFC 8259 §6 lets a parser limit the range."""


class JsonRefused(ValueError):
    """JSON text that :func:`load_json` does not accept; the message says why."""


_JSON_STRING_RE: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_JSON_BRACKET_RE: Final = re.compile(r"[\[\]{}]")


def json_text_depth(text: str) -> int:
    """How deep arrays and objects nest in JSON ``text`` (``[1]`` is 1), brackets in strings ignored.

    Counted by a scan without parsing, so that it is safe for any depth; for
    text that is not JSON the count may be higher than a parser would reach.
    """
    depth = deepest = 0
    for bracket in _JSON_BRACKET_RE.finditer(_JSON_STRING_RE.sub('""', text)):
        if bracket.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(depth - 1, 0)
    return deepest


def value_depth_exceeds(value: object, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether dicts, lists and tuples nest in ``value`` deeper than ``limit`` (``[1]`` is 1).

    Walks without recursion, so it is safe for any depth; a value that contains
    itself counts as too deep.
    """
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping | list | tuple):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, Mapping) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def _json_int(text: str) -> int:
    _check_json_number(text)
    return int(text)


def _json_float(text: str) -> float:
    _check_json_number(text)
    return float(text)


def _check_json_number(text: str) -> None:
    digits = sum(ch.isdigit() for ch in text)
    if digits > MAX_JSON_NUMBER_DIGITS:
        raise JsonRefused(
            f"a number of {digits} digits, more than the {MAX_JSON_NUMBER_DIGITS} accepted"
        )


def _json_constant(word: str) -> object:
    raise JsonRefused(f"{word} is not JSON (RFC 8259 has no NaN or Infinity)")


def load_json(text: str) -> object:
    """The value of strict JSON ``text`` (RFC 8259); raises :class:`ValueError` saying why not.

    Stricter than :func:`json.loads`: ``NaN``, ``Infinity`` and ``-Infinity``
    are refused (they are not JSON), so are arrays and objects nested deeper
    than :data:`MAX_JSON_DEPTH` and numbers of more than
    :data:`MAX_JSON_NUMBER_DIGITS` digits. Raises :class:`JsonRefused` for
    those and :class:`json.JSONDecodeError` for text that is no JSON; both are
    :class:`ValueError`.
    """
    depth = json_text_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise JsonRefused(
            f"arrays and objects nested {depth} deep, more than the {MAX_JSON_DEPTH} accepted"
        )
    try:
        return json.loads(
            text, parse_int=_json_int, parse_float=_json_float, parse_constant=_json_constant
        )
    except RecursionError as exc:  # pragma: no cover - the depth check comes first
        raise JsonRefused(f"nested deeper than the {MAX_JSON_DEPTH} levels accepted") from exc


def encode_text(text: str, what: str) -> bytes:
    """``text`` as UTF-8; :class:`InvalidInput` for a lone surrogate, which UTF-8 cannot hold.

    A surrogate code point (U+D800..U+DFFF) alone is no character (The Unicode
    Standard §3.8); models send one when they cut a ``\\ud83d\\ude00`` pair.
    """
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        raise InvalidInput(
            f"{what}: got text with a lone surrogate U+{code:04X} at character {exc.start}, "
            "which is no character and cannot be stored as UTF-8; accepted: text of Unicode "
            'characters (a surrogate pair such as "\\ud83d\\ude00" is one); example: "hello"'
        ) from exc


def coerce_text(value: object, what: str, *, example: str, allow_empty: bool = False) -> str:
    """``value`` as text with surrounding whitespace and a code fence around it removed.

    Raises :class:`InvalidInput` (:func:`refusal`) for a non-string, or an empty
    one unless ``allow_empty``.
    """
    if not isinstance(value, str):
        raise refusal(what, value, "text", example)
    text = strip_fence(value)
    if not text and not allow_empty:
        raise refusal(what, value, "non-empty text", example)
    return text


def coerce_bool(value: object, what: str) -> bool:
    """``value`` as a boolean: ``True``/``False``, 1/0, or ``"true"``, ``"no"``, ``"on"``, ... (any case).

    Raises :class:`InvalidInput` for anything else (``"maybe"``, 2, ``None``).
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = strip_fence(value).strip("'\"").lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    raise refusal(
        what, value, "true or false (also the strings 'true', 'false', 'yes', 'no')", "true"
    )


def parse_number(value: object) -> float | None:
    """The number in ``value`` (see :func:`coerce_number` for the accepted shapes), else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        return None
    text = value.strip().strip("'\"").strip()
    if _THOUSANDS_RE.match(text):
        text = text.replace(",", "")
    text = text.replace("_", "") if re.fullmatch(r"[+-]?\d+(_\d+)+(\.\d+)?", text) else text
    if not re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", text):
        return None
    return float(text)


def coerce_number(value: object, what: str, *, example: str = "48.5") -> float:
    """``value`` as a finite number: an int or float, or a string holding one.

    Accepted strings: ``"61"``, ``" 48.5 "``, ``"-3"``, ``"1e3"``, ``"1,234.5"``
    (comma thousands separators), ``"1_000"``. Booleans, ``None``, NaN,
    infinities and other text raise :class:`InvalidInput`.
    """
    number = parse_number(value)
    if number is None or not math.isfinite(number):
        raise refusal(what, value, "a finite number, or a string holding one", example)
    return number


def coerce_int(
    value: object, what: str, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """``value`` as an integer within ``[minimum, maximum]``: an int, a whole float or a string of one.

    ``"2"``, ``2.0`` and ``" 2 "`` give 2; ``2.5``, ``True``, ``"two"`` and
    values out of range raise :class:`InvalidInput`.
    """
    number = parse_number(value)
    span = (
        f" from {minimum} to {maximum}"
        if minimum is not None and maximum is not None
        else f" of at least {minimum}"
        if minimum is not None
        else ""
    )
    accepted = f"a whole number{span}, or a string holding one"
    if number is None or not math.isfinite(number) or not number.is_integer():
        raise refusal(what, value, accepted, str(minimum if minimum is not None else 1))
    result = int(number)
    if (minimum is not None and result < minimum) or (maximum is not None and result > maximum):
        raise refusal(what, value, accepted, str(minimum if minimum is not None else 1))
    return result


def coerce_choices(
    value: object, what: str, choices: Sequence[str], *, example: str
) -> tuple[str, ...]:
    """The choices named in ``value``, in order, each once; at least one.

    ``value`` is a list of strings, a JSON array as text, or one string
    separated by commas, semicolons, slashes, ``|``, ``+``, ``and`` or
    whitespace (``"pdf, html"``, ``"pdf and html"``, ``"PDF/HTML"``). Items are
    compared case-insensitively with a leading dot ignored (``".pdf"``).
    Raises :class:`InvalidInput` naming the first unknown item.
    """
    accepted = f"{', '.join(choices)}, as a list or a comma/space-separated string"
    items: Iterable[object]
    if isinstance(value, str):
        text = strip_fence(value)
        if text.startswith("["):
            try:
                parsed = load_json(text)
            except ValueError:
                parsed = None
            items = parsed if isinstance(parsed, list) else _CHOICE_SPLIT_RE.split(text[1:-1])
        else:
            items = _CHOICE_SPLIT_RE.split(text)
    elif isinstance(value, list | tuple):
        items = value
    else:
        raise refusal(what, value, accepted, example)
    chosen: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise refusal(what, value, accepted, example)
        word = item.strip().strip("'\"").strip().lower().lstrip(".")
        if not word:
            continue
        if word not in choices:
            raise InvalidInput(
                f"{what}: got {preview(value)}, and {item.strip()!r} is not one of them; "
                f"accepted: {accepted}; example: {example}"
            )
        if word not in chosen:
            chosen.append(word)
    if not chosen:
        raise refusal(what, value, accepted, example)
    return tuple(chosen)


def coerce_choice(value: object, what: str, choices: Sequence[str]) -> str:
    """The one choice named by ``value``: case-insensitive, whitespace, quotes and a fence ignored.

    Raises :class:`InvalidInput` (:func:`refusal`) for anything else.
    """
    if isinstance(value, str):
        word = strip_fence(value).strip("'\"").strip().lower()
        if word in choices:
            return word
    raise refusal(what, value, f"one of {', '.join(choices)}", repr(choices[0]))


_LIST_SPLIT_RE: Final = re.compile(r"[\s,;]+")


def coerce_string_list(value: object, what: str, *, example: str) -> tuple[str, ...]:
    """``value`` as a list of non-empty strings, in order, each once.

    ``value`` is a list of strings, a JSON array of strings as text, or one
    string holding one item or several separated by commas, semicolons or
    whitespace (for identifiers, which contain none of these). Items lose
    surrounding whitespace and quotes. Raises :class:`InvalidInput`
    (:func:`refusal`) for anything else, or when no item is left.
    """
    accepted = "a list of strings, or one string with items separated by commas"
    items: Iterable[object]
    if isinstance(value, str):
        text = strip_fence(value)
        parsed: object = None
        if text.startswith("["):
            try:
                parsed = load_json(text)
            except ValueError:
                parsed = None
        items = parsed if isinstance(parsed, list) else _LIST_SPLIT_RE.split(text.strip("[]"))
    elif isinstance(value, list | tuple):
        items = value
    else:
        raise refusal(what, value, accepted, example)
    chosen: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise refusal(what, value, accepted, example)
        word = item.strip().strip("'\"").strip()
        if word and word not in chosen:
            chosen.append(word)
    if not chosen:
        raise refusal(what, value, accepted, example)
    return tuple(chosen)


def coerce_base64(value: object, what: str) -> bytes:
    """The bytes of base64 text: standard or URL-safe alphabet (RFC 4648), padding optional.

    Whitespace (line breaks of MIME base64) and a code fence around it all are
    ignored. Raises :class:`InvalidInput` (:func:`refusal`) for a non-string or
    text that is not base64.
    """
    data = _decode_base64(strip_fence(value)) if isinstance(value, str) else None
    if data is None:
        raise refusal(what, value, "base64 text (RFC 4648)", '"aGVsbG8="')
    return data


def split_extension(name: str) -> tuple[str, str]:
    """``(stem, extension)`` of a file name; the extension is lowercase with its dot, or ``""``.

    A leading dot (``.env``) is not an extension; neither is a trailing one.
    """
    dot = name.rfind(".")
    if dot <= 0 or dot == len(name) - 1 or " " in name[dot:]:
        return name, ""
    return name[:dot], name[dot:].lower()


def _is_known_extension(name: str) -> bool:
    """Whether ``name`` (lowercase, with its dot) is an extension docbinder knows a type of."""
    return (
        name in BINARY_TYPES
        or name in TEXT_EXTENSIONS
        or _BUILTIN_MIME_TYPES.guess_type(f"x{name}", strict=False)[0] is not None
    )


def coerce_file_name(value: object, what: str = "the file name", *, example: str) -> str:
    """``value`` as a file name: no directory part, an extension repeated at the end kept once.

    Surrounding whitespace, quotes and a code fence are removed; ``reports/q3.md``
    and ``C:\\tmp\\q3.md`` give ``q3.md``; ``data.json.json`` gives ``data.json``
    (compared case-insensitively; the last spelling is kept). Invisible
    format characters (Unicode category Cf: zero-width spaces and joiners, the
    BOM, bidirectional controls) are removed and trailing dots and spaces
    dropped (Windows drops them too), so that ``x.png.`` and ``x.png\\u200b``
    are ``x.png`` and cannot pass as a different type than they show. Raises
    :class:`InvalidInput` for a non-string, a name with nothing but a directory
    part, a name that is only a known extension (``.json``, ``.png``; dot
    files such as ``.gitignore`` are kept) and a lone surrogate.
    """
    if not isinstance(value, str):
        raise refusal(what, value, "a file name as text", example)
    name = "".join(ch for ch in value if unicodedata.category(ch) != "Cf")
    name = strip_fence(name).strip("'\"` ").strip()
    name = re.split(r"[/\\]", name)[-1].strip().rstrip(". ").strip()
    if name in ("", ".", ".."):
        raise refusal(what, value, "a file name, optionally after a directory part", example)
    encode_text(name, what)
    if name[0] == "." and _is_known_extension(name.lower()):
        raise refusal(
            f"{what} has nothing before its extension {name!r}",
            value,
            "a name before the extension",
            f"data{name}",
        )
    stem, extension = split_extension(name)
    while extension:
        inner_stem, inner = split_extension(stem)
        if inner != extension:
            break
        stem = inner_stem
        name = stem + name[-len(extension) :]
    return name


# -- file content ---------------------------------------------------------------------------

JSON_EXTENSIONS: Final = (".json", ".geojson")
"""Extensions whose text must be one JSON value (RFC 8259)."""

JSON_LINES_EXTENSIONS: Final = (".jsonl", ".ndjson")
"""Extensions for one JSON value per line (https://jsonlines.org)."""

DELIMITED_EXTENSIONS: Final = {".csv": ",", ".tsv": "\t"}
"""Extensions for delimited rows (RFC 4180 for CSV) and their delimiter."""

TEXT_EXTENSIONS: Final = frozenset(
    {
        *JSON_EXTENSIONS,
        *JSON_LINES_EXTENSIONS,
        *DELIMITED_EXTENSIONS,
        *(".txt", ".text", ".log", ".md", ".markdown", ".mdx", ".rst", ".adoc", ".tex"),
        *(".html", ".htm", ".xhtml", ".xml", ".svg", ".css", ".yaml", ".yml", ".toml"),
        *(".ini", ".cfg", ".conf", ".properties", ".sql", ".py", ".js", ".mjs"),
        *(".ts", ".tsx", ".jsx", ".sh", ".bat", ".ps1", ".rb", ".go", ".rs", ".java", ".c"),
        *(".h", ".cpp", ".hpp", ".cs", ".kt", ".swift", ".php", ".r", ".ics", ".vcf"),
        *(".srt", ".vtt", ".eml"),
    }
)
"""Extensions of text formats: their content must be UTF-8 text without NUL (see
:func:`coerce_file_content`); more come from Python's MIME table (:func:`is_text_name`)."""

_BUILTIN_MIME_TYPES: Final = mimetypes.MimeTypes()
"""Python's built-in MIME table only (an instance does not read the system's files)."""


@attrs.frozen
class BinaryType:
    """A binary file type known by its extension: MIME type and a check of the leading bytes."""

    mime_type: str
    description: str
    signatures: tuple[bytes, ...]
    """Any of these at the start of the bytes confirms the type; ``()`` accepts any bytes."""

    def matches(self, data: bytes) -> bool:
        """Whether ``data`` starts the way this type does."""
        if not self.signatures:
            return True
        if self.mime_type == "image/webp":
            return data[:4] == b"RIFF" and data[8:12] == b"WEBP"
        if self.mime_type in ("audio/wav", "audio/x-wav"):
            return data[:4] == b"RIFF" and data[8:12] == b"WAVE"
        if self.mime_type == "application/pdf":
            return b"%PDF-" in data[:1024]
        if self.mime_type.startswith("video/mp4") or self.mime_type in (
            "audio/mp4",
            "video/quicktime",
        ):
            return data[4:8] == b"ftyp"
        return data.startswith(self.signatures)


_ZIP: Final = (b"PK\x03\x04", b"PK\x05\x06")
_OLE: Final = (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",)

BINARY_TYPES: Final[Mapping[str, BinaryType]] = {
    ".png": BinaryType("image/png", "a PNG image", (b"\x89PNG\r\n\x1a\n",)),
    ".jpg": BinaryType("image/jpeg", "a JPEG image", (b"\xff\xd8\xff",)),
    ".jpeg": BinaryType("image/jpeg", "a JPEG image", (b"\xff\xd8\xff",)),
    ".gif": BinaryType("image/gif", "a GIF image", (b"GIF87a", b"GIF89a")),
    ".webp": BinaryType("image/webp", "a WebP image", (b"RIFF",)),
    ".bmp": BinaryType("image/bmp", "a BMP image", (b"BM",)),
    ".ico": BinaryType("image/vnd.microsoft.icon", "an icon", (b"\x00\x00\x01\x00",)),
    ".tif": BinaryType("image/tiff", "a TIFF image", (b"II*\x00", b"MM\x00*")),
    ".tiff": BinaryType("image/tiff", "a TIFF image", (b"II*\x00", b"MM\x00*")),
    ".pdf": BinaryType("application/pdf", "a PDF document", (b"%PDF-",)),
    ".zip": BinaryType("application/zip", "a ZIP archive", _ZIP),
    ".docx": BinaryType(
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "a Word document (ZIP)",
        _ZIP,
    ),
    ".xlsx": BinaryType(
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "an Excel workbook (ZIP)",
        _ZIP,
    ),
    ".pptx": BinaryType(
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "a PowerPoint presentation (ZIP)",
        _ZIP,
    ),
    ".odt": BinaryType("application/vnd.oasis.opendocument.text", "an ODF text (ZIP)", _ZIP),
    ".ods": BinaryType(
        "application/vnd.oasis.opendocument.spreadsheet", "an ODF spreadsheet (ZIP)", _ZIP
    ),
    ".epub": BinaryType("application/epub+zip", "an EPUB book (ZIP)", _ZIP),
    ".doc": BinaryType("application/msword", "a Word 97 document", _OLE),
    ".xls": BinaryType("application/vnd.ms-excel", "an Excel 97 workbook", _OLE),
    ".ppt": BinaryType("application/vnd.ms-powerpoint", "a PowerPoint 97 file", _OLE),
    ".gz": BinaryType("application/gzip", "a gzip file", (b"\x1f\x8b",)),
    ".7z": BinaryType("application/x-7z-compressed", "a 7-Zip archive", (b"7z\xbc\xaf\x27\x1c",)),
    ".mp3": BinaryType(
        "audio/mpeg", "an MP3 file", (b"ID3", b"\xff\xfb", b"\xff\xf3", b"\xff\xf2")
    ),
    ".wav": BinaryType("audio/wav", "a WAV file", (b"RIFF",)),
    ".ogg": BinaryType("audio/ogg", "an Ogg file", (b"OggS",)),
    ".flac": BinaryType("audio/flac", "a FLAC file", (b"fLaC",)),
    ".mp4": BinaryType("video/mp4", "an MP4 file", (b"ftyp",)),
    ".m4a": BinaryType("audio/mp4", "an M4A file", (b"ftyp",)),
    ".mov": BinaryType("video/quicktime", "a QuickTime file", (b"ftyp",)),
    ".woff2": BinaryType("font/woff2", "a WOFF2 font", (b"wOF2",)),
    ".woff": BinaryType("font/woff", "a WOFF font", (b"wOFF",)),
    ".bin": BinaryType("application/octet-stream", "binary data", ()),
}
"""Binary file types by extension; text is never stored under these names."""

_EXTENSION_FOR_MIME: Final = {
    binary.mime_type: extension
    for extension, binary in reversed(list(BINARY_TYPES.items()))
    if extension != ".bin"
}

_TEXT_MIME_EXTENSIONS: Final = {
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/html": ".html",
    "text/csv": ".csv",
    "application/json": ".json",
    "image/svg+xml": ".svg",
}

_FENCE_KEPT_EXTENSIONS: Final = frozenset({".md", ".markdown", ".mdx", ".txt", ".rst", ""})
"""Text whose content may legitimately be one code block: a fence around it is kept."""


def identify(data: bytes) -> str | None:
    """A description of ``data`` by its leading bytes (``"a JPEG image"``), else ``None``."""
    for binary in BINARY_TYPES.values():
        if binary.signatures and binary.matches(data):
            return binary.description
    return None


def _binary_reason(name: str, binary: BinaryType, data: bytes, origin: str) -> str:
    found = identify(data)
    start = data[:8].hex(" ").upper()
    what = f"are {found}" if found else f"start with {start or 'nothing'}"
    return (
        f"the content for {name!r} is not {binary.description}: its {len(data)} bytes"
        f"{origin} {what}"
    )


@attrs.frozen
class FileContent:
    """File content ready to store: the (possibly completed) name, the bytes and a MIME type or ``None``."""

    name: str
    data: bytes = attrs.field(repr=lambda d: f"<{len(d)} bytes>")
    mime_type: str | None = None


def _decode_data_uri(text: str, name: str) -> tuple[bytes, str | None] | None:
    match = _DATA_URI_RE.match(text)
    if not match:
        return None
    mime = match.group("mime").lower() if match.group("mime") else None
    payload = match.group("data")
    if match.group("b64"):
        data = _decode_base64(payload)
        if data is None:
            raise InvalidInput(
                f"the content for {name!r}: got a data: URI whose base64 part is not valid "
                f"base64 ({preview(payload)}); accepted: data:<type>;base64,<base64>; "
                "example: data:image/png;base64,iVBORw0KGgo..."
            )
        return data, mime
    return unquote_to_bytes(payload), mime


def _decode_base64(text: str) -> bytes | None:
    # MIME base64 is wrapped with line breaks only: words separated by spaces
    # on one line ("just some text") are prose, not base64.
    if re.search(r"\S[ \t]+\S", text):
        return None
    compact = re.sub(r"\s+", "", text)
    if not compact or not _BASE64_RE.match(compact):
        return None
    compact = compact.rstrip("=")
    if len(compact) % 4 == 1:
        return None
    padded = compact + "=" * (-len(compact) % 4)
    try:
        if "-" in padded or "_" in padded:
            return base64.urlsafe_b64decode(padded)
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None


def _json_bytes(value: object, name: str) -> bytes:
    if value_depth_exceeds(value):
        raise refusal(
            f"the content for {name!r}",
            value,
            f"JSON values with arrays and objects nested at most {MAX_JSON_DEPTH} deep",
            '{"a": {"b": [1, 2]}}',
        )
    try:
        text = json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    except (TypeError, ValueError, RecursionError) as exc:
        raise refusal(
            f"the content for {name!r}",
            value,
            "JSON values (objects, arrays, strings, finite numbers, true/false/null)",
            '{"a": 1}',
        ) from exc
    return encode_text(text, f"the content for {name!r}")


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _delimited_bytes(rows: object, name: str, delimiter: str) -> bytes:
    example = '[["region", "revenue"], ["North", 61]] or [{"region": "North", "revenue": 61}]'
    accepted = "a list of rows (lists of cells) or a list of objects (one per row)"
    if not isinstance(rows, list | tuple) or not rows:
        raise refusal(f"the content for {name!r}", rows, accepted, example)
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\r\n")
    if all(isinstance(row, Mapping) for row in rows):
        header: list[str] = []
        for row in rows:
            assert isinstance(row, Mapping)
            header.extend(str(key) for key in row if str(key) not in header)
        writer.writerow(header)
        for row in rows:
            assert isinstance(row, Mapping)
            by_name = {str(k): v for k, v in row.items()}
            writer.writerow([_cell(by_name.get(column)) for column in header])
    elif all(isinstance(row, list | tuple) for row in rows):
        for row in rows:
            assert isinstance(row, list | tuple)
            writer.writerow([_cell(cell) for cell in row])
    else:
        raise refusal(f"the content for {name!r}", rows, accepted, example)
    return encode_text(buffer.getvalue(), f"the content for {name!r}")


_JSON_EXAMPLE: Final = 'example: {"a": 1}'


def _check_json_text(text: str, name: str, origin: str) -> None:
    try:
        load_json(text)
    except ValueError as exc:
        raise InvalidInput(
            f"the content for {name!r}: got text{origin} that is not JSON ({exc}): "
            f"{preview(text)}; accepted: one JSON value (RFC 8259), as text, as an object or "
            f"list, or as base64 / a data: URI of UTF-8 JSON; {_JSON_EXAMPLE}"
        ) from exc


def _check_json_lines(text: str, name: str, origin: str) -> None:
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            load_json(line)
        except ValueError as exc:
            raise InvalidInput(
                f"the content for {name!r}: got text{origin} whose line {number} is not JSON "
                f"({exc}): {preview(line)}; accepted: one JSON value per line (JSON Lines), "
                'or a list of values; example: {"a": 1}\\n{"a": 2}'
            ) from exc


def is_text_name(name: str) -> bool:
    """Whether ``name``'s extension names a text format (:data:`TEXT_EXTENSIONS`).

    Also true for extensions Python's built-in MIME table (:mod:`mimetypes`,
    without the system's files) maps to a text type
    (:func:`~docbinder.domain.mime.is_textual_mime`), such as ``.py`` or ``.vcf``.
    """
    _stem, extension = split_extension(name)
    if not extension or extension in BINARY_TYPES:
        return False
    if extension in TEXT_EXTENSIONS:
        return True
    guessed, _encoding = _BUILTIN_MIME_TYPES.guess_type(f"x{extension}", strict=False)
    return guessed is not None and is_textual_mime(guessed)


def _checked_text(name: str, text: str, origin: str = "", *, whole: bool = True) -> bytes:
    """The UTF-8 bytes of ``text`` for ``name``, after the checks of the name's text type.

    A text name (:func:`is_text_name`) refuses NUL characters; ``.json`` text
    must be strict JSON (:func:`load_json`; only when ``whole``, not for a part
    appended) and each non-empty line of ``.jsonl``/``.ndjson`` text too.
    """
    what = f"the content for {name!r}"
    data = encode_text(text, what)
    if not is_text_name(name):
        return data
    nul = text.find("\x00")
    if nul >= 0:
        raise InvalidInput(
            f"{what}: got text{origin} with a NUL character at character {nul}: "
            f"{preview(text)}; a {split_extension(name)[1]} file is text, and text holds no NUL "
            "(it would be stored as binary data, unreadable as text); accepted: text without "
            'NUL, or name the file .bin for binary data; example: "hello"'
        )
    _stem, extension = split_extension(name)
    if extension in JSON_EXTENSIONS and whole:
        _check_json_text(text, name, origin)
    elif extension in JSON_LINES_EXTENSIONS:
        _check_json_lines(text, name, origin)
    return data


def checked_text_bytes(name: str, data: bytes, origin: str = "", *, whole: bool = True) -> bytes:
    """``data`` for ``name``: for a text name (:func:`is_text_name`) it must be UTF-8 text.

    The text must then pass the checks of the name's type: no NUL character;
    strict JSON for ``.json`` when ``whole`` (``False`` for a part appended to a
    file); JSON on each non-empty line of ``.jsonl``/``.ndjson``. ``origin``
    (``" (the text 'SGVsbG8=' read as base64)"``) goes into messages. Other names take any
    bytes. Raises :class:`InvalidInput` with what was received, what is
    accepted and an example.
    """
    if not is_text_name(name):
        return data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        found = identify(data)
        what = f", they are {found}" if found else ""
        raise InvalidInput(
            f"the content for {name!r} is not UTF-8 text: its {len(data)} bytes{origin} have "
            f"byte 0x{data[exc.start]:02X} at position {exc.start}, which is not UTF-8{what}; "
            f"a {split_extension(name)[1]} file is text; accepted: UTF-8 text, as text or as "
            "base64 / a data: URI of UTF-8 bytes, or a name with the extension of the bytes' "
            "type; example: data:text/plain;base64,aGVsbG8="
        ) from exc
    _checked_text(name, text, origin, whole=whole)
    return data


def coerce_file_content(name: str, content: object) -> FileContent:
    """Bytes to store for ``write_file`` under ``name`` (a name from :func:`coerce_file_name`).

    By the name's extension (case-insensitive):

    * ``.json``: a dict, list, number, boolean or ``None`` is serialised as
      JSON (UTF-8, indented by 2, RFC 8259); text must parse as JSON;
    * ``.jsonl``/``.ndjson``: a list is written one JSON value per line;
    * ``.csv``/``.tsv``: a list of rows (lists of cells) or of objects (the
      header is the union of their keys, in first-seen order) is written as
      RFC 4180 rows (CRLF line ends; ``None`` as an empty cell);
    * a binary type (:data:`BINARY_TYPES`): bytes, a ``data:`` URI (RFC 2397)
      or a base64 string (standard or URL-safe alphabet, padding optional) is
      decoded and its leading bytes must match the type, else
      :class:`InvalidInput` gives the reason (``its 3 bytes are a JPEG image``);
      other text is refused, never stored;
    * any other name: text is stored as UTF-8 as given; a ``data:`` URI is
      decoded; a dict or list is refused (name the file ``.json``).

    Whatever shape the content arrives in (text, bytes, base64 decoded by the
    tool set, a ``data:`` URI), the bytes are then checked against the name:
    ``.json`` must be strict JSON (:func:`load_json`: no ``NaN``/``Infinity``,
    at most :data:`MAX_JSON_DEPTH` levels, numbers of at most
    :data:`MAX_JSON_NUMBER_DIGITS` digits), each non-empty line of ``.jsonl``/
    ``.ndjson`` too, and a text name (:func:`is_text_name`: ``.md``, ``.txt``,
    ``.csv``, ...) must be UTF-8 without NUL characters — a NUL makes text
    binary to every reader (POSIX defines a text file as one without NUL) and
    the file would be stored as ``application/octet-stream``. Text with a
    lone surrogate (``"\\ud800"``) is refused everywhere: UTF-8 cannot hold it.

    A name without an extension gets one when the content decides it: ``.json``
    for a dict or list, the type of a ``data:`` URI or of decoded bytes.
    A code fence around the whole text is removed (the text then ends with one
    newline) except for ``.md``, ``.markdown``, ``.mdx``, ``.rst``, ``.txt`` and
    names without an extension, whose content may be a code block; unfenced
    text is stored exactly as given. For binary names surrounding whitespace is
    removed as well. Raises :class:`InvalidInput`.
    """
    stem, extension = split_extension(name)
    if isinstance(content, bytearray | memoryview):
        content = bytes(content)
    if isinstance(content, Mapping | list | tuple) or (
        extension in JSON_EXTENSIONS and (content is None or isinstance(content, int | float))
    ):
        if not extension and isinstance(content, Mapping | list | tuple):
            return FileContent(f"{name}.json", _json_bytes(content, name), "application/json")
        if extension in JSON_EXTENSIONS:
            return FileContent(name, _json_bytes(content, name), "application/json")
        if extension in JSON_LINES_EXTENSIONS and isinstance(content, list | tuple):
            lines = [_json_bytes(value, name).decode().strip() for value in content]
            compact = [json.dumps(json.loads(line), ensure_ascii=False) for line in lines]
            return FileContent(name, "".join(f"{line}\n" for line in compact).encode(), None)
        if extension in DELIMITED_EXTENSIONS:
            return FileContent(
                name, _delimited_bytes(content, name, DELIMITED_EXTENSIONS[extension])
            )
        raise refusal(
            f"the content for {name!r}",
            content,
            "text or bytes; objects and lists only for .json, .jsonl, .csv or .tsv names",
            f'name the file "{stem or "data"}.json" to store this as JSON',
        )
    if isinstance(content, bytes):
        return _binary_checked(name, extension, content, None)
    if not isinstance(content, str):
        raise refusal(
            f"the content for {name!r}",
            content,
            "text, bytes, a data: URI or base64 for binary types, objects/lists for .json/.csv",
            '"hello" or {"a": 1} for a .json name',
        )
    binary = BINARY_TYPES.get(extension)
    if binary is not None:
        text = strip_fence(content)
    elif extension not in _FENCE_KEPT_EXTENSIONS and fence_language(content) is not None:
        text = strip_fence(content) + "\n"
    else:
        text = content
    decoded = None
    if text.lstrip()[:5].lower() == "data:" and (binary is not None or ";base64," in text[:200]):
        decoded = _decode_data_uri(text.strip(), name)
    if decoded is not None:
        data, declared = decoded
        return _binary_checked(name, extension, data, declared, " (decoded from the data: URI)")
    if binary is not None:
        data_or_none = _decode_base64(text)
        if data_or_none is None:
            raise InvalidInput(
                f"the content for {name!r}: got plain text ({preview(content)}), but a "
                f"{extension} file is {binary.description} and text is not stored under that "
                "name; accepted: bytes, a data: URI or a base64 string of the file; "
                f"example: data:{binary.mime_type};base64,<base64 of the file>"
            )
        shown = text.strip()
        shown = shown if len(shown) <= 24 else shown[:21] + "..."
        return _binary_checked(
            name, extension, data_or_none, None, f" (the text {shown!r} read as base64)"
        )
    return FileContent(name, _checked_text(name, text), None)


def _binary_checked(
    name: str, extension: str, data: bytes, declared: str | None, origin: str = ""
) -> FileContent:
    """``data`` for ``name``, checked against the name's binary type; ``origin`` for messages."""
    binary = BINARY_TYPES.get(extension)
    if binary is not None:
        if not binary.matches(data):
            raise InvalidInput(
                f"{_binary_reason(name, binary, data, origin)}; accepted: the bytes of "
                f"{binary.description}, raw, base64 or as a data: URI; "
                f"example: data:{binary.mime_type};base64,<base64 of the file>"
            )
        return FileContent(name, data, binary.mime_type)
    if not extension:
        mime = declared
        if mime is None or mime not in _EXTENSION_FOR_MIME:
            for known in BINARY_TYPES.values():
                if known.signatures and known.matches(data):
                    mime = known.mime_type
                    break
        new_extension = _EXTENSION_FOR_MIME.get(mime or "") or _TEXT_MIME_EXTENSIONS.get(mime or "")
        if new_extension:
            return _binary_checked(name + new_extension, new_extension, data, declared, origin)
        return FileContent(name, data, None)
    if declared is not None and declared in _EXTENSION_FOR_MIME:
        raise InvalidInput(
            f"the content for {name!r}: got a data: URI of type {declared}, which does not "
            f"fit the name's extension {extension}; accepted: a name with the file's own "
            f"extension; example: {split_extension(name)[0]}{_EXTENSION_FOR_MIME[declared]}"
        )
    return FileContent(name, checked_text_bytes(name, data, origin), None)


# -- descriptions for tool schemas ------------------------------------------------------------


@attrs.frozen
class Shape:
    """One accepted shape of a tool argument: a short phrase and a tiny example value.

    ``example`` is a value as a model would send it (a JSON value); tests check
    that every example is accepted by the argument's published JSON schema and
    by the coercion above.
    """

    phrase: str
    example: object


@attrs.frozen
class ArgumentShapes:
    """The accepted shapes of one tool argument, and a note on defaults and refusals."""

    shapes: tuple[Shape, ...]
    note: str = ""

    @property
    def brief(self) -> str:
        """The phrases only, ``; ``-separated: for a tool's description."""
        return "; ".join(shape.phrase for shape in self.shapes)

    @property
    def described(self) -> str:
        """Each phrase with its example, then the note: for the argument's description."""
        listed = "; ".join(f"{s.phrase}, e.g. {show_example(s.example)}" for s in self.shapes)
        return f"{listed[:1].upper()}{listed[1:]}." + (f" {self.note}" if self.note else "")

    @property
    def examples(self) -> tuple[object, ...]:
        """The example values, in order."""
        return tuple(shape.example for shape in self.shapes)


def show_example(value: object) -> str:
    """``value`` as it appears in a description: compact JSON; a string with quotes in ``'...'``."""
    if isinstance(value, str) and '"' in value:
        return f"'{value}'"
    return json.dumps(value, ensure_ascii=False)


_ROWS: Final = [["region", "revenue"], ["North", 61]]
_CHARTJS: Final = {
    "type": "bar",
    "data": {"labels": ["N", "S"], "datasets": [{"label": "2026", "data": [61, 48]}]},
}

_NUMERIC_STRING: Final = 'A numeric string ("2") is read as the number.'

ARGUMENT_SHAPES: Final[Mapping[str, ArgumentShapes]] = {
    "create_chart.spec": ArgumentShapes(
        (
            Shape("a Chart.js config", _CHARTJS),
            Shape(
                "docbinder's own spec",
                {
                    "kind": "line",
                    "title": "Revenue",
                    "series": [{"name": "2026", "labels": ["Q1", "Q2"], "values": [61, 48]}],
                },
            ),
            Shape(
                "a Vega-Lite subset",
                {
                    "mark": "bar",
                    "data": {"values": [{"region": "N", "v": 61}, {"region": "S", "v": 48}]},
                    "encoding": {"x": {"field": "region"}, "y": {"field": "v"}},
                },
            ),
            Shape(
                "a Plotly subset",
                {"data": [{"type": "pie", "labels": ["N", "S"], "values": [61, 48]}]},
            ),
            Shape("a table", {"labels": ["N", "S"], "values": [61, 48]}),
            Shape("rows", [{"label": "N", "value": 61}, {"label": "S", "value": 48}]),
            Shape("any of these as JSON text", '{"labels": ["N", "S"], "values": [61, 48]}'),
        ),
        'Kinds: bar (also "column"), line, pie (also "doughnut"); numbers may be numeric '
        'strings ("61"); colours and other styling are ignored.',
    ),
    "create_chart.name": ArgumentShapes(
        (Shape("a file name (a directory part and .png are dropped)", "revenue"),),
        "Default: the chart's title.",
    ),
    "write_file.name": ArgumentShapes(
        (
            Shape("a file name with extension", "report.md"),
            Shape("one with a directory part, which is dropped", "out/report.md"),
            Shape("one without extension when the content decides it (an object: .json)", "data"),
        ),
        "A repeated extension (data.json.json) is kept once.",
    ),
    "write_file.content": ArgumentShapes(
        (
            Shape("text, stored as UTF-8", "# Notes\n"),
            Shape(
                "an object or array for a .json name, stored as JSON",
                {"region": "North", "revenue": 61},
            ),
            Shape("rows for a .csv or .tsv name", _ROWS),
            Shape("objects as rows", [{"region": "North", "revenue": 61}]),
            Shape(
                "for a binary name (.png, .jpg, .pdf, .docx, .xlsx, ...) a data: URI or the "
                "base64 of the file",
                "data:image/png;base64,iVBORw0KGgo=",
            ),
        ),
        "The bytes must match the name's type (PNG bytes for .png; strict JSON for .json, "
        "one JSON value per line for .jsonl, UTF-8 text without NUL for text names), else "
        "the call is refused with the reason; plain text under a binary name is refused, "
        "not stored.",
    ),
    "write_file.encoding": ArgumentShapes(
        (Shape('"base64" when base64 content is to be decoded under a text name', "base64"),),
        'Default "text"; binary names decode base64 and data: URIs without it.',
    ),
    "write_file.mode": ArgumentShapes(
        (Shape('"create" or "append", any case', "append"),), 'Default "create".'
    ),
    "write_file.file_id": ArgumentShapes(
        (Shape("for append: the file id to append to", "3f2c9a4e-5b1d-4c7e-9f0a-2d6b8e1c4a7f"),),
        "Default: the newest file of that name.",
    ),
    "render_document.markdown": ArgumentShapes(
        (Shape("Markdown text", "# Report\n\nRevenue grew."),),
        "A ```markdown fence around all of it is removed.",
    ),
    "render_document.name": ArgumentShapes(
        (
            Shape("a base file name", "report"),
            Shape(
                "one with a directory part or .md/.html/.pdf, which are dropped", "out/report.pdf"
            ),
        ),
    ),
    "render_document.formats": ArgumentShapes(
        (
            Shape("a list", ["pdf", "html"]),
            Shape("a comma- or space-separated string", "pdf, html"),
        ),
        "Formats: html, pdf; default html.",
    ),
    "render_document.title": ArgumentShapes(
        (Shape("a title", "Q3 report"),), "Default: the first heading."
    ),
    "generate_image.prompt": ArgumentShapes((Shape("what to draw, as text", "a red bicycle"),)),
    "generate_image.n": ArgumentShapes(
        (Shape("a number from 1 to 10", 2),), f"Default 1. {_NUMERIC_STRING}"
    ),
    "generate_image.size": ArgumentShapes(
        (Shape("<width>x<height> in pixels", "1024x1024"), Shape("auto", "auto")),
        "Default 512x512.",
    ),
    "generate_image.name": ArgumentShapes(
        (Shape("a base file name; files are named <name>-1.png, <name>-2.png, ...", "logo"),),
        'Default "image".',
    ),
    "read_file.max_chars": ArgumentShapes(
        (Shape("a number", 4000),), f"Default 100000. {_NUMERIC_STRING}"
    ),
    "replace_in_file.count": ArgumentShapes(
        (Shape("replace only the first N occurrences", 1),), "Default: every occurrence."
    ),
    "search_in_file_content.file_ids": ArgumentShapes(
        (
            Shape("a list of file ids", ["3f2c9a4e-5b1d-4c7e-9f0a-2d6b8e1c4a7f"]),
            Shape("one id, or ids separated by commas", "3f2c9a4e-..., 8d1b7c2f-..."),
        ),
        "Default (null): the files the tool description names.",
    ),
    "search_in_file_content.limit": ArgumentShapes(
        (Shape("a number", 20),), f"Default 50. {_NUMERIC_STRING}"
    ),
    "list_files.limit": ArgumentShapes((Shape("a number", 20),), f"Default 50. {_NUMERIC_STRING}"),
}
"""The accepted shapes per tool argument, keyed ``"<tool>.<argument>"``: the one source of the
argument descriptions in tool schemas (:data:`ACCEPTED_SHAPES`) and of the shape lists in tool
descriptions (:attr:`ArgumentShapes.brief`), so that a model gets the shape right the first time.
"""

ACCEPTED_SHAPES: Final[Mapping[str, str]] = {
    key: shapes.described for key, shapes in ARGUMENT_SHAPES.items()
}
"""Descriptions of the accepted shapes, keyed ``"<tool>.<argument>"``, each with examples.

Each is the ``description`` of that argument in the tool schemas of the shared
tool set (MCP, framework integrations), generated from :data:`ARGUMENT_SHAPES`.
"""
