"""Real document files for the tests, written with each format's own writer library."""

from __future__ import annotations

import io
import zipfile
import zlib
from email.message import EmailMessage


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
