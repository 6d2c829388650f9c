"""Converters from document files to text sections, with cooperative limits.

Each converter reads a file from a local path and yields :class:`Section`
values (text plus a position such as ``"page 3"``, ``"sheet 2: Totals"`` or
``"slide 4"``). They run in a child process (see
:mod:`docbinder.adapters.extract.isolation`) or in the calling thread; either
way they stop by themselves when a :class:`Limits` value is reached and yield
a last section whose ``truncated_reason`` says why.

Libraries (the ``[extract]`` extra): ``pypdf`` (PDF), ``markitdown`` with its
Office extras (Word ``.docx`` via mammoth, PowerPoint ``.pptx`` via
python-pptx, EPUB, Outlook ``.msg``), ``openpyxl`` (``.xlsx``), ``xlrd``
(``.xls``), ``odfpy`` (``.odt``, ``.ods``), ``striprtf`` (``.rtf``); e-mail
``.eml`` uses the standard library's :mod:`email` (RFC 5322 / MIME).

Files as people really have them: pages without a text layer (scans) are
read by optical character recognition when a
:class:`~docbinder.ports.extractor.TextRecognizer` is given (PDF pages are
rendered with ``pypdfium2``, images decoded with Pillow; the ``ocr`` extra),
under the same page, time and memory budgets, and every page section says
how it was read (``layer``: ``"text"``, ``"ocr"``, ``"none"``); a deck whose
whole-document conversion fails is read again slide by slide, a workbook
sheet by sheet, a PDF page by page, with a placeholder where one element
cannot be read; a workbook's declared dimension is never trusted; a PDF
encrypted with an empty user password is opened, one with a real password is
reported as password-protected (ADR 0064, ADR 0065).

ZIP-based packages (Office Open XML, OpenDocument, EPUB) are checked before
conversion: the sum of the members' declared uncompressed sizes (PKWARE
APPNOTE §4.4.9) must stay within ``Limits.max_decoded_bytes``, so a zip bomb
that declares its size is refused without being inflated; and no deflated
member may inflate to more than it declares (counted in 1 MiB steps, see
:func:`check_zip`), because :meth:`zipfile.ZipFile.read` inflates a member's
whole data in memory before cutting it to the declared size.
"""

from __future__ import annotations

import contextlib
import math
import posixpath
import re
import shutil
import struct
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, BinaryIO, Final

import attrs

from docbinder.domain.errors import MissingExtra
from docbinder.ports.extractor import RecognitionSession, TextRecognizer

MAX_SHEET_ROWS: Final = 100_000
"""Default of :attr:`Limits.max_rows`: rows (empty ones included) read from one workbook before it is cut."""

MAX_ZIP_MEMBERS: Final = 10_000
"""Members a ZIP-based package may have."""

OCR_DPI: Final = 300
"""Resolution PDF pages are rendered at for OCR (dots per inch), unless that breaks the pixel cap."""

MAX_OCR_PIXELS: Final = 25_000_000
"""Pixels of one page image OCR reads (an A4 page at 300 dpi has 8.7 million); larger ones are scaled down."""

MAX_IMAGE_PIXELS: Final = 80_000_000
"""Pixels an image may have to be decoded for OCR at all; larger ones are refused unread.

Below Pillow's own decompression-bomb threshold (89,478,485 pixels), so
Pillow never warns about an image that is decoded.
"""

MIN_TEXT_LAYER_CHARS: Final = 20
"""A page with an image and fewer non-space characters in its text layer is read by OCR too.

Scanners stamp a page number or a date as text over the scanned image.
"""


@attrs.frozen
class Limits:
    """What one conversion may spend.

    ``max_text_chars`` characters over all sections; ``max_pages`` pages,
    sheets or slides; ``max_decoded_bytes`` bytes of decompressed content
    (content streams of a PDF, members of a ZIP package); ``deadline`` is a
    :func:`time.monotonic` value after which no further page is started;
    ``max_rows`` rows (empty ones included) over all sheets of a workbook.
    """

    max_text_chars: int
    max_pages: int
    max_decoded_bytes: int
    deadline: float
    max_rows: int = MAX_SHEET_ROWS


@attrs.frozen
class Section:
    """One piece of converted text; ``truncated_reason`` is set when a limit cut it.

    ``note`` says what in the section could not be read (its placeholders).
    Page sections of paged documents (PDF, images) carry ``layer``: ``"text"``
    (the page's text layer), ``"ocr"`` (read by OCR; ``ocr_engine`` and
    ``ocr_confidence``, 0.0 to 1.0, are then set) or ``"none"`` (the page gave
    no text; ``text`` is empty or a placeholder), and ``pages``, the
    document's page count.
    """

    text: str
    position: str | None = None
    truncated_reason: str | None = None
    note: str | None = None
    layer: str | None = None
    ocr_engine: str | None = None
    ocr_confidence: float | None = None
    pages: int | None = None


class ConversionRefused(Exception):
    """The file breaks a limit before conversion starts (a zip bomb); the message says which."""


class DocumentProtected(Exception):
    """The document opens only with a password it was not given; the message says so."""


class NotThatFormat(Exception):
    """The bytes are not the format the converter reads (a plain ZIP archive named ``.xlsx``).

    The message is the MIME type the bytes are (``application/zip``).
    """


