"""Real document files for the tests, written with each format's own writer library."""

from __future__ import annotations

import io
import zipfile
import zlib
from email.message import EmailMessage
from typing import Any


def pdf_document(objects: list[bytes]) -> bytes:
    """A PDF 1.4 file (ISO 32000-1 §7.5) of ``objects`` (numbered from 1; 1 is the catalog).

    The cross-reference table's offsets are computed, so pypdf reads the file
    without repairs.
    """
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def docx_bytes() -> bytes:
    """A Word document with a heading, a list, a table and a paragraph (python-docx)."""
    from docx import Document

    document = Document()
    document.add_heading("Quarterly report", level=1)
    document.add_paragraph("Revenue grew in every region.")
    document.add_paragraph("North up 12%", style="List Bullet")
    document.add_paragraph("South up 7%", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Region"
    table.cell(0, 1).text = "Sales"
    table.cell(1, 0).text = "North"
    table.cell(1, 1).text = "1200"
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def xlsx_bytes(sheets: int = 2, rows: int = 3) -> bytes:
    """A workbook of ``sheets`` sheets named ``Sheet<n>`` with a header and ``rows`` rows."""
    from openpyxl import Workbook

    book = Workbook()
    first = book.active
    assert first is not None
    first.title = "Totals"
    for index in range(sheets):
        sheet = first if index == 0 else book.create_sheet(f"Region {index + 1}")
        sheet.append(["Item", "Price"])
        for row in range(rows):
            sheet.append([f"item {index + 1}.{row + 1}", (row + 1) * 10])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def pptx_bytes(slides: int = 2, media: bytes | None = None) -> bytes:
    """A deck of ``slides`` title slides with speaker notes (python-pptx).

    ``media`` embeds a movie part with those bytes on the first slide.
    """
    from pptx import Presentation

    deck = Presentation()
    for number in range(1, slides + 1):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Slide title {number}"
        slide.placeholders[1].text = f"Bullet point {number}"
        slide.notes_slide.notes_text_frame.text = f"Speaker note {number}"
        if media is not None and number == 1:
            slide.shapes.add_movie(
                io.BytesIO(media), 0, 0, 100, 100, mime_type="video/mp4", poster_frame_image=None
            )
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def odt_bytes() -> bytes:
    """An OpenDocument text with a heading and two paragraphs (odfpy)."""
    from odf.opendocument import OpenDocumentText
    from odf.text import H, P

    document = OpenDocumentText()
    document.text.addElement(H(outlinelevel=1, text="Meeting notes"))
    document.text.addElement(P(text="Decisions were taken."))
    document.text.addElement(P(text="Next meeting on Monday."))
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


def ods_bytes() -> bytes:
    """An OpenDocument spreadsheet with two tables (odfpy)."""
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    document = OpenDocumentSpreadsheet()
    for name, rows in (("Stock", [["Item", "Count"], ["pens", "40"]]), ("Orders", [["Id"], ["7"]])):
        table = Table(name=name)
        for values in rows:
            row = TableRow()
            for value in values:
                cell = TableCell()
                cell.addElement(P(text=value))
                row.addElement(cell)
            table.addElement(row)
        document.spreadsheet.addElement(table)
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


def epub_bytes() -> bytes:
    """An EPUB 3 book with one chapter (ebooklib)."""
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("urn:uuid:docbinder-test-book")
    book.set_title("Field guide")
    book.set_language("en")
    book.add_author("A. Writer")
    chapter = epub.EpubHtml(title="Birds", file_name="birds.xhtml", lang="en")
    chapter.content = "<html><body><h1>Birds</h1><p>The robin sings at dawn.</p></body></html>"
    book.add_item(chapter)
    book.toc = [chapter]
    book.spine = ["nav", chapter]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    out = io.BytesIO()
    epub.write_epub(out, book)
    return out.getvalue()


def eml_bytes() -> bytes:
    """An RFC 5322 message with a text body and an attachment (email package)."""
    message = EmailMessage()
    message["From"] = "ana@example.org"
    message["To"] = "bo@example.org"
    message["Subject"] = "Invoice March"
    message.set_content("Please find the invoice attached.\nRegards")
    message.add_attachment(b"%PDF-1.4", maintype="application", subtype="pdf", filename="inv.pdf")
    return bytes(message)


def rtf_bytes() -> bytes:
    """A small RTF 1.x document (RTF is itself text; written per the RTF 1.9.1 syntax)."""
    return (
        b"{\\rtf1\\ansi\\deff0{\\fonttbl{\\f0 Helvetica;}}"
        b"\\f0\\pard Contract draft\\par {\\b Clause 1}: delivery in May\\par}"
    )


def zip_bomb_docx(inflated_bytes: int) -> bytes:
    """A .docx whose ``word/document.xml`` inflates to ``inflated_bytes`` bytes of spaces.

    Deflate compresses runs of one byte about 1000:1, so 5 MB fit in about 5 KB.
    """
    genuine = zipfile.ZipFile(io.BytesIO(docx_bytes()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as bomb:
        for info in genuine.infolist():
            data = genuine.read(info.filename)
            if info.filename == "word/document.xml":
                data = data.replace(b"<w:body>", b"<w:body>" + b" " * inflated_bytes, 1)
            bomb.writestr(info.filename, data)
    return out.getvalue()


def xlsx_with_empty_rows(rows: int) -> bytes:
    """A workbook whose one sheet has a header, one value row, then ``rows`` empty rows.

    Written with openpyxl, then the sheet XML gets the empty ``<row/>``
    elements (openpyxl itself writes no row without cells). A million of them
    compress to a few KB.
    """
    base = zipfile.ZipFile(io.BytesIO(xlsx_bytes(sheets=1, rows=1)))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as book:
        for info in base.infolist():
            data = base.read(info.filename)
            if info.filename == "xl/worksheets/sheet1.xml":
                data = data.replace(b"</sheetData>", b"<row/>" * rows + b"</sheetData>", 1)
                data = data.replace(b'<dimension ref="A1:B2"/>', b"", 1)
            book.writestr(info.filename, data)
    return out.getvalue()


def shared_stream_pdf(pages: int, stream_repeats: int) -> bytes:
    """A PDF whose ``pages`` pages all draw one Flate-compressed content stream.

    The stream repeats a text line ``stream_repeats`` times, so the file stays
    small while every page decodes and interprets the whole stream again
    (ISO 32000-1 §7.3.8 streams, §7.4.4 FlateDecode, §7.7.3.3 page objects).
    """
    line = b"BT /F1 9 Tf 20 700 Td (shared content line) Tj ET\n"
    stream = zlib.compress(line * stream_repeats, 9)
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids ["
        + b" ".join(b"%d 0 R" % (5 + i) for i in range(pages))
        + b"] /Count %d >>" % pages,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(stream), stream),
    ]
    for _ in range(pages):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>"
        )
    return pdf_document(objects)


def ods_with_repeated_rows(rows: int) -> bytes:
    """An OpenDocument spreadsheet whose one value row is followed by a row repeated ``rows`` times."""
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    document = OpenDocumentSpreadsheet()
    table = Table(name="Data")
    first = TableRow()
    cell = TableCell()
    cell.addElement(P(text="value"))
    first.addElement(cell)
    table.addElement(first)
    empty = TableRow(numberrowsrepeated=rows)
    empty.addElement(TableCell(numbercolumnsrepeated=16384))
    table.addElement(empty)
    document.spreadsheet.addElement(table)
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


# -- files as people really have them -------------------------------------------------------


def encrypted_pdf(text: str, *, user_password: str = "", algorithm: str = "AES-128") -> bytes:
    """A one-page PDF with ``text``, encrypted with ``algorithm`` (pypdf's writer).

    An empty ``user_password`` opens it in every viewer (only the owner
    password, set to a fixed value, restricts copying or printing).
    """
    from pypdf import PdfReader, PdfWriter

    from tests.unit.test_extract import pdf_bytes

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_bytes(text))))
    writer.encrypt(
        user_password=user_password,
        owner_password="owner-secret",
        algorithm=algorithm,
        permissions_flag=0,  # nothing allowed without the owner password
    )
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def pptx_with_broken_chart(*, broken_slides: tuple[int, ...] = (2,), slides: int = 3) -> bytes:
    """A deck of ``slides`` slides with titles, bullets and speaker notes; a chart on each
    slide of ``broken_slides`` whose cached values hold ``#N/A`` (a chart whose source cell
    had an error when it was saved: python-pptx writes the string, readers expect numbers).
    """
    from pptx import Presentation
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    deck = Presentation()
    for number in range(1, slides + 1):
        slide = deck.slides.add_slide(deck.slide_layouts[5])  # title only
        slide.shapes.title.text = f"Slide title {number}"
        box = slide.shapes.add_textbox(Inches(1), Inches(1.5), Inches(4), Inches(1))
        box.text_frame.text = f"Bullet point {number}"
        slide.notes_slide.notes_text_frame.text = f"Speaker note {number}"
        if number in broken_slides:
            data = CategoryChartData()
            data.categories = ["Q1", "Q2", "Q3"]
            data.add_series("Revenue", (10.0, 12.0, 14.0))
            chart = slide.shapes.add_chart(
                XL_CHART_TYPE.COLUMN_CLUSTERED,
                Inches(1),
                Inches(3),
                Inches(6),
                Inches(3),
                data,
            ).chart
            chart.has_title = True
            chart.chart_title.text_frame.text = f"Revenue chart {number}"
            # The cached value of Q2 becomes "#N/A", as Excel leaves it for a cell in error.
            values = chart.plots[0].series[0]._element.xpath("./c:val//c:pt[@idx='1']/c:v")
            values[0].text = "#N/A"
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def xlsx_with_dimension(ref: str, rows: int = 10) -> bytes:
    """A workbook whose one sheet has a header and ``rows - 1`` data rows but declares
    ``<dimension ref="{ref}"/>`` (what WPS and other generators write)."""
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Data"
    sheet.append(["Month", "Amount"])
    for row in range(1, rows):
        sheet.append([f"month {row}", row * 100])
    saved = io.BytesIO()
    book.save(saved)
    return rewrite_dimension(saved.getvalue(), ref)


