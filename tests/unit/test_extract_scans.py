"""Files as people really have them: scans, half-failing converters, lying workbooks, locked PDFs.

Every file is written in the test (``tests/documents.py``): scans are page images drawn
with Pillow and saved the way "scan to PDF" saves them; nothing binary is checked in.
"""

from __future__ import annotations

import contextlib
import io
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from docbinder.adapters.extract import DefaultContentExtractor
from docbinder.adapters.extract.ocr import TesseractRecognizer
from docbinder.application import DocBinder
from docbinder.domain.model import ContentKind, ContentPart, PageCoverage, Principal
from tests import documents
from tests.unit.test_extract import make_item, pdf_bytes
from tests.unit.test_extract_documents import convert

ROOT = Path(__file__).resolve().parents[2]


def words(text: str | None) -> str:
    return " ".join((text or "").split())


INVOICE_KEYS = ("INVOICE No. 2026-0042", "Example Industries Ltd", "Total due: EUR 1,440.00")
"""Lines of the scanned invoice OCR must read exactly (the others may catch a speck)."""


def assert_invoice(part: ContentPart) -> None:
    text = words(part.text)
    for line in INVOICE_KEYS:
        assert line in text, (line, text)


# -- 1. scanned pages have no text layer --------------------------------------------------------


@pytest.mark.usefixtures("ocr_ready")
def test_a_scanned_invoice_pdf_is_read_by_ocr(binder: DocBinder, u1: Principal) -> None:
    run = binder.start_new_run(u1)
    result = run.produce_file("invoice-scan.pdf", documents.scanned_pdf())
    (part,) = run.get_content([result.reference]).parts
    assert part.kind is ContentKind.TEXT and part.position == "page 1"
    assert_invoice(part)
    assert part.ocr is True
    assert part.ocr_engine is not None and part.ocr_engine.startswith("tesseract")
    assert part.ocr_confidence is not None and 0.5 < part.ocr_confidence <= 1.0
    assert part.coverage == PageCoverage(1, ocr=1)
    assert part.note is None and not part.truncated


@pytest.mark.usefixtures("ocr_ready")
def test_the_same_page_as_png_gives_its_image_and_its_text(
    binder: DocBinder, u1: Principal
) -> None:
    data = documents.png(documents.scanned_page())
    run = binder.start_new_run(u1)
    result = run.produce_file("invoice.png", data)
    image, text = run.get_content([result.reference]).parts
    assert image.kind is ContentKind.IMAGE and image.data == data and not image.ocr
    assert text.kind is ContentKind.TEXT and text.ocr and text.data is None
    assert_invoice(text)
    assert image.coverage == text.coverage == PageCoverage(1, ocr=1)


@pytest.mark.usefixtures("ocr_ready")
def test_a_blank_page_in_a_scan_is_named_never_silently_empty() -> None:
    parts = convert(documents.scanned_pdf(3, blank=(2,)), "scan.pdf")
    assert [p.position for p in parts] == ["page 1", "page 3"]
    assert all(p.ocr for p in parts)
    assert "Page 3 of 3" in words(parts[1].text)
    coverage = PageCoverage(3, ocr=2, nothing=1, empty_pages=(2,))
    assert [p.coverage for p in parts] == [coverage, coverage]
    assert parts[0].note == (
        "1 of 3 page(s) gave no text (page 2): no text layer, and OCR found no text on them"
    )


@pytest.mark.usefixtures("ocr_ready")
def test_a_text_page_and_a_scanned_page_report_both_layers() -> None:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for source in (pdf_bytes("Cover letter typed on a computer"), documents.scanned_pdf()):
        writer.append(PdfReader(io.BytesIO(source)))
    out = io.BytesIO()
    writer.write(out)
    first, second = convert(out.getvalue(), "mixed.pdf")
    assert (first.position, first.text, first.ocr) == (
        "page 1",
        "Cover letter typed on a computer",
        False,
    )
    assert second.position == "page 2" and second.ocr
    assert_invoice(second)
    assert first.coverage == PageCoverage(2, text_layer=1, ocr=1)


