"""Turn a stored file's bytes into :class:`~docbinder.domain.model.ContentPart` values (SPEC C8).

:class:`DefaultContentExtractor` implements
:class:`~docbinder.ports.extractor.ContentExtractor` with the standard library
and, for PDF, the optional ``pypdf`` package (``pip install 'docbinder[extract]'``).

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
import logging
import tempfile
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import IO, Final

from attrs import evolve

from docbinder.adapters.extract.mime import BYTE_ORDER_MARKS, is_textual_mime, text_encoding
from docbinder.domain.errors import InvalidInput, MissingExtra
from docbinder.domain.model import ContentKind, ContentPart, FileItem
from docbinder.ports.extractor import SNIFF_BYTES

logger = logging.getLogger(__name__)

DEFAULT_MAX_BYTES: Final = 50 * 1024 * 1024
"""Default limit of bytes read from one file (50 MiB)."""

DEFAULT_MAX_TEXT_CHARS: Final = 2_000_000
"""Default limit of characters of text returned for one file."""

SPOOL_MEMORY_BYTES: Final = 4 * 1024 * 1024
"""PDF bytes kept in memory before the spool moves to a temporary file (4 MiB)."""

_HTML_TYPES: Final = frozenset({"text/html", "application/xhtml+xml"})
_PDF_TYPE: Final = "application/pdf"


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


def _decoded(stream: _BoundedStream) -> Iterator[str]:
    """Decode a byte stream incrementally.

    The first :data:`~docbinder.ports.extractor.SNIFF_BYTES` bytes choose the
    codec: a byte order mark selects UTF-8, UTF-16 or UTF-32 (and is dropped);
    else UTF-8, unless those bytes are not valid UTF-8 but look like 8-bit
    text (:func:`~docbinder.adapters.extract.mime.text_encoding`), which is
    decoded as Windows-1252 (a superset of the printable ISO-8859-1
    characters). Undecodable bytes become U+FFFD. When the stream was cut at
    the byte limit an incomplete trailing sequence is dropped, not replaced.
    """
    chunks = iter(stream)
    head = b""
    for chunk in chunks:
        head += chunk
        if len(head) >= SNIFF_BYTES:
            break
    codec = "utf-8"
    for bom, name in BYTE_ORDER_MARKS:
        if head.startswith(bom):
            codec = name
            break
    else:
        if text_encoding(head) == "latin-1":
            codec = "cp1252"
    decoder = codecs.getincrementaldecoder(codec)(errors="replace")
    if head:
        yield decoder.decode(head)
    for chunk in chunks:
        yield decoder.decode(chunk)
    if not stream.over_limit:
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
    """:class:`~docbinder.ports.extractor.ContentExtractor` for text, HTML, PDF, images, the rest.

    Decides by ``item.mime_type`` (sniffed when the file was stored):

    * textual types (``text/*``, JSON, XML, YAML and ``+json``/``+xml``
      suffixes, see :func:`~docbinder.adapters.extract.mime.is_textual_mime`)
      give one text part with the text as stored. A UTF-8, UTF-16 or UTF-32
      byte order mark selects the encoding, else UTF-8 (Windows-1252 when the
      first bytes are 8-bit text that is not UTF-8); undecodable bytes become
      U+FFFD. JSON is returned as stored, not re-formatted.
    * ``text/html`` and ``application/xhtml+xml`` give one text part with the
      visible text (title first, no script/style, one line per block).
    * ``application/pdf`` gives one text part per page with text, ``position``
      ``"page N"`` (1-based), via ``pypdf``. Pages without text are skipped;
      when no page has text, or ``pypdf`` is not installed, or the file cannot
      be read, one binary part with the bytes and a ``text`` note is returned
      instead (a missing ``pypdf`` is logged, not raised, so the consuming
      tool still receives the file).
    * ``image/*`` gives one image part with the bytes.
    * anything else gives one binary part with the bytes.

    Limits: at most ``max_bytes`` bytes (default 50 MiB) are read from the
    stream. A bigger file gives text cut at that point (``truncated=True``);
    image and binary parts without data (``data=None``, ``truncated=True``);
    a PDF as a binary part without data and with a note. Text longer than
    ``max_text_chars`` characters (default 2,000,000; for PDF counted over all
    pages) is cut with ``truncated=True``. Every part carries the document's
    id and file name, the FileItem's MIME type and ``size=item.size`` (bytes).

    Memory: text is decoded chunk by chunk and reading stops at the limits;
    image and binary data are held in memory up to ``max_bytes``; PDF bytes are
    spooled to a temporary file once they exceed :data:`SPOOL_MEMORY_BYTES`.

    Raises :class:`~docbinder.domain.errors.InvalidInput` for limits below 1.
    ``extract`` raises only what the ``chunks`` iterator raises (storage
    faults such as :class:`~docbinder.domain.errors.BlobMissing`); content
    problems never raise.
    """

    def __init__(
        self, max_bytes: int = DEFAULT_MAX_BYTES, max_text_chars: int = DEFAULT_MAX_TEXT_CHARS
    ) -> None:
        for name, value in (("max_bytes", max_bytes), ("max_text_chars", max_text_chars)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidInput(f"{name} must be a positive integer, got {value!r}")
        self.max_bytes = max_bytes
        self.max_text_chars = max_text_chars

    def extract(
        self, document_id: str, item: FileItem, chunks: Iterator[bytes]
    ) -> list[ContentPart]:
        """Return the content parts of one document; never an empty list.

        ``chunks`` streams the FileItem's bytes; it is read at most up to
        ``max_bytes`` (+ one chunk to detect a bigger file) and closed when
        reading stops. See the class documentation for the parts per type.
        """
        mime = item.mime_type.lower()
        stream = _BoundedStream(chunks, self.max_bytes)
        try:
            if mime in _HTML_TYPES:
                return [self._html(document_id, item, stream)]
            if is_textual_mime(mime):
                return [self._text(document_id, item, stream)]
            if mime == _PDF_TYPE:
                return self._pdf(document_id, item, stream)
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
        truncated: bool = False,
    ) -> ContentPart:
        return ContentPart(
            document_id=document_id,
            file_name=item.file_name,
            mime_type=item.mime_type,
            kind=kind,
            text=text,
            data=data,
            size=item.size,
            position=position,
            truncated=truncated,
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
        for piece in _decoded(stream):
            collector.add(piece)
            if collector.truncated:
                break
        reason = self._truncation_reason(stream, collector)
        if reason is not None:
            self._log_truncated(document_id, item, reason)
        return self._part(
            document_id, item, ContentKind.TEXT, text=collector.text(), truncated=reason is not None
        )

    def _html(self, document_id: str, item: FileItem, stream: _BoundedStream) -> ContentPart:
        collector = _TextCollector(self.max_text_chars)
        parser = _VisibleTextParser(collector)
        failed = False
        # Reading stays outside the ``try``: a storage fault propagates, only
        # parser trouble is caught. html.parser is lenient; this guards the rare exception.
        for piece in _decoded(stream):
            try:
                parser.feed(piece)
            except Exception as exc:
                self._log_failed(document_id, item, exc)
                failed = True
                break
            if collector.truncated:
                break
        else:
            try:
                parser.finish()
            except Exception as exc:
                self._log_failed(document_id, item, exc)
                failed = True
        reason = self._truncation_reason(stream, collector)
        if reason is not None:
            self._log_truncated(document_id, item, reason)
        return self._part(
            document_id,
            item,
            ContentKind.TEXT,
            text=collector.text(),
            truncated=failed or reason is not None,
        )

    # -- binary and images ------------------------------------------------------------------
    def _blob(
        self, document_id: str, item: FileItem, stream: _BoundedStream, kind: ContentKind
    ) -> ContentPart:
        if self._too_big(item):
            self._log_truncated(document_id, item, f"file is larger than {self.max_bytes} bytes")
            return self._part(document_id, item, kind, truncated=True)
        buffer = bytearray()
        for chunk in stream:
            buffer += chunk
        if stream.over_limit:
            self._log_truncated(document_id, item, f"file is larger than {self.max_bytes} bytes")
            return self._part(document_id, item, kind, truncated=True)
        return self._part(document_id, item, kind, data=bytes(buffer))

    # -- PDF --------------------------------------------------------------------------------
    def _pdf_too_big(self, document_id: str, item: FileItem) -> list[ContentPart]:
        note = (
            f"PDF of {item.size} bytes is larger than the extraction limit of "
            f"{self.max_bytes} bytes; no text was extracted"
        )
        self._log_truncated(document_id, item, f"file is larger than {self.max_bytes} bytes")
        return [self._part(document_id, item, ContentKind.BINARY, text=note, truncated=True)]

    def _pdf(self, document_id: str, item: FileItem, stream: _BoundedStream) -> list[ContentPart]:
        if self._too_big(item):
            return self._pdf_too_big(document_id, item)
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY_BYTES) as spool:
            for chunk in stream:
                spool.write(chunk)
            if stream.over_limit:
                return self._pdf_too_big(document_id, item)
            spool.seek(0)
            try:
                parts = self._pdf_pages(document_id, item, spool)
            except MissingExtra as exc:
                self._log_failed(document_id, item, exc)
                return [self._pdf_as_binary(document_id, item, spool, f"{exc}; text not extracted")]
            except Exception as exc:
                self._log_failed(document_id, item, exc)
                return [
                    self._pdf_as_binary(
                        document_id, item, spool, f"the PDF could not be read: {exc}"
                    )
                ]
            if not parts:
                logger.info(
                    "no text in PDF document %s (%s); returned as binary",
                    document_id,
                    item.mime_type,
                )
                return [
                    self._pdf_as_binary(
                        document_id,
                        item,
                        spool,
                        "the PDF has no extractable text (it may hold scanned images only)",
                    )
                ]
            return parts

    def _pdf_as_binary(
        self, document_id: str, item: FileItem, spool: IO[bytes], note: str
    ) -> ContentPart:
        spool.seek(0)
        return self._part(document_id, item, ContentKind.BINARY, text=note, data=spool.read())

    def _pdf_pages(self, document_id: str, item: FileItem, spool: IO[bytes]) -> list[ContentPart]:
        """One text part per page with text; raises on an unreadable file."""
        try:
            from pypdf import PdfReader
        except ImportError as exc:
            raise MissingExtra("PDF text extraction", "extract", "pypdf") from exc

        reader = PdfReader(spool)
        if reader.is_encrypted:
            reader.decrypt("")  # an empty user password opens many "protected" PDFs
        room = self.max_text_chars
        parts: list[ContentPart] = []
        page_errors: list[tuple[int, Exception]] = []
        page_count = len(reader.pages)
        for number, page in enumerate(reader.pages, start=1):
            try:
                text = page.extract_text() or ""
            except Exception as exc:
                page_errors.append((number, exc))
                continue
            if not text.strip():
                continue
            truncated = len(text) > room
            if truncated:
                text = text[:room]
                self._log_truncated(
                    document_id, item, f"text is longer than {self.max_text_chars} characters"
                )
            parts.append(
                self._part(
                    document_id,
                    item,
                    ContentKind.TEXT,
                    text=text,
                    position=f"page {number}",
                    truncated=truncated,
                )
            )
            room -= len(text)
            if truncated or room <= 0:
                if not truncated and number < page_count:
                    # The limit was met exactly and pages were left unread: say so.
                    parts[-1] = evolve(parts[-1], truncated=True)
                    self._log_truncated(
                        document_id, item, f"text is longer than {self.max_text_chars} characters"
                    )
                break
        if page_errors and not parts:
            raise page_errors[0][1]
        for number, error in page_errors:
            self._log_failed(document_id, item, f"page {number}: {error}")
        return parts