class _Budget:
    """Counts characters and sections against :class:`Limits`."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.started = time.monotonic()
        self.chars = 0
        self.sections = 0

    def out_of_time(self) -> bool:
        return time.monotonic() >= self.limits.deadline

    def time_reason(self) -> str:
        return f"time budget of {self.limits.deadline - self.started:.1f} s spent"

    def take(self, text: str, position: str | None) -> Section:
        """A section with at most the remaining characters; cut ones carry the reason."""
        room = self.limits.max_text_chars - self.chars
        self.sections += 1
        if len(text) > room:
            self.chars = self.limits.max_text_chars
            return Section(
                text[: max(room, 0)],
                position,
                f"text is longer than {self.limits.max_text_chars} characters",
            )
        self.chars += len(text)
        return Section(text, position)

    @property
    def full(self) -> bool:
        return self.chars >= self.limits.max_text_chars


def _cut(sections: Iterator[Section], budget: _Budget, unit: str, total: int) -> Iterator[Section]:
    """Yield sections until a limit is met; the last one then carries the reason."""
    pending: Section | None = None
    for index, section in enumerate(sections, start=1):
        if pending is not None:
            yield pending
        pending = section
        if section.truncated_reason is not None:
            yield section
            return
        reason = None
        if index >= budget.limits.max_pages and index < total:
            reason = f"more than {budget.limits.max_pages} {unit}s"
        elif budget.full and index < total:
            reason = f"text is longer than {budget.limits.max_text_chars} characters"
        elif budget.out_of_time() and index < total:
            reason = budget.time_reason()
        if reason is not None:
            yield attrs.evolve(section, truncated_reason=reason)
            return
    if pending is not None:
        yield pending


def check_zip(path: str, limits: Limits, parts: str | None = None) -> None:
    """Refuse a ZIP package that is too big, by its declared sizes and by its real ones.

    ``parts`` (``"xl/"``, ``"ppt/"``, ``"word/"``) is the folder that holds an Office
    Open XML package's parts of that kind: an archive with no member under it is
    no such package (the MIME detection trusted the name because the first
    entries did not tell) and raises :class:`NotThatFormat` before the sizes
    are checked, as the detection would have said had it seen every entry.

    The member count and the declared uncompressed total are checked first
    (the central directory: cheap). Then every deflated member is inflated
    once, counting its bytes up to its declared size plus one
    (:func:`_inflated_size`): a member that inflates to more than it declares
    is refused, because ``zipfile.ZipFile.read`` (which python-pptx,
    python-docx and this module's package copies call) inflates a member's
    whole compressed data in memory before cutting it to the declared size, so
    a header that says 100 bytes over a member of 1 GiB would cost 1 GiB. So
    the real total never exceeds the declared one, which is within
    ``max_decoded_bytes``. Encrypted members and methods other than stored
    and deflated (which office programs do not write) are taken at their
    declared size. Raises :class:`ConversionRefused` naming the sizes;
    :class:`zipfile.BadZipFile` for a file that is no ZIP archive or a member
    whose data does not inflate.
    """
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
    if len(infos) > MAX_ZIP_MEMBERS:
        raise ConversionRefused(f"the package has {len(infos)} members (limit {MAX_ZIP_MEMBERS})")
    if parts is not None and not any(info.filename.startswith(parts) for info in infos):
        raise NotThatFormat("application/zip")
    total = sum(info.file_size for info in infos)
    if total > limits.max_decoded_bytes:
        raise ConversionRefused(
            f"the package inflates to {total} bytes, more than the limit of "
            f"{limits.max_decoded_bytes} decoded bytes (zip bomb?)"
        )
    with open(path, "rb") as handle:
        for info in infos:
            if info.compress_type != zipfile.ZIP_DEFLATED or info.flag_bits & 0x1:
                continue
            if _inflated_size(handle, info, info.file_size) > info.file_size:
                raise ConversionRefused(
                    f"the package's member {info.filename!r} inflates to more than the "
                    f"{info.file_size} bytes it declares (zip bomb?)"
                )


_LOCAL_HEADER: Final = struct.Struct("<4s22xHH")
"""A ZIP local file header up to its name (PKWARE APPNOTE.TXT 4.3.7): signature, then the
name and extra field lengths at offsets 26 and 28."""


def _inflated_size(handle: BinaryIO, info: zipfile.ZipInfo, limit: int) -> int:
    """How many bytes the deflated member ``info`` inflates to, counted up to ``limit`` + 1.

    Reads the member's compressed bytes (``info.compress_size``, from the
    central directory) after its local header in 64 KiB pieces and inflates
    them (raw DEFLATE, RFC 1951) at most 1 MiB at a time, so memory stays
    small whatever the member claims. Raises :class:`zipfile.BadZipFile` when
    the local header is missing or the data is not DEFLATE.
    """
    handle.seek(info.header_offset)
    header = handle.read(_LOCAL_HEADER.size)
    if len(header) < _LOCAL_HEADER.size:
        raise zipfile.BadZipFile(f"the local header of {info.filename!r} is cut off")
    signature, name_length, extra_length = _LOCAL_HEADER.unpack(header)
    if signature != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"no local header where {info.filename!r} should start")
    handle.seek(name_length + extra_length, 1)
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    left = info.compress_size
    total = 0
    data = b""
    try:
        while total <= limit and not inflater.eof:
            if not data:
                if left <= 0:
                    break
                data = handle.read(min(left, 1 << 16))
                if not data:
                    break
                left -= len(data)
            total += len(inflater.decompress(data, 1 << 20))
            data = inflater.unconsumed_tail
    except zlib.error as exc:
        raise zipfile.BadZipFile(f"{info.filename!r} does not inflate: {exc}") from exc
    return total


# -- PDF ------------------------------------------------------------------------------------
def pdf(path: str, limits: Limits, ocr: TextRecognizer | None = None) -> Iterator[Section]:
    """One section per page (``"page N"``, with its ``layer``); pages, decoded bytes and time are capped.

    The decoded size of each page's content stream counts against
    ``max_decoded_bytes`` before its text is extracted, so pages that all
    share one large stream stop the document early. A page without a text
    layer (or with an image and under :data:`MIN_TEXT_LAYER_CHARS` characters
    of text) is rendered at :data:`OCR_DPI` and read by ``ocr`` when one is
    given; a page whose text layer cannot be parsed is read by OCR or gets a
    placeholder, and the next page is read. An encrypted PDF is opened with
    the empty user password (AES needs ``cryptography``, part of the
    ``extract`` extra); one with a real password raises
    :class:`DocumentProtected`.
    """
    try:
        from pypdf import PasswordType, PdfReader
        from pypdf.errors import DependencyError
    except ImportError as exc:
        raise MissingExtra("PDF text extraction", "extract", "pypdf") from exc

    budget = _Budget(limits)
    reader = PdfReader(path)
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")  # an empty user password opens most "protected" PDFs
        except DependencyError as exc:
            raise MissingExtra("AES-encrypted PDF reading", "extract", "cryptography") from exc
        if opened == PasswordType.NOT_DECRYPTED:
            raise DocumentProtected(
                "the PDF is password-protected: it opens only with its password, "
                "which was not given"
            )
    page_count = len(reader.pages)
    decoded = 0
    with contextlib.ExitStack() as stack:
        reading = _PdfOcr(path, ocr, stack)
        for number in range(1, page_count + 1):
            position = f"page {number}"
            reason = None
            if number > limits.max_pages:
                reason = f"more than {limits.max_pages} pages"
            elif budget.out_of_time():
                reason = budget.time_reason()
            if reason is None:
                page = reader.pages[number - 1]
                contents = page.get_contents()
                decoded += len(contents.get_data()) if contents is not None else 0
                if decoded > limits.max_decoded_bytes:
                    reason = (
                        f"the pages' content streams decode to more than "
                        f"{limits.max_decoded_bytes} bytes"
                    )
            if reason is not None:
                yield Section(
                    "", position, f"stopped before page {number}: {reason}", pages=page_count
                )
                return
            failure = None
            try:
                text = page.extract_text() or ""
            except Exception as exc:  # one unreadable page must not lose the others
                text, failure = "", f"{type(exc).__name__}: {exc}"
            section: Section | None = None
            if failure is not None or _needs_ocr(page, text):
                section = reading.page(number, budget, page_count)
                if section is None or (section.layer != "ocr" and text.strip()):
                    section = None  # OCR found nothing better: keep the text layer below
            if section is None and failure is not None:
                placeholder = f"[page {number} could not be read: {failure}]"
                section = Section(
                    placeholder,
                    position,
                    note=f"the text of page {number} could not be read: {failure}",
                    layer="none",
                    pages=page_count,
                )
            if section is None and text.strip():
                taken = budget.take(text, position)
                section = attrs.evolve(taken, layer="text", pages=page_count)
            if section is None:
                section = Section("", position, layer="none", pages=page_count)
            yield section
            if section.truncated_reason is not None:
                return
            if budget.full and number < page_count:
                yield Section(
                    "",
                    f"page {number + 1}",
                    f"text is longer than {limits.max_text_chars} characters",
                    pages=page_count,
                )
                return


def _needs_ocr(page: Any, text: str) -> bool:
    """Whether a page's text layer is missing, or only a stamp over an image."""
    letters = len("".join(text.split()))
    if letters == 0:
        return True
    if letters >= MIN_TEXT_LAYER_CHARS:
        return False
    try:
        return len(page.images) > 0
    except Exception:
        return False


