"""Turn a stored file's bytes into :class:`~docbinder.domain.model.ContentPart` values (SPEC C8).

:class:`DefaultContentExtractor` implements
:class:`~docbinder.ports.extractor.ContentExtractor` with the standard library
and, for documents (PDF, Office, OpenDocument, EPUB, RTF, e-mail) and encoding
detection, the libraries of the ``[extract]`` extra
(``pip install -e '.[extract]'`` in a clone), run in a resource-limited child process.

Log lines (logger ``docbinder.adapters.extract.extractor``), stable for
monitoring (SPEC C16):

* WARNING ``content extraction failed for document <id> (<mime>): <error>``: a
  file could not be read as its type (corrupt PDF, ``pypdf`` not installed,
  broken markup); the document is returned as a binary part instead.
* INFO ``content of document <id> (<mime>) truncated: <reason>``: a size limit
  cut the content.
"""

from __future__ import annotations

import codecs
import contextvars
import functools
import logging
import tempfile
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as distribution_version
from typing import IO, Final

import attrs
from attrs import evolve

from docbinder.adapters.extract.convert import MAX_SHEET_ROWS, Limits, Section, renderer_problem
from docbinder.adapters.extract.encoding import DETECT_BYTES, TextEncoding, choose_encoding
from docbinder.adapters.extract.isolation import (
    ConverterSlots,
    Outcome,
    converter_slots,
    default_max_processes,
    run_inline,
    run_isolated,
)
from docbinder.adapters.extract.mime import (
    DOCX,
    EMPTY_FILE_EXTENSIONS,
    EPUB,
    ODS,
    ODT,
    PPTX,
    XLS,
    XLSX,
)
from docbinder.adapters.extract.ocr import TesseractRecognizer
from docbinder.domain.errors import InvalidInput
from docbinder.domain.mime import is_textual_mime, mime_essence
from docbinder.domain.model import (
    MAX_LISTED_PAGES,
    ContentKind,
    ContentPart,
    FileItem,
    PageCoverage,
)
from docbinder.domain.reading import current_read_call
from docbinder.ports.extractor import Extraction, TextRecognizer

logger = logging.getLogger(__name__)

DEFAULT_MAX_BYTES: Final = 50 * 1024 * 1024
"""Default limit of bytes read from one file (50 MiB)."""

DEFAULT_MAX_TEXT_CHARS: Final = 2_000_000
"""Default limit of characters of text returned for one file."""

DEFAULT_MAX_PAGES: Final = 500
"""Default limit of pages, sheets or slides converted from one document."""

DEFAULT_MAX_DECODED_BYTES: Final = 256 * 1024 * 1024
"""Default limit of decompressed bytes (content streams, package members) per document (256 MiB)."""

DEFAULT_MAX_ROWS: Final = MAX_SHEET_ROWS
"""Default limit of workbook rows (empty ones included) read from one spreadsheet."""

DEFAULT_TIME_BUDGET: Final = 30.0
"""Default seconds one document's conversion may take."""

DEFAULT_MEMORY_BYTES: Final = 2 * 1024 * 1024 * 1024
"""Default address-space cap of a converter process (2 GiB)."""

DEFAULT_QUEUE_SECONDS: Final = 10.0
"""Default seconds a document waits for a free converter process before it is refused."""

EXTRACTOR_REVISION: Final = 6
"""Bumped whenever this module changes what it returns for the same bytes (cache key)."""

DEFAULT_OCR: Final = TesseractRecognizer()
"""The OCR engine a :class:`DefaultContentExtractor` uses unless told otherwise (English)."""

OCR_IMAGE_TYPES: Final = frozenset(
    {"image/png", "image/jpeg", "image/tiff", "image/webp", "image/bmp", "image/gif"}
)
"""Image types read by OCR (Pillow decodes them); other images give their image part only."""

_PAGED: Final = frozenset({"pdf", "image"})
"""Converters whose sections are pages with a ``layer`` (coverage is reported)."""

_HTML_TYPES: Final = frozenset({"text/html", "application/xhtml+xml"})

FORMATS: Final[dict[str, str]] = {
    "application/pdf": "pdf",
    DOCX: "docx",
    PPTX: "pptx",
    XLSX: "xlsx",
    XLS: "xls",
    ODS: "ods",
    ODT: "odt",
    EPUB: "epub",
    "application/rtf": "rtf",
    "text/rtf": "rtf",
    "message/rfc822": "eml",
    "application/vnd.ms-outlook": "msg",
}
"""Converter name (:data:`~docbinder.adapters.extract.convert.CONVERTERS`) by MIME type."""

FORMAT_LABELS: Final[dict[str, str]] = {
    "pdf": "PDF",
    "docx": "Word document",
    "pptx": "PowerPoint deck",
    "xlsx": "Excel workbook",
    "xls": "Excel workbook",
    "ods": "OpenDocument spreadsheet",
    "odt": "OpenDocument text",
    "epub": "EPUB book",
    "rtf": "RTF document",
    "eml": "e-mail message",
    "msg": "Outlook message",
    "html": "HTML page",
    "image": "image",
}

_TRANSIENT_MARKERS: Final = ("time budget", "ended unexpectedly", "out of memory", "no converter")
"""Words of the reasons that depend on the moment (load, memory), not on the bytes."""

_UNSTORED: Final = frozenset({"crashed", "busy", "cancelled"})
"""Outcomes of the moment (a dead process, no free process, a caller gone): never cached."""


@attrs.define
class _Attempt:
    """What the conversions of one ``extract`` call met (read by :meth:`_verdict`)."""

    statuses: list[str] = attrs.field(factory=list)
    cut_short: bool = False
    no_process: bool = False
    fallback: str | None = None