@pytest.mark.usefixtures("ocr_ready")
def test_a_scanner_stamp_over_the_image_does_not_hide_the_page() -> None:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(documents.scanned_pdf())))
    stamp = PdfReader(io.BytesIO(pdf_bytes("p. 1")))
    writer.pages[0].merge_page(stamp.pages[0])  # the scanner's text layer: a page number only
    out = io.BytesIO()
    writer.write(out)
    (part,) = convert(out.getvalue(), "stamped.pdf")
    assert part.ocr
    assert_invoice(part)


@pytest.mark.usefixtures("ocr_ready")
def test_a_multi_page_tiff_gives_one_text_part_per_page() -> None:
    pages = [
        documents.scanned_page((f"Delivery note {n}", "Received in good order")) for n in (1, 2)
    ]
    out = io.BytesIO()
    pages[0].save(out, "TIFF", save_all=True, append_images=pages[1:], compression="tiff_lzw")
    image, first, second = convert(out.getvalue(), "delivery.tiff")
    assert image.kind is ContentKind.IMAGE and image.mime_type == "image/tiff"
    assert [first.position, second.position] == ["page 1", "page 2"]
    assert "Delivery note 1" in words(first.text) and "Delivery note 2" in words(second.text)
    assert image.coverage == PageCoverage(2, ocr=2)


@pytest.mark.usefixtures("ocr_ready")
def test_a_phone_photo_turned_by_its_exif_orientation_is_read_upright() -> None:
    upright = documents.scanned_page(("RECEIPT 7781", "Coffee 3.20", "Total 3.20"))
    turned = upright.rotate(90, expand=True)  # the sensor's orientation
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 degrees clockwise to view": EXIF orientation (CIPA DC-008)
    out = io.BytesIO()
    turned.convert("RGB").save(out, "JPEG", exif=exif, quality=90)
    _image, text = convert(out.getvalue(), "receipt.jpg")
    assert "RECEIPT 7781" in words(text.text)


def test_without_ocr_an_image_only_page_says_so_and_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name == "tesserocr" else real(name, *args),
    )
    (part,) = convert(documents.scanned_pdf(), "scan.pdf")
    assert part.kind is ContentKind.BINARY
    assert part.coverage == PageCoverage(1, nothing=1, empty_pages=(1,))
    assert part.note is not None
    assert "page 1" in part.note and "pip install -e '.[ocr]'" in part.note
    assert "docbinder[" not in part.note
    (image,) = convert(documents.png(documents.scanned_page()), "scan.png")
    assert image.kind is ContentKind.IMAGE and image.data is not None
    assert image.coverage == PageCoverage(1, nothing=1, empty_pages=(1,))
    assert image.note is not None and "pip install -e '.[ocr]'" in image.note


def test_missing_language_data_is_named_with_the_package_to_install() -> None:
    extractor = DefaultContentExtractor(ocr=TesseractRecognizer("deu", tessdata="/nonexistent"))
    (part,) = convert(documents.scanned_pdf(), "scan.pdf", extractor)
    assert part.note is not None and "apt-get install tesseract-ocr-deu" in part.note
    assert "ocr=none" in extractor.version


def budget_for_pages(pages: int) -> float:
    """A time budget (seconds) that reads about ``pages`` scanned pages on this machine now.

    Measured from one scanned page read through the converter process (its start
    included), so a loaded machine gets a larger budget instead of a budget that
    runs out before the first page.
    """
    import time

    start = time.monotonic()
    convert(documents.scanned_pdf(1), "one-page.pdf", DefaultContentExtractor())
    return max(1.0, pages * (time.monotonic() - start))