def renderer_problem() -> str | None:
    """Why PDF pages cannot be rendered for OCR here (``pypdfium2`` missing), or ``None``."""
    import importlib.util

    if importlib.util.find_spec("pypdfium2") is None or importlib.util.find_spec("PIL") is None:
        return (
            "OCR of PDF pages needs pypdfium2 and Pillow: "
            "the ocr extra (from a clone: pip install -e '.[ocr]')"
        )
    return None


class _PdfOcr:
    """Renders and recognizes pages of one PDF; the renderer and engine load on first use."""

    def __init__(self, path: str, ocr: TextRecognizer | None, stack: contextlib.ExitStack) -> None:
        self._path = path
        self._ocr = ocr
        self._stack = stack
        self._document: Any = None
        self._session: RecognitionSession | None = None

    def page(self, number: int, budget: _Budget, pages: int) -> Section | None:
        """The OCR section of page ``number`` (``layer`` ``"ocr"`` or ``"none"``), or ``None``
        without a recognizer."""
        if self._ocr is None:
            return None
        if self._session is None:
            import pypdfium2

            self._document = pypdfium2.PdfDocument(self._path)
            self._stack.callback(self._document.close)
            self._session = self._stack.enter_context(self._ocr.session())
        page = self._document[number - 1]
        try:
            width, height = page.get_size()
            scale = min(OCR_DPI / 72, math.sqrt(MAX_OCR_PIXELS / max(width * height, 1.0)))
            bitmap = page.render(scale=scale, grayscale=True, draw_annots=True)
            try:
                image = bitmap.to_pil().convert("L")
            finally:
                bitmap.close()
        finally:
            page.close()
        return _recognized(
            self._session,
            self._ocr,
            image,
            round(72 * scale),
            budget,
            f"page {number}",
            pages,
        )


def _recognized(
    session: RecognitionSession,
    ocr: TextRecognizer,
    image: Any,
    dpi: int,
    budget: _Budget,
    position: str | None,
    pages: int,
) -> Section:
    """One page image (Pillow, mode ``L``) read by OCR within the time left, as a section."""
    remaining = max(budget.limits.deadline - time.monotonic(), 0.001)
    result = session.read(image.tobytes(), image.width, image.height, dpi=dpi, timeout=remaining)
    if not result.complete:
        return Section("", position, f"{budget.time_reason()} during OCR", pages=pages)
    if not result.text.strip():
        return Section("", position, layer="none", pages=pages)
    taken = budget.take(result.text, position)
    return attrs.evolve(
        taken,
        layer="ocr",
        ocr_engine=ocr.engine,
        ocr_confidence=result.confidence,
        pages=pages,
    )


# -- images -------------------------------------------------------------------------------------
def image(path: str, limits: Limits, ocr: TextRecognizer | None = None) -> Iterator[Section]:
    """The text OCR reads in an image: one section per page (``"page N"`` for a multi-page TIFF).

    Decoded with Pillow (orientation from EXIF applied, grayscale); an image
    over :data:`MAX_IMAGE_PIXELS` pixels is refused unread, one over
    :data:`MAX_OCR_PIXELS` scaled down; a later TIFF page over
    :data:`MAX_IMAGE_PIXELS` stops the reading there (it and the pages after it
    are unread, the reason says why). Frames of other formats (animated
    GIF, WebP, PNG) are not pages: only the first is read. Without ``ocr``
    raises :class:`ConversionRefused`.
    """
    if ocr is None:
        raise ConversionRefused("no OCR engine was given")
    try:
        from PIL import Image, ImageOps
    except ImportError as exc:
        raise MissingExtra("image OCR", "ocr", "pillow") from exc
    budget = _Budget(limits)
    try:
        opened = Image.open(path)
    except Image.DecompressionBombError as exc:
        raise ConversionRefused(f"the image is too large to decode: {exc}") from exc
    with opened as picture, ocr.session() as session:
        width, height = picture.size
        if width * height > MAX_IMAGE_PIXELS:
            raise ConversionRefused(
                f"the image is {width} x {height} pixels, more than the "
                f"{MAX_IMAGE_PIXELS} pixels read by OCR"
            )
        pages = getattr(picture, "n_frames", 1) if picture.format == "TIFF" else 1
        for number in range(1, pages + 1):
            position = f"page {number}" if pages > 1 else None
            if number > limits.max_pages:
                yield Section("", position, f"more than {limits.max_pages} pages", pages=pages)
                return
            if budget.out_of_time():
                yield Section("", position, budget.time_reason(), pages=pages)
                return
            picture.seek(number - 1)  # reads the page's header only, not its pixels
            frame_width, frame_height = picture.size
            if frame_width * frame_height > MAX_IMAGE_PIXELS:  # each page, not only the first
                yield Section(
                    "",
                    position,
                    f"page {number} is {frame_width} x {frame_height} pixels, more than the "
                    f"{MAX_IMAGE_PIXELS} pixels read by OCR",
                    pages=pages,
                )
                return
            frame = ImageOps.exif_transpose(picture) if number == 1 else picture
            gray = frame.convert("L")
            factor = math.ceil(math.sqrt(gray.width * gray.height / MAX_OCR_PIXELS))
            if factor > 1:
                gray = gray.reduce(factor)
            dpi = _image_dpi(picture.info.get("dpi"), factor)
            section = _recognized(session, ocr, gray, dpi, budget, position, pages)
            yield section
            if section.truncated_reason is not None:
                return


