"""File-level consuming tools (SPEC C10): read, edit, search, list, inspect.

They work on FileItems by file id, behind the same access decisions as every
use case (a file the caller may not read is reported as not found), create no
ChatMessage, and return domain entities or small attrs values, the same on
every backend.
"""

from __future__ import annotations

import codecs
import logging
from collections.abc import Iterator, Sequence
from typing import Final

import attrs

from docbinder.application.binder import Run
from docbinder.domain.errors import BlobMissing, InvalidInput
from docbinder.domain.mime import is_textual_mime
from docbinder.domain.model import ContentKind, ContentPart, FileItem
from docbinder.tools.arguments import coerce_int

log = logging.getLogger(__name__)

DEFAULT_MAX_CHARS: Final = 100_000
"""Default number of characters ``read_file`` returns."""

DEFAULT_SEARCH_LIMIT: Final = 50
"""Default number of matches ``search_in_file_content`` returns."""

MAX_EDIT_BYTES: Final = 10 << 20
"""Largest file ``replace_in_file`` edits, in bytes (10 MiB): the text is edited in memory."""

MAX_MATCH_LINE_CHARS: Final = 400
"""Longest line a search match shows; longer lines are cut around the match."""

_HTML_TYPES: Final = frozenset({"text/html", "application/xhtml+xml"})
_PDF_TYPE: Final = "application/pdf"


def _has_text(item: FileItem) -> bool:
    mime = item.mime_type.lower()
    return is_textual_mime(mime) or mime in _HTML_TYPES or mime == _PDF_TYPE


def _text_parts(run: Run, item: FileItem, max_chars: int | None = None) -> list[ContentPart]:
    """The text parts of a (readable) FileItem, through the binder's content extractor."""
    with run.binder.blobs.open(item.blob_key) as chunks:
        parts = run.binder.extractor.extract(item.id, item, chunks)
    return [p for p in parts if p.kind == ContentKind.TEXT and p.text is not None]


