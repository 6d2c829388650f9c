"""File-level consuming tools (SPEC C10): read, edit, search, list, inspect.

They work on FileItems by file id, behind the same access decisions as every
use case (a file the caller may not read is reported as not found), create no
ChatMessage, and return domain entities or small attrs values, the same on
every backend.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
from collections.abc import Iterator, Sequence
from typing import Final

import attrs

from docbinder.application.binder import Run
from docbinder.application.steps.expiry import refuse_expired
from docbinder.application.use_cases.get_content import content_size
from docbinder.domain.errors import BlobMissing, InvalidInput
from docbinder.domain.mime import is_textual_mime
from docbinder.domain.model import ContentKind, ContentPart, FileItem
from docbinder.domain.reading import ReadCall, read_call, scope_key
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
_NO_TEXT_TYPES: Final = frozenset(
    {
        "application/octet-stream",
        "application/zip",
        "application/gzip",
        "application/x-tar",
        "application/x-7z-compressed",
    }
)


BLOB_MISSING_REASON: Final = "not searched: the stored bytes of this file are missing"
"""Why search skipped a file whose blob is gone (named, never a silent "no match")."""

EMPTY_FILE_LINE: Final = "[empty file: 0 bytes]"
"""What reading an empty file answers, so it is never mistaken for a failed read."""


def _has_text(item: FileItem) -> bool:
    """Whether the content extractor may find text in ``item``: every type but bare binaries.

    Text formats, HTML, PDF, the office formats the extractor converts
    (``.docx``, ``.xlsx``, ``.pptx``, ODF, RTF, e-mail) and images (read by
    OCR where the ``ocr`` extra is installed); ``application/octet-stream``,
    archives, audio and video are not handed to it.
    """
    mime = item.mime_type.lower()
    if is_textual_mime(mime) or mime in _HTML_TYPES or mime == _PDF_TYPE:
        return True
    return mime not in _NO_TEXT_TYPES and not mime.startswith(("audio/", "video/"))


def tool_read_call(run: Run) -> contextlib.AbstractContextManager[ReadCall]:
    """The read call of a tool call by ``run``'s principal (its budget, its cache scope).

    The budget is the binder's (``call_*`` settings, ADR 0071); inside an
    enclosing read call that call is used.
    """
    principal = run.principal
    return read_call(
        run.binder.get_content.limits,
        scope=scope_key(principal.mandate_id, principal.user_id, principal.feature_instance_id),
    )


def _all_parts(run: Run, item: FileItem) -> list[ContentPart]:
    """The parts of a (readable) FileItem, through the binder's content extractor."""
    with tool_read_call(run), run.binder.blobs.open(item.blob_key) as chunks:
        return run.binder.extractor.extract(item.id, item, chunks)


def _texts(parts: list[ContentPart]) -> list[ContentPart]:
    return [p for p in parts if p.kind == ContentKind.TEXT and p.text is not None]


def _text_parts(run: Run, item: FileItem, max_chars: int | None = None) -> list[ContentPart]:
    """The text parts of a (readable) FileItem, through the binder's content extractor."""
    return _texts(_all_parts(run, item))