def _image_dpi(declared: object, factor: int) -> int:
    """The resolution an image declares (300 if it declares none or a silly one), after scaling."""
    value = 300.0
    if (
        isinstance(declared, tuple)
        and declared
        and isinstance(declared[0], int | float)
        and 70 <= declared[0] <= 2400
    ):
        value = float(declared[0])
    return max(1, round(value / max(factor, 1)))


# -- Word, PowerPoint, EPUB, Outlook through markitdown ---------------------------------------
def _markitdown(converter_name: str, path: str, extension: str) -> str:
    try:
        from markitdown import StreamInfo
        from markitdown import converters as md_converters
    except ImportError as exc:
        raise MissingExtra(
            f"{extension} conversion", "extract", "markitdown[docx,pptx,outlook]"
        ) from exc
    converter = getattr(md_converters, converter_name)()
    with open(path, "rb") as handle:
        result = converter.convert(handle, StreamInfo(extension=extension, local_path=path))
    return str(result.markdown or "")


def docx(path: str, limits: Limits, ocr: TextRecognizer | None = None) -> Iterator[Section]:
    """The document as Markdown (headings, lists, tables) in one section.

    Through markitdown's converter (mammoth); when it fails on the whole
    document (a DOCTYPE its XML parser refuses, an element it cannot map), the
    document is read again block by block with python-docx
    (:func:`docx_by_block`).
    """
    check_zip(path, limits, "word/")
    budget = _Budget(limits)
    try:
        markdown = _markitdown("DocxConverter", path, ".docx")
    except (MissingExtra, MemoryError):
        raise
    except Exception as exc:
        yield docx_by_block(path, budget, f"{type(exc).__name__}: {exc}")
        return
    yield budget.take(markdown, None)


def docx_by_block(path: str, budget: _Budget, failure: str) -> Section:
    """The document read paragraph by paragraph and table by table after its converter failed.

    python-docx parses the package without resolving entities (its lxml parser
    has ``resolve_entities=False``). Paragraphs in a ``Heading N`` style
    become ``#``-headings, those in a ``List Bullet`` / ``List Number`` style
    (Word's built-in list styles, any level) ``*`` / ``1.`` items, tables
    Markdown tables, in body order; a block that
    raises becomes ``[<block> <n> could not be read: <error>]``. The section's
    ``note`` names the converter's ``failure`` and those blocks.
    """
    try:
        import docx as python_docx
        from docx.table import Table
    except ImportError as exc:
        raise MissingExtra(".docx conversion", "extract", "python-docx") from exc
    document = python_docx.Document(path)
    lines: list[str] = []
    problems: list[str] = []
    for number, block in enumerate(document.iter_inner_content(), start=1):
        kind = "table" if isinstance(block, Table) else "paragraph"
        try:
            if isinstance(block, Table):
                rows = [[cell.text for cell in row.cells] for row in block.rows]
                lines.extend(["", markdown_table(rows), ""])
                continue
            text = block.text or ""
            style = str(getattr(block.style, "name", "") or "")
            level = re.fullmatch(r"Heading ([1-6])", style)
            if level is not None and text.strip():
                lines.extend(["", f"{'#' * int(level[1])} {text.strip()}", ""])
            elif style == "Title" and text.strip():
                lines.extend(["", f"# {text.strip()}", ""])
            elif (item := re.fullmatch(r"List (Bullet|Number)(?: [2-9])?", style)) and text.strip():
                lines.append(f"{'*' if item[1] == 'Bullet' else '1.'} {text.strip()}")
            else:
                lines.append(text)
        except Exception as exc:
            problems.append(f"{kind} {number} could not be read: {type(exc).__name__}: {exc}")
            lines.append(f"[{kind} {number} could not be read: {type(exc).__name__}]")
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    note = f"read block by block after the document's converter failed ({failure})"
    if problems:
        note += "; " + "; ".join(problems)
    return attrs.evolve(budget.take(text, None), note=note)


def epub(path: str, limits: Limits, ocr: TextRecognizer | None = None) -> Iterator[Section]:
    """The book as Markdown (metadata, then the chapters in reading order) in one section."""
    check_zip(path, limits)
    budget = _Budget(limits)
    yield budget.take(_markitdown("EpubConverter", path, ".epub"), None)


def msg(path: str, limits: Limits, ocr: TextRecognizer | None = None) -> Iterator[Section]:
    """An Outlook message (headers and body) as Markdown in one section."""
    budget = _Budget(limits)
    yield budget.take(_markitdown("OutlookMsgConverter", path, ".msg"), None)


_SLIDE_MARK = re.compile(r"<!-- Slide number: (\d+) -->")


def pptx(path: str, limits: Limits, ocr: TextRecognizer | None = None) -> Iterator[Section]:
    """One section per slide (``"slide N"``): its text, tables, charts and speaker notes, as Markdown.

    Through markitdown's converter; when it fails on the whole deck (a chart
    whose cached values are not numbers, a broken picture), the deck is read
    again slide by slide and shape by shape with python-pptx
    (:func:`pptx_by_slide`): what cannot be read becomes a placeholder and the
    section's ``note`` says what failed.
    """
    check_zip(path, limits, "ppt/")
    try:
        markdown = _markitdown("PptxConverter", path, ".pptx")
    except MissingExtra:
        raise
    except MemoryError:
        raise
    except Exception as exc:
        yield from pptx_by_slide(path, limits, f"{type(exc).__name__}: {exc}")
        return
    pieces = _SLIDE_MARK.split(markdown)
    slides = [(int(pieces[i]), pieces[i + 1].strip()) for i in range(1, len(pieces) - 1, 2)]
    budget = _Budget(limits)
    yield from _cut(
        (budget.take(text, f"slide {n}") for n, text in slides), budget, "slide", len(slides)
    )


