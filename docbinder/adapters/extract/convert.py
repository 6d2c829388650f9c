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

ZIP-based packages (Office Open XML, OpenDocument, EPUB) are checked before
conversion: the sum of the members' declared uncompressed sizes (PKWARE
APPNOTE §4.4.9; Python's :mod:`zipfile` never inflates a member past its
declared size) must stay within ``Limits.max_decoded_bytes``, so a zip bomb
is refused without being inflated.
"""

from __future__ import annotations

import re
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

import attrs

from docbinder.domain.errors import MissingExtra

MAX_SHEET_ROWS: Final = 100_000
"""Default of :attr:`Limits.max_rows`: rows (empty ones included) read from one workbook before it is cut."""

MAX_ZIP_MEMBERS: Final = 10_000
"""Members a ZIP-based package may have."""


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
    """One piece of converted text; ``truncated_reason`` is set when a limit cut it."""

    text: str
    position: str | None = None
    truncated_reason: str | None = None


class ConversionRefused(Exception):
    """The file breaks a limit before conversion starts (a zip bomb); the message says which."""


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


def check_zip(path: str, limits: Limits) -> None:
    """Refuse a ZIP package whose declared uncompressed size or member count is too big.

    Raises :class:`ConversionRefused` naming the sizes; :class:`zipfile.BadZipFile`
    for a file that is no ZIP archive.
    """
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
    if len(infos) > MAX_ZIP_MEMBERS:
        raise ConversionRefused(f"the package has {len(infos)} members (limit {MAX_ZIP_MEMBERS})")
    total = sum(info.file_size for info in infos)
    if total > limits.max_decoded_bytes:
        raise ConversionRefused(
            f"the package inflates to {total} bytes, more than the limit of "
            f"{limits.max_decoded_bytes} decoded bytes (zip bomb?)"
        )


# -- PDF ------------------------------------------------------------------------------------
def pdf(path: str, limits: Limits) -> Iterator[Section]:
    """One section per page with text (``"page N"``); pages, decoded bytes and time are capped.

    The decoded size of each page's content stream counts against
    ``max_decoded_bytes`` before its text is extracted, so pages that all
    share one large stream stop the document early.
    """
    try:
        from pypdf import PdfReader
    except ImportError as exc:
        raise MissingExtra("PDF text extraction", "extract", "pypdf") from exc

    budget = _Budget(limits)
    reader = PdfReader(path)
    if reader.is_encrypted:
        reader.decrypt("")  # an empty user password opens many "protected" PDFs
    page_count = len(reader.pages)
    decoded = 0
    last: Section | None = None
    for number in range(1, page_count + 1):
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
            yield Section("", f"page {number}", f"stopped before page {number}: {reason}")
            return
        text = page.extract_text() or ""
        if not text.strip():
            continue
        last = budget.take(text, f"page {number}")
        yield last
        if last.truncated_reason is not None:
            return
        if budget.full and number < page_count:
            yield Section(
                "",
                f"page {number + 1}",
                f"text is longer than {limits.max_text_chars} characters",
            )
            return


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


def docx(path: str, limits: Limits) -> Iterator[Section]:
    """The document as Markdown (headings, lists, tables) in one section."""
    check_zip(path, limits)
    budget = _Budget(limits)
    yield budget.take(_markitdown("DocxConverter", path, ".docx"), None)


def epub(path: str, limits: Limits) -> Iterator[Section]:
    """The book as Markdown (metadata, then the chapters in reading order) in one section."""
    check_zip(path, limits)
    budget = _Budget(limits)
    yield budget.take(_markitdown("EpubConverter", path, ".epub"), None)


def msg(path: str, limits: Limits) -> Iterator[Section]:
    """An Outlook message (headers and body) as Markdown in one section."""
    budget = _Budget(limits)
    yield budget.take(_markitdown("OutlookMsgConverter", path, ".msg"), None)


_SLIDE_MARK = re.compile(r"<!-- Slide number: (\d+) -->")


def pptx(path: str, limits: Limits) -> Iterator[Section]:
    """One section per slide (``"slide N"``): its text, tables and speaker notes, as Markdown."""
    check_zip(path, limits)
    markdown = _markitdown("PptxConverter", path, ".pptx")
    pieces = _SLIDE_MARK.split(markdown)
    slides = [(int(pieces[i]), pieces[i + 1].strip()) for i in range(1, len(pieces) - 1, 2)]
    budget = _Budget(limits)
    yield from _cut(
        (budget.take(text, f"slide {n}") for n, text in slides), budget, "slide", len(slides)
    )


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
    """One section per sheet: ``## <name>`` and a Markdown table of its non-empty rows."""
    counter = _RowCounter()
    for number, (name, rows) in enumerate(sheets, start=1):
        kept: list[list[object]] = []
        reason = None
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
        text = f"## {name}\n\n{markdown_table(kept)}".rstrip()
        section = budget.take(text, f"sheet {number}: {name}")
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


def xlsx(path: str, limits: Limits) -> Iterator[Section]:
    """One section per worksheet (``"sheet N: <name>"``), cell values as a Markdown table.

    Read with ``openpyxl`` in read-only mode (rows streamed, formulas as their
    cached values); empty rows are skipped but count against
    :attr:`Limits.max_rows`.
    """
    check_zip(path, limits)
    try:
        from openpyxl import load_workbook
    except ImportError as exc:
        raise MissingExtra("spreadsheet conversion", "extract", "openpyxl") from exc
    book = load_workbook(path, read_only=True, data_only=True)
    try:
        sheets = list(book.worksheets)
        budget = _Budget(limits)
        yield from _sheet_sections(
            ((ws.title, ws.iter_rows(values_only=True)) for ws in sheets), budget, len(sheets)
        )
    finally:
        book.close()


def xls(path: str, limits: Limits) -> Iterator[Section]:
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


def ods(path: str, limits: Limits) -> Iterator[Section]:
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


def odt(path: str, limits: Limits) -> Iterator[Section]:
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
def rtf(path: str, limits: Limits) -> Iterator[Section]:
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


def eml(path: str, limits: Limits) -> Iterator[Section]:
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


def html(path: str, limits: Limits) -> Iterator[Section]:
    """An HTML page as Markdown (headings, lists, tables, links) in one section."""
    with open(path, "rb") as handle:
        raw = handle.read()
    budget = _Budget(limits)
    yield budget.take(html_to_markdown(raw).strip(), None)


Converter = Callable[[str, Limits], Iterator[Section]]

CONVERTERS: Final[dict[str, Converter]] = {
    "pdf": pdf,
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