@pytest.mark.usefixtures("ocr_ready")
def test_ocr_stops_at_the_time_budget_and_says_which_pages_were_not_read() -> None:
    extractor = DefaultContentExtractor(time_budget=budget_for_pages(4))
    parts = convert(documents.scanned_pdf(40), "long-scan.pdf", extractor)
    assert parts, "the pages read before the budget ran out come back"
    last = parts[-1]
    assert last.truncated and last.truncated_reason is not None
    assert "time budget" in last.truncated_reason
    coverage = last.coverage
    assert coverage is not None and coverage.pages == 40 and coverage.unread > 0
    assert coverage.ocr == len(parts) and coverage.ocr + coverage.unread + coverage.nothing == 40
    _document, item = make_item("long-scan.pdf", "application/pdf", 1)
    assert not extractor.cacheable(item, parts)  # another try may get further


# -- 2. a converter that fails partway ------------------------------------------------------------


def test_a_deck_whose_chart_breaks_the_converter_keeps_every_slide_and_note() -> None:
    parts = convert(documents.pptx_with_broken_chart(), "deck.pptx")
    assert [p.kind for p in parts] == [ContentKind.TEXT] * 3
    assert [p.position for p in parts] == ["slide 1", "slide 2", "slide 3"]
    for number, part in enumerate(parts, start=1):
        assert f"# Slide title {number}" in (part.text or "")
        assert f"Bullet point {number}" in (part.text or "")
        assert f"### Notes:\nSpeaker note {number}" in (part.text or "")
    chart = parts[1].text or ""
    assert "### Chart: Revenue chart 2" in chart
    assert "| Q2 | #N/A |" in chart and "| Q1 | 10.0 |" in chart