def pptx_by_slide(path: str, limits: Limits, failure: str) -> Iterator[Section]:
    """The deck read slide by slide with python-pptx after the whole-deck converter failed.

    Each slide gives its title (``# ``), text frames, tables (Markdown), charts
    (``### Chart: <title>`` and a table of categories and series), picture
    descriptions and speaker notes (``### Notes:``), shapes in reading order
    (top, then left). An element that raises becomes ``[<element> could not
    be read: <error>]``; the slide's ``note`` lists those and names the
    whole-deck ``failure``.
    """
    try:
        from pptx import Presentation
    except ImportError as exc:
        raise MissingExtra(".pptx conversion", "extract", "python-pptx") from exc
    with contextlib.ExitStack() as stack:
        opened = path
        try:
            deck = Presentation(path)
            replaced: dict[str, str] = {}
        except Exception:
            # A chart or slide part that is not XML stops python-pptx from opening the
            # package at all: open a copy whose broken parts are empty ones of their kind.
            opened, replaced = _repaired_deck(path, stack)
            if not replaced:
                raise
            deck = Presentation(opened)
        missing: list[int] = []
        try:
            found = list(deck.slides)
        except KeyError:
            # A slide whose part is gone from the package: read a copy without it.
            opened, missing = _deck_without_missing_slides(opened, stack)
            if not missing:
                raise
            found = list(Presentation(opened).slides)
        slides: list[Any] = []
        kept = iter(found)
        for number in range(1, len(found) + len(missing) + 1):
            slides.append(None if number in missing else next(kept))
        yield from _slide_sections(slides, limits, failure, replaced)


def _slide_sections(
    slides: list[Any], limits: Limits, failure: str, replaced: dict[str, str]
) -> Iterator[Section]:
    """The sections of :func:`pptx_by_slide`."""
    budget = _Budget(limits)

    def sections() -> Iterator[Section]:
        for number, slide in enumerate(slides, start=1):
            problems: list[str] = []
            if slide is None:
                missing = f"[slide {number} could not be read: its part is missing]"
                section = budget.take(missing, f"slide {number}")
                yield attrs.evolve(
                    section,
                    note=f"read slide by slide after the deck's converter failed ({failure}); "
                    f"slide {number}'s part is missing from the package",
                )
                continue
            broken = replaced.get(str(slide.part.partname))
            if broken is not None:
                problems.append(f"the slide's part is not readable XML: {broken}")
            lines = _slide_lines(slide, problems, replaced)
            note = None
            if problems:
                note = (
                    f"read shape by shape after the deck's converter failed ({failure}); "
                    + "; ".join(problems)
                )
            text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
            section = budget.take(text, f"slide {number}")
            yield attrs.evolve(section, note=note)

    yield from _cut(sections(), budget, "slide", len(slides))


_EMPTY_PARTS: Final[dict[str, bytes]] = {
    # ISO/IEC 29500-1 §21.2.2.27 (chartSpace), §19.3.1.38 (sld), §19.3.1.26 (notes)
    "ppt/charts/": b'<c:chartSpace xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart">'
    b"<c:chart><c:plotArea><c:layout/></c:plotArea></c:chart></c:chartSpace>",
    "ppt/slides/": b'<p:sld xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
    b'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"><p:cSld><p:spTree>'
    b'<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr>'
    b"<p:grpSpPr/></p:spTree></p:cSld></p:sld>",
    "ppt/notesSlides/": b'<p:notes xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
    b'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"><p:cSld><p:spTree>'
    b'<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr>'
    b"<p:grpSpPr/></p:spTree></p:cSld></p:notes>",
}
"""Empty stand-ins for the parts of a deck that may be replaced when they are not XML."""


def _repaired_deck(path: str, stack: contextlib.ExitStack) -> tuple[str, dict[str, str]]:
    """A copy of the deck whose chart, slide and notes parts that do not parse are empty ones.

    Returns the copy's path and ``{"/ppt/charts/chart3.xml": "<parser error>"}`` for
    each part replaced (nothing replaced: the deck is broken elsewhere), as
    :func:`_package_copy` makes it.
    """
    return _package_copy(path, stack, _EMPTY_PARTS, ".pptx")


_PRESENTATION: Final = "ppt/presentation.xml"
_PRESENTATION_RELS: Final = "ppt/_rels/presentation.xml.rels"
_RELATIONSHIP_ID: Final = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"


def _deck_without_missing_slides(path: str, stack: contextlib.ExitStack) -> tuple[str, list[int]]:
    """A copy of the deck whose slide list leaves out slides whose part is not in the package.

    A ``<p:sldId r:id="rId10"/>`` (ISO/IEC 29500-1 §19.2.1.33) whose relationship
    is absent or names a member the ZIP does not hold makes python-pptx refuse
    the whole slide list. Returns the copy's path and the 1-based positions of
    the slides left out (none: ``path`` itself). Parsed without entities or
    network (lxml).
    """
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    with zipfile.ZipFile(path) as source:
        names = set(source.namelist())
        rels = etree.fromstring(source.read(_PRESENTATION_RELS), parser)
        targets = {
            rel.get("Id"): posixpath.normpath(posixpath.join("ppt", rel.get("Target", "")))
            for rel in rels
        }
        presentation = etree.fromstring(source.read(_PRESENTATION), parser)
        missing: list[int] = []
        for listing in presentation.iter("{*}sldIdLst"):
            for number, entry in enumerate(list(listing), start=1):
                if targets.get(entry.get(_RELATIONSHIP_ID)) not in names:
                    missing.append(number)
                    listing.remove(entry)
        if not missing:
            return path, missing
        spool = tempfile.NamedTemporaryFile(prefix="docbinder-", suffix=".pptx")  # noqa: SIM115
        copy = stack.enter_context(spool)
        with zipfile.ZipFile(copy, "w", zipfile.ZIP_DEFLATED) as out:
            for info in source.infolist():
                if info.filename == _PRESENTATION:
                    out.writestr(info, etree.tostring(presentation, xml_declaration=True))
                else:
                    out.writestr(info, source.read(info))
    copy.flush()
    return copy.name, missing