def read_file(run: Run, file_id: str, *, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The text of a readable file, at most ``max_chars`` characters.

    Plain text, Markdown, CSV, JSON and other text formats come back as stored
    (decoded); HTML as its visible text; PDF as the text of its pages, joined
    by a blank line; the office formats (``.docx``, ``.xlsx``, ``.pptx``, ODF)
    as the extractor's Markdown; an image as its OCR text where the ``ocr``
    extra is installed. Text cut at ``max_chars`` (or at the extractor's
    limits) ends with the line ``[truncated after <n> characters]``; an empty
    file reads as the line ``[empty file: 0 bytes]``.

    Errors: :class:`FileItemNotFound` (absent or not readable),
    :class:`~docbinder.domain.errors.FileExpired` (past its retention period),
    :class:`InvalidInput` (a file without text, such as an image, or
    ``max_chars`` below 1), :class:`BlobMissing`, :class:`StorageError`.
    """
    max_chars = coerce_int(max_chars, "max_chars", minimum=1)
    item = run.get_file(file_id)
    run.binder.retention.refuse_expired(item)
    with tool_read_call(run) as call:
        extracted = _all_parts(run, item) if _has_text(item) else []
        parts = _texts(extracted)
        call.spend(content_size(parts), len(parts))
    if not parts:
        why = next((p.note for p in extracted if p.note), None)
        image = any(p.kind is ContentKind.IMAGE for p in extracted)
        if why is not None and not image:  # not converted now: say why (busy, time budget)
            raise InvalidInput(f"file '{item.file_name}' was not read: {why}")
        raise InvalidInput(
            f"file '{item.file_name}' ({item.mime_type}) has no text to read; read it with "
            f"read_documents and file:{item.id} (a file attached to the workflow)"
        )
    run.note_read([item.id])
    text = "\n\n".join(p.text or "" for p in parts)
    if item.size == 0:
        return EMPTY_FILE_LINE
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


@attrs.frozen
class UnsearchedFile:
    """A file the search did not read (wholly): its id, name and why (a sentence)."""

    file_id: str
    file_name: str
    reason: str


@attrs.frozen
class SearchReport:
    """What :func:`search_files` found: ``matches`` and the files it did not (wholly) search."""

    matches: list[SearchMatch]
    unsearched: tuple[UnsearchedFile, ...] = ()


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
    mandate, newest first. Every file the content extractor reads text from is
    searched (text formats, HTML as visible text, PDF page text, the office
    formats as Markdown, images by OCR where installed); a file whose content is missing from
    the blob store is skipped with a warning. Returns at most ``limit``
    matches, in file order, then line order. The search is one read call
    (its budget, ADR 0071): :func:`search_files` also says which files it did
    not search.

    Errors: :class:`InvalidInput` (empty query, ``limit`` below 1),
    :class:`FileItemNotFound`, :class:`StorageError`.
    """
    return search_files(run, query, file_ids=file_ids, limit=limit).matches


def search_files(
    run: Run,
    query: str,
    *,
    file_ids: Sequence[str] | str | None = None,
    limit: int = DEFAULT_SEARCH_LIMIT,
) -> SearchReport:
    """:func:`search_in_file_content` with the files it did not search, and why.

    The whole search is one read call: the call's time budget is shared by
    every file it converts (a slow PDF gets what is left, not a fresh
    budget), the text it reads counts against the call's bytes and parts, and
    files with the same bytes as one already searched are not converted
    again. Once a budget is spent, the remaining files are listed in
    ``unsearched`` with the reason; so is a file whose text was cut (searched
    only in part). Errors as :func:`search_in_file_content`.
    """
    with tool_read_call(run) as call:
        return _search(run, query, file_ids, limit, call)


def _search(
    run: Run,
    query: str,
    file_ids: Sequence[str] | str | None,
    limit: int,
    call: ReadCall,
) -> SearchReport:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("the search query must be non-empty text")
    limit = coerce_int(limit, "limit", minimum=1)
    if isinstance(file_ids, str):
        file_ids = [file_ids]
    items = run.list_files() if file_ids is None else [run.get_file(f) for f in file_ids]
    expired = run.binder.retention.expired_among(items)
    if file_ids is not None:  # a file asked for by id and past its period: FileExpired (B5)
        for item in items:
            refuse_expired(item, expired.get(item.id))
    items = [i for i in items if i.id not in expired]  # past their period: not served
    needle = query.casefold()
    matches: list[SearchMatch] = []
    unsearched: list[UnsearchedFile] = []
    read: dict[tuple[str, str], list[ContentPart]] = {}
    for item in items:
        if not _has_text(item):
            continue
        same = read.get((item.sha256, item.mime_type))
        if same is not None:
            parts = same
        else:
            stop = call.stop_reason()
            if stop is not None:
                unsearched.append(UnsearchedFile(item.id, item.file_name, stop))
                continue
            try:
                parts = _all_parts(run, item)
            except BlobMissing:
                log.warning("search skipped file %s: blob %s is missing", item.id, item.blob_key)
                unsearched.append(UnsearchedFile(item.id, item.file_name, BLOB_MISSING_REASON))
                continue
            call.spend(content_size(parts), len(parts))
            read[(item.sha256, item.mime_type)] = parts
        cut = next((p.truncated_reason for p in parts if p.truncated_reason), None)
        if not _texts(parts) and any(p.kind is not ContentKind.TEXT for p in parts):
            why = next((p.note for p in parts if p.note), None) or cut or "it gave no text"
            unsearched.append(UnsearchedFile(item.id, item.file_name, f"not searched: {why}"))
        elif cut is not None:
            unsearched.append(
                UnsearchedFile(item.id, item.file_name, f"searched only in part: {cut}")
            )
        for part in _texts(parts):
            for number, line in enumerate((part.text or "").splitlines(), start=1):
                stripped = line.strip()
                at = stripped.casefold().find(needle)
                if at < 0:
                    continue
                shown = _window(stripped, at, MAX_MATCH_LINE_CHARS)
                matches.append(SearchMatch(item.id, item.file_name, number, shown, part.position))
                if len(matches) >= limit:
                    return SearchReport(matches, tuple(unsearched))
    return SearchReport(matches, tuple(unsearched))


def list_files(run: Run, *, limit: int | None = None) -> list[FileItem]:
    """FileItems the caller may read in its mandate, newest first, at most ``limit``."""
    return run.list_files(limit=limit)


def get_file_info(run: Run, file_id: str) -> FileItem:
    """The FileItem ``file_id``; :class:`FileItemNotFound` if absent or not readable."""
    return run.get_file(file_id)