def test_a_deck_with_an_unreadable_shape_gets_a_placeholder_and_a_note(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pptx.text.text import TextFrame

    data = documents.pptx_with_broken_chart()
    real = TextFrame.text.fget  # type: ignore[attr-defined]

    def broken(self: TextFrame) -> str:
        text = str(real(self))
        if text == "Bullet point 2":
            raise KeyError("rId7")
        return text

    monkeypatch.setattr(TextFrame, "text", property(broken))
    parts = convert(data, "deck.pptx", DefaultContentExtractor(isolate=False))
    assert [p.position for p in parts] == ["slide 1", "slide 2", "slide 3"]
    second = parts[1]
    assert "# Slide title 2" in (second.text or "") and "could not be read" in (second.text or "")
    assert "Speaker note 2" in (second.text or "")
    assert second.note is not None and "KeyError" in second.note
    assert parts[0].note is None and parts[2].note is None


def test_a_sheet_cut_off_midway_keeps_its_rows_and_the_other_sheets() -> None:
    parts = convert(documents.xlsx_with_broken_sheet(), "book.xlsx")
    assert [p.position for p in parts] == [
        "sheet 1: Totals",
        "sheet 2: Region 2",
        "sheet 3: Region 3",
    ]
    assert "| item 1.4 | 40 |" in (parts[0].text or "")
    assert "| item 2.1 | 10 |" in (parts[1].text or "")
    assert "[the rest of sheet 'Region 2' could not be read" in (parts[1].text or "")
    assert parts[1].note is not None and "Region 2" in parts[1].note
    assert "| item 3.4 | 40 |" in (parts[2].text or "")


def test_a_pdf_page_whose_text_cannot_be_parsed_does_not_lose_the_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pypdf import PageObject

    real = PageObject.extract_text

    def extract_text(self: PageObject, *args: object, **kwargs: object) -> str:
        text = real(self, *args, **kwargs)  # type: ignore[arg-type]
        if "two" in text:
            raise TypeError("unsupported operand type(s) for +: 'NoneType' and 'float'")
        return text

    monkeypatch.setattr(PageObject, "extract_text", extract_text)
    parts = convert(
        pdf_bytes("page one", "page two", "page three"),
        "report.pdf",
        DefaultContentExtractor(isolate=False, ocr=None),
    )
    assert [(p.position, p.text) for p in parts] == [
        ("page 1", "page one"),
        (
            "page 2",
            "[page 2 could not be read: TypeError: unsupported operand type(s) for +: 'NoneType' and 'float']",
        ),
        ("page 3", "page three"),
    ]
    assert parts[1].note is not None and "page 2" in parts[1].note
    assert parts[0].coverage == PageCoverage(3, text_layer=2, nothing=1, empty_pages=(2,))


def _rezipped(data: bytes, change: dict[str, bytes | None]) -> bytes:
    """``data`` (a ZIP package) with the members of ``change`` replaced, or left out (None)."""
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            body = change.get(info.filename, source.read(info))
            if body is not None:
                target.writestr(info, body)
    return out.getvalue()


def _workbook_of_three_sheets() -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    first = book.active
    assert first is not None
    first.title = "One"
    first["A1"], first["B1"] = "alpha", 1
    for title in ("Two", "Three"):
        sheet = book.create_sheet(title)
        sheet["A1"], sheet["A2"] = f"{title} kept", 42
    saved = io.BytesIO()
    book.save(saved)
    return saved.getvalue()


def test_a_workbook_whose_stylesheet_is_broken_keeps_every_sheet() -> None:
    data = _rezipped(_workbook_of_three_sheets(), {"xl/styles.xml": b"<styleSheet><broken"})
    parts = convert(data, "book.xlsx")
    assert [p.position for p in parts] == ["sheet 1: One", "sheet 2: Two", "sheet 3: Three"]
    assert "| alpha | 1 |" in (parts[0].text or "")
    assert "| Three kept |" in (parts[2].text or "") and "| 42 |" in (parts[2].text or "")
    for part in parts:
        assert part.kind is ContentKind.TEXT
        assert part.note is not None and "/xl/styles.xml" in part.note


def test_a_deck_missing_one_slide_part_keeps_the_others_in_place() -> None:
    data = _rezipped(documents.pptx_with_broken_chart(), {"ppt/slides/slide3.xml": None})
    parts = convert(data, "deck.pptx")
    assert [p.position for p in parts] == ["slide 1", "slide 2", "slide 3"]
    assert "# Slide title 1" in (parts[0].text or "")
    assert "Speaker note 2" in (parts[1].text or "")
    assert parts[2].text == "[slide 3 could not be read: its part is missing]"
    assert parts[2].note is not None and "slide 3's part is missing" in parts[2].note


def test_a_document_its_converter_refuses_is_read_block_by_block_without_entities(
    tmp_path: Path,
) -> None:
    import docx

    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-ON-DISK", encoding="utf-8")
    document = docx.Document()
    document.add_heading("Quarterly review", 1)
    document.add_paragraph("Revenue grew by PLACEHOLDER.")
    document.add_paragraph("North led", style="List Bullet")
    document.add_paragraph("Costs fell", style="List Number")
    table = document.add_table(rows=2, cols=2)
    for row, values in zip(table.rows, (("Region", "Revenue"), ("North", "61")), strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    saved = io.BytesIO()
    document.save(saved)
    import zipfile

    with zipfile.ZipFile(io.BytesIO(saved.getvalue())) as package:
        body = package.read("word/document.xml")
    doctype = f'<!DOCTYPE x [<!ENTITY xxe SYSTEM "{secret.as_uri()}">]>'.encode()
    body = body.replace(b"?>", b"?>\n" + doctype, 1).replace(b"PLACEHOLDER", b"&xxe;")
    (part,) = convert(_rezipped(saved.getvalue(), {"word/document.xml": body}), "review.docx")
    text = part.text or ""
    assert part.kind is ContentKind.TEXT
    assert text.startswith("# Quarterly review")
    assert "Revenue grew by" in text and "| North | 61 |" in text
    assert "\n* North led\n1. Costs fell\n" in text
    assert "SECRET-ON-DISK" not in text
    assert part.note is not None and "read block by block" in part.note


# -- 3. spreadsheets whose declared size lies -------------------------------------------------


def test_a_workbook_declaring_only_a1_gives_every_row() -> None:
    (part,) = convert(documents.xlsx_with_dimension("A1"), "wps.xlsx")
    assert not part.truncated
    rows = [line for line in (part.text or "").splitlines() if line.startswith("| month")]
    assert len(rows) == 9
    assert rows[-1] == "| month 9 | 900 |"


def test_a_workbook_declaring_the_whole_grid_is_read_as_stored() -> None:
    (part,) = convert(documents.xlsx_with_dimension("A1:XFD1048576"), "huge-claim.xlsx")
    assert not part.truncated
    lines = (part.text or "").splitlines()
    assert lines[2] == "| Month | Amount |" and lines[3] == "|---|---|"  # two columns, not 16,384
    assert len([line for line in lines if line.startswith("| month")]) == 9


def test_a_lying_dimension_with_values_far_to_the_right_keeps_them() -> None:
    from openpyxl import Workbook, load_workbook

    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet["A1"] = "Key"
    sheet["AA1"] = "Far column"
    sheet["A2"] = "k1"
    sheet["AA2"] = "v1"
    saved = io.BytesIO()
    book.save(saved)
    data = documents.rewrite_dimension(saved.getvalue(), "A1")
    assert load_workbook(io.BytesIO(data), read_only=True).active.max_column == 1  # type: ignore[union-attr]
    (part,) = convert(data, "far.xlsx")
    assert "Far column" in (part.text or "") and "v1" in (part.text or "")


# -- 4. encrypted PDFs that every viewer opens ------------------------------------------------


def test_the_extract_extra_brings_what_aes_encrypted_pdfs_need() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert any(dep.startswith("cryptography") for dep in extras["extract"])


@pytest.mark.parametrize("algorithm", ["AES-128", "AES-256", "RC4-128"])
def test_a_pdf_with_an_empty_user_password_is_read(algorithm: str) -> None:
    data = documents.encrypted_pdf("Quarterly figures, copying restricted", algorithm=algorithm)
    (part,) = convert(data, "restricted.pdf")
    assert part.kind is ContentKind.TEXT
    assert part.text == "Quarterly figures, copying restricted"


def test_a_pdf_with_a_real_password_says_it_is_password_protected() -> None:
    data = documents.encrypted_pdf("secret", user_password="open sesame")
    (part,) = convert(data, "locked.pdf")
    assert part.kind is ContentKind.BINARY and part.data == data
    assert part.note is not None and part.note.startswith("the PDF is password-protected")
    assert "FileNotDecryptedError" not in part.note
    assert not part.truncated


# -- what an adversarial tester tried on these paths ----------------------------------------------


@pytest.mark.usefixtures("ocr_ready")
def test_an_image_of_ten_thousand_by_ten_thousand_pixels_is_not_decoded_for_ocr() -> None:
    picture = io.BytesIO()
    Image.new("L", (10_000, 10_000), 255).save(picture, "PNG")  # 120 KB on disk, 100 MP decoded
    (image,) = convert(picture.getvalue(), "poster.png")
    assert image.kind is ContentKind.IMAGE and image.data == picture.getvalue()
    assert image.note is not None and "10000 x 10000 pixels" in image.note
    assert image.coverage == PageCoverage(1, unread=1)


@pytest.mark.usefixtures("ocr_ready")
def test_a_png_header_claiming_ten_billion_pixels_is_refused_unread() -> None:
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 100_000, 100_000, 8, 0, 0, 0, 0)  # PNG spec §11.2.2
    data = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 1_000_010))
        + chunk(b"IEND", b"")
    )
    (image,) = convert(data, "bomb.png")
    assert image.note is not None and "too large to decode" in image.note