def rewrite_dimension(workbook: bytes, ref: str) -> bytes:
    """``workbook`` (an .xlsx) with its first sheet's ``<dimension>`` replaced by ``ref``."""
    import re

    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(workbook)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            body = source.read(info)
            if info.filename == "xl/worksheets/sheet1.xml":
                body = re.sub(
                    rb'<dimension ref="[^"]*"/>', b'<dimension ref="%s"/>' % ref.encode(), body
                )
                assert ref.encode() in body
            target.writestr(info, body)
    return out.getvalue()


INVOICE_LINES = (
    "INVOICE No. 2026-0042",
    "Date: 1 December 2026",
    "Bill to: Example Industries Ltd",
    "Consulting hours 12 at 120.00",
    "Total due: EUR 1,440.00",
)
"""The text of the scanned invoice page (:func:`scanned_page`)."""


def scanned_page(
    lines: tuple[str, ...] = INVOICE_LINES, *, size: tuple[int, int] = (1240, 1754)
) -> Any:
    """A grayscale page image (Pillow) with ``lines`` of dark text, as a scanner makes it.

    ``size`` is in pixels; the default is A4 at 150 dpi. Text is drawn with
    Pillow's own scalable font, so no system font is needed.
    """
    from PIL import Image, ImageDraw, ImageFont

    page = Image.new("L", size, 255)
    draw = ImageDraw.Draw(page)
    font = ImageFont.load_default(size=max(size[0] // 40, 12))
    step = max(size[0] // 20, 16)
    for index, line in enumerate(lines):
        draw.text((size[0] // 12, size[1] // 10 + index * step), line, fill=20, font=font)
    return page


def scanned_pdf(pages: int = 1, *, blank: tuple[int, ...] = (), dpi: int = 150) -> bytes:
    """A PDF of ``pages`` image-only pages (no text layer), as "scan to PDF" writes it.

    Page ``n`` reads the invoice with ``Page n of N`` added; pages in ``blank``
    are empty white scans. Written by Pillow's PDF writer (one JPEG image per page).
    """
    images = []
    for number in range(1, pages + 1):
        if number in blank:
            images.append(scanned_page(()))
        else:
            images.append(scanned_page((*INVOICE_LINES, f"Page {number} of {pages}")))
    out = io.BytesIO()
    images[0].save(out, "PDF", resolution=dpi, save_all=True, append_images=images[1:])
    return out.getvalue()


def png(image: Any) -> bytes:
    """``image`` (Pillow) as PNG bytes."""
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def xlsx_with_broken_sheet(sheets: int = 3, broken: int = 2, rows: int = 4) -> bytes:
    """A workbook of ``sheets`` sheets whose sheet ``broken`` has its XML cut off after two rows
    (a download that ended early, a generator that crashed while writing)."""
    import re

    source_bytes = xlsx_bytes(sheets=sheets, rows=rows)
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(source_bytes)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            body = source.read(info)
            if info.filename == f"xl/worksheets/sheet{broken}.xml":
                third = [m.start() for m in re.finditer(rb"<row ", body)][2]
                body = body[: third + 20]  # in the middle of the third row's markup
            target.writestr(info, body)
    return out.getvalue()


def deck_with_every_chart_broken(slides: int = 5) -> bytes:
    """A deck whose every slide has a chart with ``#N/A`` cached values; the chart part of
    slide 3 is not XML at all and the one of slide 4 has an unknown element in its categories."""
    data = pptx_with_broken_chart(broken_slides=tuple(range(1, slides + 1)), slides=slides)
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            body = source.read(info)
            if info.filename == "ppt/charts/chart3.xml":
                body = b"<c:chartSpace this is not xml"
            elif info.filename == "ppt/charts/chart4.xml":
                body = body.replace(b"<c:cat>", b"<c:cat><c:bogus/>")
            target.writestr(info, body)
    return out.getvalue()


def slow_docx(paragraphs: int = 20_000) -> bytes:
    """A Word document of ``paragraphs`` short paragraphs: some 40 KB that mammoth needs
    many seconds for (20,000 paragraphs: about 20 s on a 2-core machine; ECMA-376 Part 1
    §17.3.1.22 paragraphs), far under the decompressed-size limit."""
    paragraph = b"<w:p><w:r><w:t>Revenue grew in every region, line after line.</w:t></w:r></w:p>"
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(docx_bytes())) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "word/document.xml":
                data = data.replace(b"</w:body>", paragraph * paragraphs + b"</w:body>", 1)
            target.writestr(info.filename, data)
    return out.getvalue()


def html_page(token: str, rows: int = 40) -> bytes:
    """An HTML page with a heading naming ``token`` and a table of ``rows`` rows."""
    cells = "".join(f"<tr><td>{token} row {i}</td><td>{i * 7}</td></tr>" for i in range(rows))
    return (
        f"<html><head><title>{token}</title></head><body><h1>Report {token}</h1>"
        f"<p>Figures for {token}.</p><table><tr><th>Item</th><th>Value</th></tr>{cells}"
        "</table></body></html>"
    ).encode()