_attempt: contextvars.ContextVar[_Attempt | None] = contextvars.ContextVar(
    "docbinder_extract_attempt", default=None
)

_VERSIONED_LIBRARIES: Final = (
    "pypdf",
    "markitdown",
    "mammoth",
    "python-pptx",
    "python-docx",
    "openpyxl",
    "xlrd",
    "odfpy",
    "defusedxml",
    "striprtf",
    "olefile",
    "charset-normalizer",
    "cryptography",
    "pypdfium2",
    "pillow",
)


class _BoundedStream:
    """Reads at most ``limit`` bytes from an iterator of chunks.

    After exhaustion ``over_limit`` tells whether the source held more than
    ``limit`` bytes (one chunk past the limit is pulled to find out). The
    source is closed (if it has ``close``) once reading stops, so a blob
    store's open file is released even when the extractor stops early.
    Exceptions raised by the source propagate unchanged.
    """

    def __init__(self, chunks: Iterator[bytes], limit: int) -> None:
        self._source = chunks
        self._limit = limit
        self.read_bytes = 0
        self.over_limit = False

    def __iter__(self) -> Iterator[bytes]:
        try:
            for chunk in self._source:
                if not chunk:
                    continue
                room = self._limit - self.read_bytes
                if room <= 0 or len(chunk) > room:
                    self.over_limit = True
                    if room > 0:
                        self.read_bytes += room
                        yield bytes(chunk[:room])
                    return
                self.read_bytes += len(chunk)
                yield bytes(chunk)
        finally:
            self.close()

    def close(self) -> None:
        """Close the source iterator if it can be closed."""
        close = getattr(self._source, "close", None)
        if callable(close):
            close()


class _TextCollector:
    """Accumulates decoded text up to ``max_chars`` characters."""

    def __init__(self, max_chars: int) -> None:
        self._max = max_chars
        self._pieces: list[str] = []
        self._length = 0
        self.truncated = False

    def add(self, text: str) -> None:
        """Append ``text``, cutting it at the limit and setting ``truncated`` if it overflows."""
        if not text or self.truncated:
            return
        room = self._max - self._length
        if len(text) > room:
            text = text[:room]
            self.truncated = True
        self._pieces.append(text)
        self._length += len(text)

    def text(self) -> str:
        """The collected text."""
        return "".join(self._pieces)


class _DecodedText:
    """Decodes a byte stream incrementally with the encoding :func:`choose_encoding` picks.

    The first :data:`~docbinder.adapters.extract.encoding.DETECT_BYTES` bytes
    (and the FileItem's MIME type, which may declare a ``charset``) decide the
    codec; a byte order mark is dropped. Undecodable bytes become U+FFFD. When
    the stream was cut at the byte limit an incomplete trailing sequence is
    dropped, not replaced. ``encoding`` is known once iteration has begun.
    """

    def __init__(self, stream: _BoundedStream, mime_type: str) -> None:
        self._stream = stream
        self._mime_type = mime_type
        self.encoding = TextEncoding("utf-8", False, "utf-8")

    def __iter__(self) -> Iterator[str]:
        chunks = iter(self._stream)
        head = b""
        whole = True  # the stream ended within the head, unless the loop breaks
        for chunk in chunks:
            head += chunk
            if len(head) >= DETECT_BYTES:
                whole = False
                break
        whole = whole and not self._stream.over_limit
        self.encoding = choose_encoding(head, self._mime_type, whole=whole)
        decoder = codecs.getincrementaldecoder(self.encoding.codec)(errors="replace")
        if head:
            yield decoder.decode(head)
        for chunk in chunks:
            yield decoder.decode(chunk)
        if not self._stream.over_limit:
            yield decoder.decode(b"", final=True)


class _VisibleTextParser(HTMLParser):
    """Collects the text a browser would show: no script/style, block elements on their own lines.

    The ``<title>`` becomes the first line. Whitespace is collapsed outside
    ``<pre>``/``<textarea>``; table cells are separated by a tab.
    """

    _SKIP: Final = frozenset({"script", "style", "template", "noscript"})
    _BLOCK: Final = frozenset(
        {
            "address", "article", "aside", "blockquote", "br", "caption", "dd", "details",
            "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form",
            "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "legend", "li", "main", "nav",
            "ol", "p", "pre", "section", "summary", "table", "tbody", "textarea", "tfoot",
            "thead", "title", "tr", "ul", "body", "html",
        }
    )  # fmt: skip
    _CELL: Final = frozenset({"td", "th"})
    _PRESERVE: Final = frozenset({"pre", "textarea", "listing", "plaintext", "xmp"})

    def __init__(self, sink: _TextCollector) -> None:
        super().__init__(convert_charrefs=True)
        self._sink = sink
        self._skip_depth = 0
        self._in_title = False
        self._preserve_depth = 0
        self._line: list[str] = []
        self._lines_written = 0
        self._cell_open = False

    # -- tag events -------------------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._break()
            self._in_title = True
            return
        if tag in self._SKIP:
            self._skip_depth += 1
            return
        if tag in self._PRESERVE:
            self._break()
            self._preserve_depth += 1
        elif tag in self._BLOCK:
            self._break()
        elif tag in self._CELL:
            if self._cell_open:
                self._trim_line_end()
                self._line.append("\t")
            self._cell_open = True

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._BLOCK:
            self._break()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
            self._break()
            return
        if tag in self._SKIP:
            self._skip_depth = max(0, self._skip_depth - 1)
            return
        if tag in self._PRESERVE:
            self._break()
            self._preserve_depth = max(0, self._preserve_depth - 1)
        elif tag in self._BLOCK:
            self._break()

    def handle_data(self, data: str) -> None:
        if self._skip_depth and not self._in_title:
            return
        if self._preserve_depth:
            lines = data.split("\n")
            for index, line in enumerate(lines):
                if index:
                    self._break(keep_empty=True)
                self._line.append(line)
            return
        collapsed = " ".join(data.split())
        if data[:1].isspace():
            self._space()
        if collapsed:
            self._line.append(collapsed)
            if data[-1:].isspace():
                self._space()

    def parse_marked_section(self, i: int, report: bool = True) -> int:
        # Unknown ``<![keyword[`` sections make the standard parser raise
        # AssertionError; browsers treat them as bogus comments (WHATWG HTML §13.2.5.42).
        try:
            return super().parse_marked_section(i, report)
        except AssertionError:
            return self.parse_bogus_comment(i)

    # -- output -----------------------------------------------------------------------------
    def _space(self) -> None:
        """Add one separating space unless the line is empty or already ends in whitespace."""
        if self._line and not self._line[-1].endswith((" ", "\t")):
            self._line.append(" ")

    def _trim_line_end(self) -> None:
        while self._line and self._line[-1].endswith(" "):
            last = self._line.pop().rstrip(" ")
            if last:
                self._line.append(last)
                break

    def _break(self, keep_empty: bool = False) -> None:
        """End the current line; an empty line is written only inside preformatted text."""
        self._cell_open = False
        if self._preserve_depth:
            line = "".join(self._line).rstrip("\r")
        else:
            line = "".join(self._line).strip(" \t")
        self._line = []
        if not line and not keep_empty:
            return
        if self._lines_written:
            self._sink.add("\n")
        self._sink.add(line)
        self._lines_written += 1

    def finish(self) -> None:
        """Flush buffered markup and the last line."""
        self.close()
        self._break()