@pytest.mark.usefixtures("ocr_ready")
def test_a_five_hundred_page_scan_stops_at_the_time_budget() -> None:
    parts = convert(
        documents.scanned_pdf(500),
        "archive.pdf",
        DefaultContentExtractor(time_budget=budget_for_pages(6)),
    )
    coverage = parts[-1].coverage
    assert coverage is not None and coverage.pages == 500
    assert 0 < coverage.ocr < 500 and coverage.unread == 500 - coverage.ocr
    assert parts[-1].truncated_reason is not None and "time budget" in parts[-1].truncated_reason


@pytest.mark.usefixtures("ocr_ready")
def test_a_tiff_with_more_pages_than_the_page_limit_stops_there() -> None:
    frames = [Image.new("L", (40, 40), 255) for _ in range(12)]
    out = io.BytesIO()
    frames[0].save(out, "TIFF", save_all=True, append_images=frames[1:])
    (image,) = convert(out.getvalue(), "fax.tiff", DefaultContentExtractor(max_pages=5))
    assert image.coverage == PageCoverage(12, nothing=5, unread=7, empty_pages=(1, 2, 3, 4, 5))
    assert image.note is not None and "more than 5 pages" in image.note


@pytest.mark.usefixtures("ocr_ready")
def test_a_tiff_whose_second_page_is_a_pixel_bomb_stops_before_decoding_it() -> None:
    """The pixel cap holds for every page of a multi-page TIFF, not only the first one."""
    cover = documents.scanned_page(("Cover page", "Delivery note 7")).resize((600, 800))
    bomb = Image.new("L", (9_000, 9_000), 255)  # 81 MP, just over the cap; 100 KB on disk
    out = io.BytesIO()
    cover.save(out, "TIFF", save_all=True, append_images=[bomb, cover], compression="tiff_lzw")
    image, text = convert(out.getvalue(), "fax.tiff")
    assert image.kind is ContentKind.IMAGE and image.data == out.getvalue()
    assert "Delivery note 7" in words(text.text) and text.position == "page 1"
    assert image.coverage == text.coverage == PageCoverage(3, ocr=1, unread=2)
    assert text.truncated and text.truncated_reason == (
        "page 2 is 9000 x 9000 pixels, more than the 80000000 pixels read by OCR"
    )