def read_file(run: Run, file_id: str, *, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The text of a readable file, at most ``max_chars`` characters.

    Plain text, Markdown, CSV, JSON and other text formats come back as stored
    (decoded); HTML as its visible text; PDF as the text of its pages, joined
    by a blank line. Text cut at ``max_chars`` (or at the extractor's limits)
    ends with the line ``[truncated after <n> characters]``.

    Errors: :class:`FileItemNotFound` (absent or not readable),
    :class:`InvalidInput` (a file without text, such as an image, or
    ``max_chars`` below 1), :class:`BlobMissing`, :class:`StorageError`.
    """
    max_chars = coerce_int(max_chars, "max_chars", minimum=1)
    item = run.get_file(file_id)
    parts = _text_parts(run, item, max_chars) if _has_text(item) else []
    if not parts:
        raise InvalidInput(
            f"file '{item.file_name}' ({item.mime_type}) has no text to read; read it with "
            f"read_documents and file:{item.id} (a file attached to the workflow)"
        )
    run.note_read([item.id])
    text = "\n\n".join(p.text or "" for p in parts)
    if len(text) > max_chars or any(p.truncated for p in parts):
        text = text[:max_chars]
        text += f"\n[truncated after {len(text)} characters]"
    return text


@attrs.frozen
class ReplaceResult:
    """Result of :func:`replace_in_file`: the updated FileItem, the count and the text for the model."""

    item: FileItem
    replacements: int
    text: str


def _short(value: str, limit: int = 80) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "…")


def replace_in_file(
    run: Run, file_id: str, old: str, new: str, *, count: int | None = None
) -> ReplaceResult:
    """Replace ``old`` by ``new`` in a UTF-8 text file the caller may update.

    Replaces every occurrence, or the first ``count``. The FileItem keeps its
    id and gets a new blob, size and SHA-256 through the same path as
    ``write_file`` append (:class:`~docbinder.application.steps.content_switch.ContentSwitch`, used by
    :class:`~docbinder.application.use_cases.replace_file_content.ReplaceFileContent`);
    no message is created. A UTF-8 byte order mark is kept. The text is::

        Replaced 2 occurrences in 'notes.md' (40 bytes)
          file id: <fileId>

    Errors: :class:`InvalidInput` (empty ``old``, ``old`` not found, a file
    that is not UTF-8 text, larger than :data:`MAX_EDIT_BYTES`, bad ``count``),
    :class:`FileItemNotFound`, :class:`AccessDenied` (no ``update`` right),
    :class:`Conflict` (changed meanwhile), :class:`BlobMissing`,
    :class:`StorageError`. On error nothing changes.
    """
    if not isinstance(old, str) or not old:
        raise InvalidInput("the text to replace must be a non-empty string")
    if not isinstance(new, str):
        raise InvalidInput("the replacement must be a string")
    if count is not None:
        count = coerce_int(count, "count", minimum=1)
    updater = run.binder.update_file
    item = updater.load_for_update(run.principal, file_id)
    mime = item.mime_type.lower()
    if not (is_textual_mime(mime) or mime in _HTML_TYPES):
        raise InvalidInput(
            f"file '{item.file_name}' ({item.mime_type}) is not a text file; only text can be edited"
        )
    if item.size > MAX_EDIT_BYTES:
        raise InvalidInput(
            f"file '{item.file_name}' has {item.size} bytes; at most {MAX_EDIT_BYTES} can be edited"
        )
    with run.binder.blobs.open(item.blob_key) as chunks:
        raw = _read_at_most(chunks, MAX_EDIT_BYTES, item)
    bom = codecs.BOM_UTF8 if raw.startswith(codecs.BOM_UTF8) else b""
    try:
        text = raw[len(bom) :].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"file '{item.file_name}' is not UTF-8 text; only UTF-8 text can be edited"
        ) from exc
    found = text.count(old)
    if found == 0:
        raise InvalidInput(
            f"the text {_short(old)} does not occur in '{item.file_name}'; nothing was changed"
        )
    replacements = found if count is None else min(found, count)
    edited = text.replace(old, new, -1 if count is None else count)
    updated = item
    if edited != text:
        updated = updater.replace(
            run.principal, item.id, bom + edited.encode("utf-8"), expected=item
        ).item
    plural = "" if replacements == 1 else "s"
    message = (
        f"Replaced {replacements} occurrence{plural} in '{updated.file_name}' "
        f"({updated.size} bytes)\n  file id: {updated.id}"
    )
    return ReplaceResult(updated, replacements, message)


def _read_at_most(chunks: Iterator[bytes], limit: int, item: FileItem) -> bytes:
    buffer = bytearray()
    for chunk in chunks:
        buffer += chunk
        if len(buffer) > limit:
            raise InvalidInput(
                f"file '{item.file_name}' has more than {limit} bytes; it cannot be edited"
            )
    return bytes(buffer)


@attrs.frozen
class SearchMatch:
    """One line of a file that contains the query.

    ``line_number`` counts from 1 within the file's extracted text (within the
    page for PDF, named by ``position``); ``line`` is the line without
    surrounding whitespace, cut to :data:`MAX_MATCH_LINE_CHARS` characters around
    the match.
    """

    file_id: str
    file_name: str
    line_number: int
    line: str
    position: str | None = None

    def __str__(self) -> str:
        where = (
            f"{self.position}, line {self.line_number}"
            if self.position
            else f"line {self.line_number}"
        )
        return f"'{self.file_name}' (file id {self.file_id}) {where}: {self.line}"


def _window(line: str, at: int, width: int) -> str:
    if len(line) <= width:
        return line
    start = max(0, min(at - width // 3, len(line) - width))
    cut = line[start : start + width]
    return ("…" if start > 0 else "") + cut + ("…" if start + width < len(line) else "")


def search_in_file_content(
    run: Run,
    query: str,
    *,
    file_ids: Sequence[str] | str | None = None,
    limit: int = DEFAULT_SEARCH_LIMIT,
) -> list[SearchMatch]:
    """Lines containing ``query`` (case-insensitive, Unicode case folding) in readable text files.

    Searches the files ``file_ids`` (each must be readable, else
    :class:`FileItemNotFound`), or every file the caller may read in its
    mandate, newest first. Only files with text are searched (text formats,
    HTML as visible text, PDF page text); a file whose content is missing from
    the blob store is skipped with a warning. Returns at most ``limit``
    matches, in file order, then line order.

    Errors: :class:`InvalidInput` (empty query, ``limit`` below 1),
    :class:`FileItemNotFound`, :class:`StorageError`.
    """
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("the search query must be non-empty text")
    limit = coerce_int(limit, "limit", minimum=1)
    if isinstance(file_ids, str):
        file_ids = [file_ids]
    items = run.list_files() if file_ids is None else [run.get_file(f) for f in file_ids]
    needle = query.casefold()
    matches: list[SearchMatch] = []
    for item in items:
        if not _has_text(item):
            continue
        try:
            parts = _text_parts(run, item)
        except BlobMissing:
            log.warning("search skipped file %s: blob %s is missing", item.id, item.blob_key)
            continue
        for part in parts:
            for number, line in enumerate((part.text or "").splitlines(), start=1):
                stripped = line.strip()
                at = stripped.casefold().find(needle)
                if at < 0:
                    continue
                shown = _window(stripped, at, MAX_MATCH_LINE_CHARS)
                matches.append(SearchMatch(item.id, item.file_name, number, shown, part.position))
                if len(matches) >= limit:
                    return matches
    return matches


def list_files(run: Run, *, limit: int | None = None) -> list[FileItem]:
    """FileItems the caller may read in its mandate, newest first, at most ``limit``."""
    return run.list_files(limit=limit)


def get_file_info(run: Run, file_id: str) -> FileItem:
    """The FileItem ``file_id``; :class:`FileItemNotFound` if absent or not readable."""
    return run.get_file(file_id)