def _package_copy(
    path: str, stack: contextlib.ExitStack, stand_ins: Mapping[str, bytes | None], suffix: str
) -> tuple[str, dict[str, str]]:
    """A copy of the OPC package at ``path`` whose broken XML parts are replaced or left out.

    ``stand_ins`` maps a member name prefix (``"ppt/charts/"``, ``"xl/styles.xml"``)
    to the bytes that replace a member under it whose XML does not parse, or to
    ``None`` to leave it out. Returns the copy's path (removed when ``stack``
    closes) and ``{"/<member>": "<parser error>"}`` per member changed; when
    nothing changed, ``path`` itself. Members are parsed without entities or
    network (lxml), after :func:`check_zip`; relationship parts are kept as they are.
    """
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    changed: dict[str, str] = {}
    spool = tempfile.NamedTemporaryFile(prefix="docbinder-", suffix=suffix)  # noqa: SIM115
    copy = stack.enter_context(spool)
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(copy, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            body: bytes | None = source.read(info)
            prefix = next((p for p in stand_ins if info.filename.startswith(p)), None)
            if (
                prefix is not None
                and info.filename.endswith(".xml")
                and "/_rels/" not in info.filename
            ):
                try:
                    etree.fromstring(body, parser)
                except etree.XMLSyntaxError as exc:
                    changed["/" + info.filename] = f"{type(exc).__name__}: {exc}"
                    body = stand_ins[prefix]
            if body is not None:
                out.writestr(info, body)
    copy.flush()
    if not changed:
        return path, changed
    with contextlib.suppress(OSError):
        shutil.copystat(path, copy.name)
    return copy.name, changed


def _slide_lines(slide: Any, problems: list[str], replaced: dict[str, str]) -> list[str]:
    """The Markdown lines of one slide; failures are appended to ``problems``."""
    lines: list[str] = []
    try:
        title = slide.shapes.title
    except Exception:
        title = None
    try:
        shapes = sorted(
            slide.shapes,
            key=lambda s: (
                float("-inf") if s.top is None else s.top,
                float("-inf") if s.left is None else s.left,
            ),
        )
    except Exception as exc:
        problems.append(f"the slide's shapes could not be listed: {type(exc).__name__}: {exc}")
        shapes = []
    for shape in shapes:
        lines.extend(_shape_lines(shape, title, problems, replaced))
    try:
        if slide.has_notes_slide:
            frame = slide.notes_slide.notes_text_frame
            notes = (frame.text or "") if frame is not None else ""
            if notes.strip():
                lines.extend(["", "### Notes:", notes])
    except Exception as exc:
        problems.append(f"the speaker notes could not be read: {type(exc).__name__}: {exc}")
        lines.append(f"[speaker notes could not be read: {type(exc).__name__}]")
    return lines


def _shape_lines(
    shape: Any, title: Any, problems: list[str], replaced: dict[str, str]
) -> list[str]:
    """The lines of one shape (groups recursively); a failing shape becomes a placeholder."""
    kind = "shape"
    try:
        if getattr(shape, "has_chart", False) and shape.has_chart:
            kind = "chart"
            broken = replaced.get(str(shape.chart_part.partname))
            if broken is not None:
                raise ValueError(f"its part is not readable XML ({broken})")
            return _chart_lines(shape.chart)
        if getattr(shape, "has_table", False) and shape.has_table:
            kind = "table"
            rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
            return ["", markdown_table(rows), ""]
        if shape.shape_type is not None and shape.shape_type == 6:  # MSO_SHAPE_TYPE.GROUP
            kind = "group"
            out: list[str] = []
            for child in shape.shapes:
                out.extend(_shape_lines(child, None, problems, replaced))
            return out
        if shape.shape_type is not None and shape.shape_type == 13:  # MSO_SHAPE_TYPE.PICTURE
            kind = "picture"
            described = shape._element._nvXxPr.cNvPr.attrib.get("descr", "") or shape.name
            return [f"![{' '.join(str(described).split())}]"]
        if shape.has_text_frame:
            kind = "text"
            text = shape.text_frame.text or ""
            if title is not None and shape.shape_id == title.shape_id:
                return [f"# {text.strip()}"] if text.strip() else []
            return [text] if text.strip() else []
    except Exception as exc:
        name = getattr(shape, "name", "") or kind
        problems.append(f"{kind} {name!r} could not be read: {type(exc).__name__}: {exc}")
        return [f"[{kind} {name!r} could not be read: {type(exc).__name__}]"]
    return []


def _chart_lines(chart: Any) -> list[str]:
    """``### Chart: <title>`` and a Markdown table (categories by series); raises if unreadable.

    Values are the chart's cached point values as stored (``c:pt/c:v``, ISO/IEC
    29500-1 §21.2.2.150), so a cell that was in error when the deck was saved
    shows as ``#N/A`` instead of breaking the chart.
    """
    heading = "### Chart"
    if chart.has_title and chart.chart_title.has_text_frame:
        heading += f": {chart.chart_title.text_frame.text}"
    categories = [str(c) for c in chart.plots[0].categories]
    names: list[object] = ["Category"]
    columns: list[dict[int, str]] = []
    for series in chart.series:
        names.append(series.name)
        points: dict[int, str] = {}
        for point in series._element.xpath("./c:val//c:pt"):
            value = point.xpath("./c:v")
            points[int(point.get("idx"))] = (value[0].text or "") if value else ""
        columns.append(points)
    rows: list[list[object]] = [names]
    for index, category in enumerate(categories):
        rows.append([category, *[points.get(index, "") for points in columns]])
    return ["", heading, "", markdown_table(rows), ""]


# -- spreadsheets -----------------------------------------------------------------------------
def _cell(value: object) -> str:
    if value is None:
        return ""
    text = str(value)
    return text.replace("|", "\\|").replace("\r\n", " ").replace("\n", " ")


def markdown_table(rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured Markdown table of ``rows``; the first row is the header."""
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    lines = []
    for index, row in enumerate(rows):
        cells = [_cell(v) for v in row] + [""] * (width - len(row))
        lines.append("| " + " | ".join(cells) + " |")
        if index == 0:
            lines.append("|" + "---|" * width)
    return "\n".join(lines)


class _RowCounter:
    def __init__(self) -> None:
        self.rows = 0


def _sheet_sections(
    sheets: Iterator[tuple[str, Iterator[Sequence[object]]]],
    budget: _Budget,
    total: int,
) -> Iterator[Section]:
    """One section per sheet: ``## <name>`` and a Markdown table of its non-empty rows.

    A sheet whose rows stop parsing keeps the rows read so far, then the line
    ``[the rest of sheet '<name>' could not be read: <error>]``; its ``note``
    says so and the next sheet is read.
    """
    counter = _RowCounter()
    for number, (name, rows) in enumerate(sheets, start=1):
        kept: list[list[object]] = []
        reason = None
        failure = None
        try:
            for row in rows:
                counter.rows += 1
                if counter.rows > budget.limits.max_rows:
                    reason = f"the workbook has more than {budget.limits.max_rows} rows"
                    break
                if counter.rows % 1000 == 0 and budget.out_of_time():
                    reason = budget.time_reason()
                    break
                values = list(row)
                while values and (values[-1] is None or values[-1] == ""):
                    values.pop()
                if values:
                    kept.append(values)
        except MemoryError:
            raise
        except Exception as exc:  # one broken sheet must not lose the others
            failure = f"{type(exc).__name__}: {exc}"
        text = f"## {name}\n\n{markdown_table(kept)}".rstrip()
        if failure is not None:
            text += f"\n\n[the rest of sheet {name!r} could not be read: {failure}]"
        section = budget.take(text, f"sheet {number}: {name}")
        if failure is not None:
            read = f"{len(kept)} row(s) with values" if kept else "no row"
            section = attrs.evolve(
                section, note=f"sheet {name!r} could not be read past {read}: {failure}"
            )
        if reason is not None and section.truncated_reason is None:
            section = attrs.evolve(section, truncated_reason=reason)
        yield section
        if section.truncated_reason is not None:
            return
        next_reason = None
        if number >= budget.limits.max_pages and number < total:
            next_reason = f"more than {budget.limits.max_pages} sheets"
        elif budget.out_of_time() and number < total:
            next_reason = budget.time_reason()
        if next_reason is not None:
            yield Section("", f"sheet {number + 1}", next_reason)
            return


def xlsx(path: str, limits: Limits, ocr: TextRecognizer | None = None) -> Iterator[Section]:
    """One section per worksheet (``"sheet N: <name>"``), cell values as a Markdown table.

    Read with ``openpyxl`` in read-only mode (rows streamed, formulas as their
    cached values); empty rows are skipped but count against
    :attr:`Limits.max_rows`. The sheet's declared ``<dimension>``
    (ECMA-376 Part 1 §18.3.1.35) is not trusted: generators write ``A1`` for a
    filled sheet or ``A1:XFD1048576`` for a small one, so the rows are read as
    they are stored (openpyxl's ``reset_dimensions``), neither cut at nor
    padded to the declared size.
    """
    check_zip(path, limits, "xl/")
    try:
        from openpyxl import load_workbook
    except ImportError as exc:
        raise MissingExtra("spreadsheet conversion", "extract", "openpyxl") from exc
    with contextlib.ExitStack() as stack:
        try:
            book = load_workbook(path, read_only=True, data_only=True)
            dropped: dict[str, str] = {}
        except (MemoryError, MissingExtra):
            raise
        except Exception:
            # Styles and theme only dress the cells: a copy without the ones that do not
            # parse keeps every value (openpyxl reads a workbook without them).
            repaired, dropped = _package_copy(path, stack, _XLSX_DRESSING, ".xlsx")
            if not dropped:
                raise
            book = load_workbook(repaired, read_only=True, data_only=True)
        sections = _workbook_sections(book, limits)
        if not dropped:
            yield from sections
            return
        note = "read without its unreadable " + "; ".join(
            f"{part} ({error})" for part, error in dropped.items()
        )
        for section in sections:
            joined = note if section.note is None else f"{note}; {section.note}"
            yield attrs.evolve(section, note=joined)


_XLSX_DRESSING: Final[Mapping[str, bytes | None]] = {"xl/styles.xml": None, "xl/theme/": None}
"""Parts of a workbook that style cells and hold no values (ECMA-376 Part 1 §12.3.20, §14.2.7):
left out of the copy when they do not parse."""


def _workbook_sections(book: Any, limits: Limits) -> Iterator[Section]:
    """The sections of an open openpyxl workbook (see :func:`xlsx`); closes it at the end."""
    try:
        sheets = list(book.worksheets)
        for sheet in sheets:
            reset = getattr(sheet, "reset_dimensions", None)
            if callable(reset):
                reset()
        budget = _Budget(limits)
        yield from _sheet_sections(
            ((ws.title, ws.iter_rows(values_only=True)) for ws in sheets), budget, len(sheets)
        )
    finally:
        book.close()


def xls(path: str, limits: Limits, ocr: TextRecognizer | None = None) -> Iterator[Section]:
    """One section per sheet of a legacy Excel ``.xls`` workbook, via ``xlrd``."""
    try:
        import xlrd
    except ImportError as exc:
        raise MissingExtra("legacy Excel conversion", "extract", "xlrd") from exc
    book = xlrd.open_workbook(path, on_demand=True)
    try:
        names = book.sheet_names()

        def rows(index: int) -> Iterator[Sequence[object]]:
            sheet = book.sheet_by_index(index)
            for r in range(sheet.nrows):
                yield sheet.row_values(r)

        budget = _Budget(limits)
        yield from _sheet_sections(
            ((name, rows(i)) for i, name in enumerate(names)), budget, len(names)
        )
    finally:
        book.release_resources()


def _odf() -> Any:
    try:
        from odf import opendocument, table, teletype, text
    except ImportError as exc:
        raise MissingExtra("OpenDocument conversion", "extract", "odfpy") from exc
    return opendocument, table, teletype, text


def ods(path: str, limits: Limits, ocr: TextRecognizer | None = None) -> Iterator[Section]:
    """One section per table of an OpenDocument spreadsheet, via ``odfpy``.

    Repeated rows and cells (``table:number-rows-repeated``,
    ``table:number-columns-repeated``, ODF 1.2 Part 1 §9.1.3/§9.1.4) are
    expanded only up to :attr:`Limits.max_rows` rows and 1,024 columns.
    """
    check_zip(path, limits)
    opendocument, table, teletype, _text = _odf()
    document = opendocument.load(path)
    tables = document.spreadsheet.getElementsByType(table.Table)

    def rows(sheet: Any) -> Iterator[Sequence[object]]:
        for row in sheet.getElementsByType(table.TableRow):
            values: list[object] = []
            for cell in row.getElementsByType(table.TableCell):
                repeat = int(cell.getAttribute("numbercolumnsrepeated") or 1)
                value = teletype.extractText(cell)
                values.extend([value] * min(repeat, 1024 - len(values)))
                if len(values) >= 1024:
                    break
            while values and values[-1] == "":
                values.pop()  # trailing empty cells once, not once per repetition
            repeat_rows = int(row.getAttribute("numberrowsrepeated") or 1)
            for _ in range(min(repeat_rows, limits.max_rows + 1)):
                yield values

    budget = _Budget(limits)
    yield from _sheet_sections(
        ((str(t.getAttribute("name")), rows(t)) for t in tables), budget, len(tables)
    )


def odt(path: str, limits: Limits, ocr: TextRecognizer | None = None) -> Iterator[Section]:
    """An OpenDocument text as Markdown-like text: headings as ``#``, paragraphs, list items."""
    check_zip(path, limits)
    opendocument, _table, teletype, text = _odf()
    document = opendocument.load(path)
    budget = _Budget(limits)
    lines: list[str] = []
    for element in document.text.childNodes:
        lines.extend(_odt_block(element, teletype, text))
    yield budget.take("\n\n".join(line for line in lines if line.strip()), None)


def _odt_block(element: Any, teletype: Any, text: Any) -> list[str]:
    """Lines of one element of an OpenDocument text body (ODF 1.2 Part 1 §5.1, §6.1)."""
    from odf.namespaces import TEXTNS

    qname = getattr(element, "qname", None)
    if qname == (TEXTNS, "h"):
        level = int(element.getAttribute("outlinelevel") or 1)
        return ["#" * max(1, min(level, 6)) + " " + teletype.extractText(element)]
    if qname == (TEXTNS, "p"):
        return [teletype.extractText(element)]
    if qname == (TEXTNS, "list"):
        items = []
        for item in element.getElementsByType(text.ListItem):
            items.append("- " + teletype.extractText(item))
        return ["\n".join(items)]
    if hasattr(element, "childNodes"):
        out: list[str] = []
        for child in element.childNodes:
            out.extend(_odt_block(child, teletype, text))
        return out
    return []


# -- RTF and e-mail ----------------------------------------------------------------------------
def rtf(path: str, limits: Limits, ocr: TextRecognizer | None = None) -> Iterator[Section]:
    """The plain text of an RTF document (control words removed), via ``striprtf``."""
    try:
        from striprtf.striprtf import rtf_to_text
    except ImportError as exc:
        raise MissingExtra("RTF conversion", "extract", "striprtf") from exc
    with open(path, "rb") as handle:
        raw = handle.read(limits.max_decoded_bytes + 1)
    if len(raw) > limits.max_decoded_bytes:
        raise ConversionRefused(f"the RTF file is larger than {limits.max_decoded_bytes} bytes")
    budget = _Budget(limits)
    text: str = rtf_to_text(raw.decode("latin-1"), errors="ignore")  # type: ignore[no-untyped-call]
    yield budget.take(text.strip(), None)


def eml(path: str, limits: Limits, ocr: TextRecognizer | None = None) -> Iterator[Section]:
    """An RFC 5322 message: From/To/Cc/Date/Subject, then the text body (or the HTML body's text)."""
    import email
    from email import policy

    with open(path, "rb") as handle:
        message = email.message_from_binary_file(handle, policy=policy.default)
    header_lines = [
        f"{name}: {message[name]}"
        for name in ("From", "To", "Cc", "Date", "Subject")
        if message[name] is not None
    ]
    body = message.get_body(preferencelist=("plain", "html"))
    text = ""
    if body is not None:
        content = body.get_content()
        text = content if isinstance(content, str) else ""
        if body.get_content_type() == "text/html":
            text = html_to_markdown(text)
    attachments = [part.get_filename() or "(unnamed)" for part in message.iter_attachments()]
    if attachments:
        text += "\n\nAttachments: " + ", ".join(attachments)
    budget = _Budget(limits)
    yield budget.take("\n".join(header_lines) + "\n\n" + text.strip(), None)


def html_to_markdown(markup: str | bytes) -> str:
    """HTML as Markdown through markitdown's converter (BeautifulSoup + markdownify).

    The ``<title>`` comes first unless the page's first lines already hold it.
    ``bytes`` are decoded by BeautifulSoup (byte order mark, ``<meta charset>``,
    then detection); script and style elements are dropped.
    """
    try:
        import io

        from markitdown import StreamInfo
        from markitdown.converters import HtmlConverter
    except ImportError as exc:
        raise MissingExtra("HTML conversion", "extract", "markitdown") from exc
    if isinstance(markup, str):
        raw, info = markup.encode("utf-8"), StreamInfo(extension=".html", charset="utf-8")
    else:
        raw, info = markup, StreamInfo(extension=".html")
    result = HtmlConverter().convert(io.BytesIO(raw), info)
    markdown = str(result.markdown or "").strip()
    title = " ".join(str(result.title or "").split())
    if title and title not in markdown[: len(title) + 200]:
        markdown = f"{title}\n\n{markdown}" if markdown else title
    return markdown


def html(path: str, limits: Limits, ocr: TextRecognizer | None = None) -> Iterator[Section]:
    """An HTML page as Markdown (headings, lists, tables, links) in one section."""
    with open(path, "rb") as handle:
        raw = handle.read()
    budget = _Budget(limits)
    yield budget.take(html_to_markdown(raw).strip(), None)


Converter = Callable[[str, Limits, TextRecognizer | None], Iterator[Section]]
"""A converter: the file's path, the budgets, the OCR engine (``None``: no OCR)."""

CONVERTERS: Final[dict[str, Converter]] = {
    "pdf": pdf,
    "image": image,
    "docx": docx,
    "pptx": pptx,
    "xlsx": xlsx,
    "xls": xls,
    "ods": ods,
    "odt": odt,
    "epub": epub,
    "rtf": rtf,
    "eml": eml,
    "msg": msg,
    "html": html,
}
"""Converter by format name."""