@pytest.mark.usefixtures("ocr_ready")
def test_a_scan_on_the_largest_pdf_page_is_rendered_within_the_pixel_cap() -> None:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(documents.scanned_pdf())))
    writer.pages[0].scale_to(14_400, 14_400)  # 200 x 200 inches, ISO 32000-1 Annex C.2
    out = io.BytesIO()
    writer.write(out)
    (part,) = convert(out.getvalue(), "huge-page.pdf")
    assert part.ocr
    assert_invoice(part)


def test_a_deck_where_every_chart_is_broken_keeps_every_slide() -> None:
    parts = convert(documents.deck_with_every_chart_broken(), "charts.pptx")
    assert [p.position for p in parts] == [f"slide {n}" for n in range(1, 6)]
    for number, part in enumerate(parts, start=1):
        assert f"Slide title {number}" in (part.text or "")
        assert f"Speaker note {number}" in (part.text or "")
    assert "| Q2 | #N/A |" in (parts[0].text or "")
    assert "[chart 'Chart 3' could not be read" in (parts[2].text or "")
    assert parts[2].note is not None and "not readable XML" in parts[2].note
    assert "### Chart: Revenue chart 4" in (parts[3].text or "")


def test_a_zip_that_claims_to_be_a_spreadsheet_says_what_it_is() -> None:
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("readme.txt", "not a workbook")
    (part,) = convert(out.getvalue(), "report.xlsx")
    assert part.kind is ContentKind.BINARY and part.mime_type == "application/zip"
    assert part.note == (
        "the file's name (.xlsx) says Excel workbook, but its bytes are application/zip, "
        "not that format; it was not converted"
    )


@pytest.mark.parametrize(
    ("extension", "label"),
    [("xlsx", "Excel workbook"), ("pptx", "PowerPoint deck"), ("docx", "Word document")],
)
def test_a_zip_whose_first_entries_do_not_tell_gets_the_same_answer(
    extension: str, label: str
) -> None:
    """Random members past the sniffed head: the name decides the type, the converter the note."""
    import random
    import zipfile

    noise = random.Random(30)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for number in range(5):
            archive.writestr(f"data/{number:03}.bin", noise.randbytes(20_000))
    name = f"report.{extension}"
    (part,) = convert(out.getvalue(), name)
    assert part.kind is ContentKind.BINARY and part.mime_type != "application/zip"
    assert part.note == (
        f"the file's name (.{extension}) says {label}, but its bytes are "
        "application/zip, not that format; it was not converted"
    )
    assert not part.truncated