class DefaultContentExtractor:
    """:class:`~docbinder.ports.extractor.ContentExtractor` for text, HTML, PDF, Office, the rest.

    Decides by the essence of ``item.mime_type`` (sniffed when the file was stored):

    * textual types (``text/*``, JSON, XML, YAML and ``+json``/``+xml``
      suffixes, see :func:`~docbinder.domain.mime.is_textual_mime`)
      give one text part with the text as stored, decoded with the encoding
      :func:`~docbinder.adapters.extract.encoding.choose_encoding` picks (byte
      order mark, declared ``charset``, UTF-8, detected, Windows-1252); the
      part names the ``encoding`` and whether it was ``encoding_guessed``.
      Undecodable bytes become U+FFFD. JSON is returned as stored.
    * ``text/html`` and ``application/xhtml+xml`` give one text part: with
      ``html="markdown"`` (default) the page as Markdown (headings, lists,
      tables, links; no script/style) through markitdown's HTML converter in
      the converter process; with ``html="text"``, when the extra is missing,
      the conversion fails or the file is over ``max_bytes``, the visible text
      by the built-in parser (title first, one line per block). ADR 0019
      records the measurement behind the default.
    * documents (:data:`FORMATS`: PDF, Word ``.docx``, Excel ``.xlsx``/``.xls``,
      OpenDocument ``.odt``/``.ods``, PowerPoint ``.pptx``, EPUB, RTF, e-mail
      ``.eml``/``.msg``) are converted by the libraries of the ``[extract]``
      extra (:mod:`~docbinder.adapters.extract.convert`): one text part per
      page (PDF, ``position="page N"``), sheet (``"sheet N: <name>"``) or slide
      (``"slide N"``, with speaker notes), else one part with the document as
      Markdown. Without the library, a failed conversion or no text at all,
      one binary part with the bytes and a ``note`` (also in ``text``) saying
      why, e.g. which extra adds the format.
    * ``image/*`` gives one image part with the bytes; PNG, JPEG, TIFF, WebP,
      BMP and GIF images (:data:`OCR_IMAGE_TYPES`) are also read by ``ocr``
      in the converter process: a text part (``ocr=True``, ``ocr_engine``,
      ``ocr_confidence``) follows the image part when it finds text (one per
      page of a multi-page TIFF).
    * anything else gives one binary part with the bytes.

    Scans: a PDF page without a text layer (or with an image and a stamp of
    fewer than 20 characters) is rendered and read by ``ocr`` (a
    :class:`~docbinder.ports.extractor.TextRecognizer`, default
    :data:`DEFAULT_OCR`, Tesseract with English; ``None`` turns OCR off) under
    the same page, time and memory budgets. Every part of a PDF or an image
    carries ``coverage`` (:class:`~docbinder.domain.model.PageCoverage`: pages
    read from the text layer, by OCR, with nothing, not reached), and pages
    that gave nothing are named in the first part's ``note`` with the reason
    (e.g. which extra adds OCR). OCR output is cached like any conversion.

    Limits (all per document): ``max_bytes`` bytes read (default 50 MiB);
    ``max_text_chars`` characters of text (default 2,000,000, over all
    parts); ``max_pages`` pages, sheets or slides (default 500); ``max_rows``
    workbook rows, empty ones included (default 100,000);
    ``max_decoded_bytes`` bytes of decompressed content (PDF content
    streams, ZIP package members; default 256 MiB, a zip bomb is refused
    unopened); ``time_budget`` seconds of conversion (default 30.0). A cut
    part has ``truncated=True`` and ``truncated_reason``; the reason is
    logged. With ``isolate`` (default) documents are converted in a child
    process (:func:`~docbinder.adapters.extract.isolation.run_isolated`) that
    is killed at the time budget and whose address space is capped at
    ``memory_bytes`` (default 2 GiB, ``None``: no cap); without it they are
    converted in the calling thread and the budget is checked between pages.

    Concurrency: at most ``max_processes`` conversions run at once in this
    process (default :func:`~docbinder.adapters.extract.isolation.default_max_processes`:
    one per core, no more than the machine's memory holds at ``memory_bytes``
    each; extractors with the same number share one bound). A document waits
    up to ``queue_seconds`` (default 10.0) for a free converter; after that it
    is refused: a binary part whose note says all converters are busy and
    names the setting (not cached). Within a read call
    (:func:`~docbinder.domain.reading.current_read_call`) the time budget is
    cut to what the call has left, the wait too, and a cancelled call kills
    the converter at once.

    Caching (:meth:`extract_with_verdict`): a conversion that finished is
    ``complete``; one stopped by its own full time budget is ``partial``
    (stored, marked, with the budget it had); the HTML visible-text fallback
    after the Markdown converter failed is a ``fallback`` and says so in its
    ``note``; after a crash, a busy refusal, a cancellation or a budget the
    read call cut short nothing is stored.

    Memory: text is decoded chunk by chunk and reading stops at the limits;
    image and binary data are held in memory up to ``max_bytes``; documents
    are spooled to a temporary file.

    Raises :class:`~docbinder.domain.errors.InvalidInput` for limits below 1.
    ``extract`` raises only what the ``chunks`` iterator raises (storage
    faults such as :class:`~docbinder.domain.errors.BlobMissing`); content
    problems and converter crashes never raise.
    """

    def __init__(
        self,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
        *,
        max_pages: int = DEFAULT_MAX_PAGES,
        max_rows: int = DEFAULT_MAX_ROWS,
        max_decoded_bytes: int = DEFAULT_MAX_DECODED_BYTES,
        time_budget: float = DEFAULT_TIME_BUDGET,
        isolate: bool = True,
        memory_bytes: int | None = DEFAULT_MEMORY_BYTES,
        html: str = "markdown",
        ocr: TextRecognizer | None = DEFAULT_OCR,
        max_processes: int | None = None,
        queue_seconds: float = DEFAULT_QUEUE_SECONDS,
    ) -> None:
        for name, value in (
            ("max_bytes", max_bytes),
            ("max_text_chars", max_text_chars),
            ("max_pages", max_pages),
            ("max_rows", max_rows),
            ("max_decoded_bytes", max_decoded_bytes),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidInput(f"{name} must be a positive integer, got {value!r}")
        if (
            not isinstance(time_budget, int | float)
            or isinstance(time_budget, bool)
            or not (time_budget > 0)
        ):
            raise InvalidInput(
                f"time_budget must be a positive number of seconds, got {time_budget!r}"
            )
        self.max_bytes = max_bytes
        self.max_text_chars = max_text_chars
        self.max_pages = max_pages
        self.max_rows = max_rows
        self.max_decoded_bytes = max_decoded_bytes
        self.time_budget = float(time_budget)
        if html not in {"markdown", "text"}:
            raise InvalidInput(f"html must be 'markdown' or 'text', got {html!r}")
        if (
            not isinstance(queue_seconds, int | float)
            or isinstance(queue_seconds, bool)
            or not (0 <= queue_seconds < float("inf"))
        ):
            raise InvalidInput(
                f"queue_seconds must be a finite number of seconds >= 0, got {queue_seconds!r}"
            )
        self.max_processes = (
            default_max_processes(memory_bytes) if max_processes is None else max_processes
        )
        self.slots: ConverterSlots = converter_slots(self.max_processes)
        self.queue_seconds = float(queue_seconds)
        self.isolate = isolate
        self.memory_bytes = memory_bytes
        self.html = html
        self.ocr = ocr

    @property
    def version(self) -> str:
        """Identifies what this extractor returns for given bytes (the extraction cache key).

        ``docbinder-extract/<n>`` plus the versions of the installed converter
        libraries, the deterministic limits and the OCR engine with its
        languages (``ocr=none`` when OCR cannot run, so installing it later
        misses the entries written without it); the time budget is not part of
        it: an entry cut by the time budget records the budget it had, and an
        extractor with a larger one converts again (:meth:`extract_with_verdict`).
        """
        ocr = "none" if self.ocr_problem() is not None or self.ocr is None else self.ocr.engine
        return (
            f"docbinder-extract/{EXTRACTOR_REVISION};{_library_versions()};"
            f"limits={self.max_bytes},{self.max_text_chars},{self.max_pages},"
            f"{self.max_decoded_bytes},{self.max_rows};html={self.html};ocr={ocr}"
        )

    def ocr_problem(self, fmt: str = "pdf") -> str | None:
        """Why pages without a text layer cannot be read here, or ``None``.

        ``fmt`` is ``"pdf"`` (needs the PDF renderer too) or ``"image"``.
        """
        if self.ocr is None:
            return "OCR is turned off for this extractor"
        problem = self.ocr.problem()
        if problem is None and fmt == "pdf":
            problem = renderer_problem()
        return problem

    def may_cache(self, item: FileItem) -> bool:
        """Whether any extraction of ``item`` can be kept by a cache: its type is converted.

        Converted documents (:data:`FORMATS`), HTML and the image types OCR reads;
        plain text, JSON, CSV and unknown bytes are read directly each time and never
        stored, so :class:`~docbinder.application.steps.extraction_cache.CachingExtractor`
        does not look them up (:meth:`cacheable` and every verdict of
        :meth:`extract_with_verdict` are within this).
        """
        essence = mime_essence(item.mime_type)
        return essence in FORMATS or essence in _HTML_TYPES or essence in OCR_IMAGE_TYPES

    def cacheable(self, item: FileItem, parts: list[ContentPart]) -> bool:
        """Whether ``parts`` may be cached for ``item``'s bytes under :attr:`version`.

        Only converted documents (:data:`FORMATS`) and images read by OCR are
        worth caching; parts cut by the time budget or a crashed converter are
        not stored (another try may get further), nor parts carrying ``data``
        other than an image's own bytes (the cache keeps the OCR text and
        takes the image's bytes from the file again).
        """
        essence = mime_essence(item.mime_type)
        ocr_image = essence in OCR_IMAGE_TYPES and any(p.coverage for p in parts)
        if (
            FORMATS.get(essence) is None
            and not (self.html == "markdown" and essence in _HTML_TYPES)
            and not (ocr_image and self.ocr_problem("image") is None)
        ):
            return False
        for part in parts:
            if part.data is not None and not (ocr_image and part.kind is ContentKind.IMAGE):
                return False
            for remark in (part.truncated_reason, part.note):
                if remark is not None and any(m in remark for m in _TRANSIENT_MARKERS):
                    return False
        return True

    def extract(
        self, document_id: str, item: FileItem, chunks: Iterator[bytes]
    ) -> list[ContentPart]:
        """Return the content parts of one document; never an empty list.

        ``chunks`` streams the FileItem's bytes; it is read at most up to
        ``max_bytes`` (+ one chunk to detect a bigger file) and closed when
        reading stops. See the class documentation for the parts per type.
        """
        return self.extract_with_verdict(document_id, item, chunks).parts

    def extract_with_verdict(
        self, document_id: str, item: FileItem, chunks: Iterator[bytes]
    ) -> Extraction:
        """:meth:`extract`'s parts plus whether and how a cache may keep them.

        See :class:`~docbinder.ports.extractor.Extraction` for the verdicts and
        the class documentation for when each is given.
        """
        attempt = _Attempt()
        reset = _attempt.set(attempt)
        try:
            parts = self._extract(document_id, item, chunks)
        finally:
            _attempt.reset(reset)
        return self._verdict(item, parts, attempt)

    def _verdict(self, item: FileItem, parts: list[ContentPart], attempt: _Attempt) -> Extraction:
        if attempt.no_process or any(s in _UNSTORED for s in attempt.statuses):
            return Extraction(parts, "none")
        timed_out = "timeout" in attempt.statuses or any(
            r is not None and "time budget" in r for r in (p.truncated_reason for p in parts)
        )
        if timed_out:
            if attempt.cut_short or not self._storable(item, parts, allow_binary=True):
                return Extraction(parts, "none")
            reason = next(
                (p.truncated_reason for p in parts if p.truncated_reason),
                f"time budget of {self.time_budget:g} s spent",
            )
            return Extraction(parts, "partial", reason, self.time_budget)
        if attempt.fallback is not None:
            transient = any(m in attempt.fallback for m in _TRANSIENT_MARKERS)
            if transient or not self._storable(item, parts, allow_binary=False):
                return Extraction(parts, "none")
            return Extraction(parts, "fallback", attempt.fallback)
        return Extraction(parts, "complete" if self.cacheable(item, parts) else "none")

    def _storable(self, item: FileItem, parts: list[ContentPart], *, allow_binary: bool) -> bool:
        """Whether ``parts`` can be kept at all: a converted type, no data but the file's own."""
        essence = mime_essence(item.mime_type)
        converted = FORMATS.get(essence) is not None or essence in _HTML_TYPES
        ocr_image = essence in OCR_IMAGE_TYPES and any(p.coverage for p in parts)
        if not (converted or ocr_image):
            return False
        for part in parts:
            if part.data is None:
                continue
            whole = len(part.data) == item.size
            if not whole:
                return False
            if part.kind is ContentKind.BINARY and not allow_binary:
                return False
        return True

    def _extract(
        self, document_id: str, item: FileItem, chunks: Iterator[bytes]
    ) -> list[ContentPart]:
        mime = mime_essence(item.mime_type)
        stream = _BoundedStream(chunks, self.max_bytes)
        try:
            if mime in _HTML_TYPES:
                if self.html == "markdown":
                    return self._html_markdown(document_id, item, stream)
                return [self._html(document_id, item, stream)]
            fmt = FORMATS.get(mime)
            if fmt is not None:
                return self._document(document_id, item, stream, fmt)
            if is_textual_mime(mime):
                return [self._text(document_id, item, stream)]
            if mime in OCR_IMAGE_TYPES:
                return self._image(document_id, item, stream)
            kind = ContentKind.IMAGE if mime.startswith("image/") else ContentKind.BINARY
            return [self._blob(document_id, item, stream, kind)]
        finally:
            stream.close()

    # -- helpers ----------------------------------------------------------------------------
    def _part(
        self,
        document_id: str,
        item: FileItem,
        kind: ContentKind,
        *,
        text: str | None = None,
        data: bytes | None = None,
        position: str | None = None,
        truncated_reason: str | None = None,
        note: str | None = None,
        encoding: TextEncoding | None = None,
        section: Section | None = None,
        coverage: PageCoverage | None = None,
    ) -> ContentPart:
        ocr = section is not None and section.layer == "ocr"
        return ContentPart(
            document_id=document_id,
            file_name=item.file_name,
            mime_type=item.mime_type,
            kind=kind,
            text=text,
            data=data,
            size=item.size,
            position=position,
            truncated=truncated_reason is not None,
            truncated_reason=truncated_reason,
            note=note,
            encoding=encoding.codec if encoding is not None else None,
            encoding_guessed=encoding.guessed if encoding is not None else False,
            ocr=ocr,
            ocr_engine=section.ocr_engine if ocr and section is not None else None,
            ocr_confidence=section.ocr_confidence if ocr and section is not None else None,
            coverage=coverage,
        )

    def _too_big(self, item: FileItem) -> bool:
        return item.size > self.max_bytes

    @staticmethod
    def _log_truncated(document_id: str, item: FileItem, reason: str) -> None:
        logger.info(
            "content of document %s (%s) truncated: %s", document_id, item.mime_type, reason
        )

    @staticmethod
    def _log_failed(document_id: str, item: FileItem, error: object) -> None:
        logger.warning(
            "content extraction failed for document %s (%s): %s",
            document_id,
            item.mime_type,
            error,
        )

    def _truncation_reason(self, stream: _BoundedStream, collector: _TextCollector) -> str | None:
        if stream.over_limit:
            return f"file is larger than {self.max_bytes} bytes"
        if collector.truncated:
            return f"text is longer than {self.max_text_chars} characters"
        return None

    # -- text -------------------------------------------------------------------------------
    def _text(self, document_id: str, item: FileItem, stream: _BoundedStream) -> ContentPart:
        collector = _TextCollector(self.max_text_chars)
        decoded = _DecodedText(stream, item.mime_type)
        for piece in decoded:
            collector.add(piece)
            if collector.truncated:
                break
        reason = self._truncation_reason(stream, collector)
        if reason is not None:
            self._log_truncated(document_id, item, reason)
        note = None
        if decoded.encoding.guessed:
            note = (
                f"text encoding {decoded.encoding.codec} was guessed from the bytes"
                if decoded.encoding.source == "detected"
                else f"text encoding unknown; decoded as {decoded.encoding.codec} "
                "(detection needs the extract extra: pip install -e '.[extract]' in a clone of docbinder)"
            )
            logger.info(
                "text encoding of document %s (%s) guessed: %s",
                document_id,
                item.mime_type,
                decoded.encoding.codec,
            )
        return self._part(
            document_id,
            item,
            ContentKind.TEXT,
            text=collector.text(),
            truncated_reason=reason,
            note=note,
            encoding=decoded.encoding,
        )

    def _html(self, document_id: str, item: FileItem, stream: _BoundedStream) -> ContentPart:
        collector = _TextCollector(self.max_text_chars)
        parser = _VisibleTextParser(collector)
        failure: str | None = None
        decoded = _DecodedText(stream, item.mime_type)
        # Reading stays outside the ``try``: a storage fault propagates, only
        # parser trouble is caught. html.parser is lenient; this guards the rare exception.
        for piece in decoded:
            try:
                parser.feed(piece)
            except Exception as exc:
                self._log_failed(document_id, item, exc)
                failure = f"the markup could not be parsed past this point: {exc}"
                break
            if collector.truncated:
                break
        else:
            try:
                parser.finish()
            except Exception as exc:
                self._log_failed(document_id, item, exc)
                failure = f"the markup could not be parsed to the end: {exc}"
        reason = self._truncation_reason(stream, collector) or failure
        if reason is not None:
            self._log_truncated(document_id, item, reason)
        return self._part(
            document_id,
            item,
            ContentKind.TEXT,
            text=collector.text(),
            truncated_reason=reason,
            encoding=decoded.encoding,
        )

    # -- binary and images ------------------------------------------------------------------
    def _blob(
        self, document_id: str, item: FileItem, stream: _BoundedStream, kind: ContentKind
    ) -> ContentPart:
        reason = f"file is larger than {self.max_bytes} bytes"
        if self._too_big(item):
            self._log_truncated(document_id, item, reason)
            return self._part(document_id, item, kind, truncated_reason=reason)
        buffer = bytearray()
        for chunk in stream:
            buffer += chunk
        if stream.over_limit:
            self._log_truncated(document_id, item, reason)
            return self._part(document_id, item, kind, truncated_reason=reason)
        return self._part(
            document_id, item, kind, data=bytes(buffer), note=_misnamed_note(item, kind)
        )

    # -- documents --------------------------------------------------------------------------
    def _document_too_big(self, document_id: str, item: FileItem, fmt: str) -> list[ContentPart]:
        label = FORMAT_LABELS.get(fmt, fmt)
        note = (
            f"{label} of {item.size} bytes is larger than the extraction limit of "
            f"{self.max_bytes} bytes; no text was extracted"
        )
        reason = f"file is larger than {self.max_bytes} bytes"
        self._log_truncated(document_id, item, reason)
        return [
            self._part(
                document_id, item, ContentKind.BINARY, text=note, note=note, truncated_reason=reason
            )
        ]

    def _document(
        self, document_id: str, item: FileItem, stream: _BoundedStream, fmt: str
    ) -> list[ContentPart]:
        if self._too_big(item):
            return self._document_too_big(document_id, item, fmt)
        with tempfile.NamedTemporaryFile(prefix="docbinder-", suffix="." + fmt) as spool:
            for chunk in stream:
                spool.write(chunk)
            spool.flush()
            if stream.over_limit:
                return self._document_too_big(document_id, item, fmt)
            outcome = self._convert(document_id, item, fmt, spool.name)
            return self._from_outcome(document_id, item, fmt, outcome, spool)

    def _convert(self, document_id: str, item: FileItem, fmt: str, path: str) -> Outcome:
        outcome = self._convert_in_slot(document_id, item, fmt, path)
        attempt = _attempt.get()
        if attempt is not None:
            attempt.statuses.append(outcome.status)
        if outcome.status == "cancelled":
            logger.info(
                "conversion of document %s (%s) cancelled: %s",
                document_id,
                item.mime_type,
                outcome.message,
            )
        return outcome

    def _convert_in_slot(self, document_id: str, item: FileItem, fmt: str, path: str) -> Outcome:
        """Wait for a converter slot (queue), then convert within the time left."""
        call = current_read_call()
        token = call.token if call is not None else None
        wait = self.queue_seconds
        if call is not None:
            wait = min(wait, call.remaining_seconds())
        with self.slots.slot(time.monotonic() + wait, token) as refused:
            if refused == "cancelled" and token is not None:
                return Outcome((), "cancelled", f"{token.reason}; nothing was converted")
            if refused is not None:
                return Outcome(
                    (),
                    "busy",
                    f"all {self.slots.size} converter processes were busy for {wait:.1f} s "
                    f"(setting extract_max_processes = {self.slots.size}); "
                    "nothing was converted, try again shortly",
                )
            budget = self.time_budget
            if call is not None and call.remaining_seconds() < budget:
                budget = call.remaining_seconds()
                attempt = _attempt.get()
                if attempt is not None:
                    attempt.cut_short = True
                if budget <= 0:
                    return Outcome(
                        (),
                        "timeout",
                        "this call's time budget was spent before the converter started",
                    )
            limits = Limits(
                max_text_chars=self.max_text_chars,
                max_pages=self.max_pages,
                max_decoded_bytes=self.max_decoded_bytes,
                deadline=time.monotonic() + budget,
                max_rows=self.max_rows,
            )
            ocr = self.ocr if fmt in _PAGED and self.ocr_problem(fmt) is None else None
            if self.isolate:
                try:
                    return run_isolated(
                        fmt, path, limits, memory_bytes=self.memory_bytes, ocr=ocr, token=token
                    )
                except (OSError, AssertionError) as exc:
                    # No child process here: none could be started, or this process is itself
                    # a daemonic multiprocessing child (which may not have children).
                    self._log_failed(document_id, item, f"no converter process: {exc}")
                    attempt = _attempt.get()
                    if attempt is not None:
                        attempt.no_process = True
            return run_inline(fmt, path, limits, ocr)

    def _html_markdown(
        self, document_id: str, item: FileItem, stream: _BoundedStream
    ) -> list[ContentPart]:
        """HTML as Markdown through markitdown; the built-in visible-text parser as fallback."""
        if self._too_big(item):
            return [self._html(document_id, item, stream)]
        with tempfile.NamedTemporaryFile(prefix="docbinder-", suffix=".html") as spool:
            for chunk in stream:
                spool.write(chunk)
            spool.flush()
            if not stream.over_limit:
                outcome = self._convert(document_id, item, "html", spool.name)
                usable = any(s.text.strip() for s in outcome.sections)
                if usable and outcome.status in {"done", "timeout"}:
                    return self._from_outcome(document_id, item, "html", outcome, spool)
                if outcome.status != "done":
                    self._log_failed(
                        document_id, item, f"{outcome.status}: {outcome.message}; visible text"
                    )
                    return [self._html_fallback(document_id, item, spool, outcome)]
            spool.seek(0)
            reread = _BoundedStream(iter(lambda: spool.read(1 << 16), b""), self.max_bytes)
            return [self._html(document_id, item, reread)]

    def _html_fallback(
        self, document_id: str, item: FileItem, spool: IO[bytes], outcome: Outcome
    ) -> ContentPart:
        """The visible text standing in for a Markdown conversion that did not finish, marked."""
        spool.seek(0)
        reread = _BoundedStream(iter(lambda: spool.read(1 << 16), b""), self.max_bytes)
        part = self._html(document_id, item, reread)
        why = f"the Markdown conversion did not finish ({outcome.status}: {outcome.message})"
        note = f"{why}; this is the page's visible text, without headings, lists, links or tables"
        attempt = _attempt.get()
        if attempt is not None:
            attempt.fallback = why
        return evolve(part, note=f"{part.note}; {note}" if part.note else note)

    def _section_parts(
        self,
        document_id: str,
        item: FileItem,
        outcome: Outcome,
        coverage: PageCoverage | None,
    ) -> list[ContentPart]:
        """The text parts of an outcome's sections; a limit's reason lands on the last one."""
        parts: list[ContentPart] = []
        pending_reason: str | None = None
        for section in outcome.sections:
            if not section.text.strip():
                if section.truncated_reason is not None:
                    pending_reason = section.truncated_reason
                continue
            parts.append(
                self._part(
                    document_id,
                    item,
                    ContentKind.TEXT,
                    text=section.text,
                    position=section.position,
                    truncated_reason=section.truncated_reason,
                    note=section.note,
                    section=section,
                    coverage=coverage,
                )
            )
        if outcome.status in {"timeout", "crashed", "failed"} and parts:
            pending_reason = pending_reason or str(outcome.message)
        if pending_reason is not None and parts:
            last = parts[-1]
            parts[-1] = evolve(
                last, truncated=True, truncated_reason=last.truncated_reason or pending_reason
            )
        for part in parts:
            if part.truncated_reason is not None:
                self._log_truncated(document_id, item, part.truncated_reason)
        return parts

    @staticmethod
    def _coverage(outcome: Outcome) -> PageCoverage | None:
        """How the pages of a paged document were read, from its page sections."""
        pages = max((s.pages or 0 for s in outcome.sections), default=0)
        layered = [s for s in outcome.sections if s.layer is not None]
        if not pages and not layered:
            return None
        pages = max(pages, len(layered))
        empty = [_page_number(s) for s in layered if s.layer == "none"]
        return PageCoverage(
            pages=pages,
            text_layer=sum(1 for s in layered if s.layer == "text"),
            ocr=sum(1 for s in layered if s.layer == "ocr"),
            nothing=len(empty),
            unread=pages - len(layered),
            empty_pages=tuple(empty[:MAX_LISTED_PAGES]),
        )

    def _nothing_note(self, fmt: str, coverage: PageCoverage | None) -> str | None:
        """The sentence naming the pages that gave no text and why, or ``None``."""
        if coverage is None or not coverage.nothing:
            return None
        problem = self.ocr_problem(fmt)
        why = "OCR found no text on them" if problem is None else problem
        listed = ", ".join(str(n) for n in coverage.empty_pages)
        if coverage.nothing > len(coverage.empty_pages):
            listed += ", ..."
        which = f"page {listed}" if coverage.nothing == 1 else f"pages {listed}"
        return (
            f"{coverage.nothing} of {coverage.pages} page(s) gave no text ({which}): "
            f"no text layer, and {why}"
        )

    def _from_outcome(
        self, document_id: str, item: FileItem, fmt: str, outcome: Outcome, spool: IO[bytes]
    ) -> list[ContentPart]:
        label = FORMAT_LABELS.get(fmt, fmt)
        coverage = self._coverage(outcome) if fmt in _PAGED else None
        parts = self._section_parts(document_id, item, outcome, coverage)
        pending_reason = next(
            (s.truncated_reason for s in reversed(outcome.sections) if s.truncated_reason), None
        )
        nothing = self._nothing_note(fmt, coverage)
        if outcome.status != "done":
            self._log_failed(document_id, item, f"{outcome.status}: {outcome.message}")
        elif not parts:
            logger.info(
                "no text in %s document %s (%s); returned as binary",
                label,
                document_id,
                item.mime_type,
            )
        if parts:
            if nothing is not None:
                first = parts[0]
                parts[0] = evolve(first, note=f"{first.note}; {nothing}" if first.note else nothing)
            return parts
        if outcome.status == "missing_extra":
            note = f"{label} text needs the extract extra: {outcome.message}"
        elif outcome.status == "protected":
            note = f"{outcome.message}; no text was extracted"
        elif outcome.status == "not_that_format":
            note = _misnamed_note(item, ContentKind.BINARY, str(outcome.message)) or (
                f"the {label}'s bytes are {outcome.message}, not that format; it was not converted"
            )
        elif outcome.status == "done":
            if nothing is not None:
                note = f"the {label} has no extractable text: {nothing}"
            else:
                note = f"the {label} has no extractable text"
        elif outcome.status == "refused" or outcome.status == "timeout":
            note = f"the {label} was not converted: {outcome.message}"
        else:
            note = f"the {label} could not be read: {outcome.message}"
        reason = None
        if outcome.status in {"timeout", "refused"}:
            reason = str(outcome.message)
        elif pending_reason is not None:
            reason = pending_reason
        spool.seek(0)
        return [
            self._part(
                document_id,
                item,
                ContentKind.BINARY,
                text=note,
                note=note,
                data=spool.read(),
                truncated_reason=reason,
                coverage=coverage,
            )
        ]

    # -- images -----------------------------------------------------------------------------
    def _image(self, document_id: str, item: FileItem, stream: _BoundedStream) -> list[ContentPart]:
        """The image part, then a text part per page where OCR found text (see the class doc)."""
        problem = self.ocr_problem("image")
        if problem is not None or self._too_big(item):
            part = self._blob(document_id, item, stream, ContentKind.IMAGE)
            if problem is not None and part.data is not None:
                part = evolve(
                    part,
                    note=f"no text was read from the image: {problem}",
                    coverage=PageCoverage(1, nothing=1, empty_pages=(1,)),
                )
            return [part]
        with tempfile.NamedTemporaryFile(prefix="docbinder-", suffix=".image") as spool:
            for chunk in stream:
                spool.write(chunk)
            spool.flush()
            if stream.over_limit:
                reason = f"file is larger than {self.max_bytes} bytes"
                self._log_truncated(document_id, item, reason)
                return [self._part(document_id, item, ContentKind.IMAGE, truncated_reason=reason)]
            outcome = self._convert(document_id, item, "image", spool.name)
            spool.seek(0)
            data = spool.read()
        coverage = self._coverage(outcome)
        if coverage is None:  # not read at all (refused, crashed, no converter)
            coverage = PageCoverage(1, unread=1)
        texts = self._section_parts(document_id, item, outcome, coverage)
        stopped = next((s.truncated_reason for s in outcome.sections if s.truncated_reason), None)
        note = None
        if outcome.status != "done":
            self._log_failed(document_id, item, f"{outcome.status}: {outcome.message}")
            note = f"OCR did not read the image: {outcome.message}"
        elif not texts:
            note = "OCR found no text in the image"
            if stopped is not None:
                note += f" (it stopped early: {stopped})"
        elif coverage.nothing:
            note = self._nothing_note("image", coverage)
        picture = self._part(
            document_id, item, ContentKind.IMAGE, data=data, note=note, coverage=coverage
        )
        return [picture, *texts]


def _misnamed_note(item: FileItem, kind: ContentKind, actual: str | None = None) -> str | None:
    """For a binary part whose name claims a format that is converted: what the bytes are.

    ``actual`` is the MIME type the bytes are, when the converter found it out
    (a ZIP archive without the package's parts); else the FileItem's type.
    """
    if kind is not ContentKind.BINARY:
        return None
    extension = item.file_name.rsplit(".", 1)[-1].lower() if "." in item.file_name else ""
    claimed = FORMATS.get(EMPTY_FILE_EXTENSIONS.get(extension, ""))
    if claimed is None:
        return None
    label = FORMAT_LABELS.get(claimed, claimed)
    return (
        f"the file's name (.{extension}) says {label}, but its bytes are "
        f"{actual or mime_essence(item.mime_type)}, not that format; it was not converted"
    )


def _page_number(section: Section) -> int:
    """The page number of a page section (``"page 3"`` gives 3; a single image is page 1)."""
    position = section.position or ""
    digits = position.removeprefix("page ").strip()
    return int(digits) if digits.isdigit() else 1


@functools.cache
def _library_versions() -> str:
    """``name=version`` of each converter library (``none`` when absent), read once per process."""
    found = []
    for name in _VERSIONED_LIBRARIES:
        try:
            found.append(f"{name}={distribution_version(name)}")
        except PackageNotFoundError:
            found.append(f"{name}=none")
    return ",".join(found)