def _forged_size(package: bytes, member: str, padding: int) -> bytes:
    """``package`` with ``member`` grown by ``padding`` spaces while its headers keep its old size.

    Both the local header and the central directory (PKWARE APPNOTE.TXT 4.3.7, 4.3.12)
    declare the size the member had before; the CRC is the grown member's.
    """
    import struct
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(package)) as source:
        declared = source.getinfo(member).file_size
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
            for info in source.infolist():
                body = source.read(info)
                if info.filename == member:
                    body = body + b" " * padding
                target.writestr(info.filename, body)
    real = struct.pack("<I", declared + padding)
    data = out.getvalue()
    assert data.count(real) == 2  # the local header and the central directory entry
    return data.replace(real, struct.pack("<I", declared))


@pytest.mark.parametrize(
    ("name", "package", "member"),
    [
        ("forged.xlsx", documents.xlsx_with_dimension("A1:B10"), "xl/worksheets/sheet1.xml"),
        ("forged.pptx", documents.pptx_with_broken_chart(), "ppt/slides/slide1.xml"),
    ],
)
def test_a_member_that_inflates_past_its_declared_size_is_refused_before_any_reader(
    name: str, package: bytes, member: str
) -> None:
    """A zip bomb behind a small declared size: ``ZipFile.read`` would inflate all of it."""
    data = _forged_size(package, member, 40_000_017)  # 40 MB of spaces, about 40 KB deflated
    assert len(data) < 200_000
    (part,) = convert(data, name)
    assert part.kind is ContentKind.BINARY and part.data == data
    assert part.note is not None and f"member '{member}' inflates to more than" in part.note
    assert part.truncated  # refused before reading, like a bomb that declares its size


def test_honest_packages_pass_the_inflation_check() -> None:
    from docbinder.adapters.extract.convert import Limits, check_zip

    limits = Limits(max_text_chars=1, max_pages=1, max_decoded_bytes=10_000_000, deadline=0.0)
    for package in (documents.xlsx_bytes(), documents.pptx_bytes(), documents.docx_bytes()):
        with tempfile_with(package) as path:
            check_zip(path, limits)  # raises when a member inflates past its declared size


@contextlib.contextmanager
def tempfile_with(data: bytes) -> Iterator[str]:
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".zip") as handle:
        handle.write(data)
        handle.flush()
        yield handle.name


def test_without_the_aes_library_the_note_names_the_extract_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pypdf import PdfReader
    from pypdf.errors import DependencyError

    def decrypt(self: PdfReader, password: str) -> object:
        raise DependencyError("cryptography>=3.1 is required for AES algorithm")

    monkeypatch.setattr(PdfReader, "decrypt", decrypt)
    data = documents.encrypted_pdf("figures")
    (part,) = convert(data, "restricted.pdf", DefaultContentExtractor(isolate=False))
    assert part.kind is ContentKind.BINARY
    assert part.note is not None
    assert "cryptography" in part.note and "extract" in part.note


@pytest.mark.usefixtures("ocr_ready")
def test_the_model_is_told_which_text_was_read_by_ocr_and_which_pages_gave_nothing(
    binder: DocBinder, u1: Principal
) -> None:
    from docbinder.toolset import DocbinderToolset

    run = binder.start_new_run(u1)
    reference = run.produce_file("scan.pdf", documents.scanned_pdf(2, blank=(2,))).reference
    read = DocbinderToolset(run).call("read_documents", {"documentList": [reference]})
    assert not read.is_error, read.text
    lines = read.text.splitlines()
    marker = next(line for line in lines if line.startswith("[page 1, read by OCR, confidence"))
    assert lines[lines.index(marker) + 1] == (
        "[note: 1 of 2 page(s) gave no text (page 2): no text layer, and OCR found no text on them]"
    )
    assert "INVOICE No. 2026-0042" in read.text
