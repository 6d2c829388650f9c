"""Office, OpenDocument, EPUB, RTF and e-mail files become text parts; hostile ones end in budget.

Every file is written in the test with the format's own writer library
(``tests/documents.py``); nothing binary is checked in.
"""

from __future__ import annotations

import logging
import multiprocessing
import sys
from typing import Any

import pytest

from docbinder.adapters.extract import DefaultContentExtractor, SniffingMimeDetector
from docbinder.adapters.extract.mime import DOCX, EML, EPUB, ODS, ODT, PPTX, XLSX
from docbinder.domain.model import ContentKind, ContentPart
from tests import documents
from tests.unit.test_extract import chunked, make_item

LOGGER = "docbinder.adapters.extract.extractor"


def convert(
    data: bytes, name: str, extractor: DefaultContentExtractor | None = None
) -> list[ContentPart]:
    mime = SniffingMimeDetector().detect(data[:8192], name, None)
    document, item = make_item(name, mime, len(data))
    return (extractor or DefaultContentExtractor()).extract(document.id, item, chunked(data, 4096))


def text_parts(parts: list[ContentPart]) -> list[tuple[str | None, str]]:
    assert all(p.kind is ContentKind.TEXT for p in parts), parts
    return [(p.position, p.text or "") for p in parts]


@pytest.mark.parametrize(
    ("name", "data", "mime"),
    [
        ("report.docx", documents.docx_bytes, DOCX),
        ("table.xlsx", documents.xlsx_bytes, XLSX),
        ("deck.pptx", documents.pptx_bytes, PPTX),
        ("notes.odt", documents.odt_bytes, ODT),
        ("stock.ods", documents.ods_bytes, ODS),
        ("guide.epub", documents.epub_bytes, EPUB),
        ("mail.eml", documents.eml_bytes, EML),
        ("draft.rtf", documents.rtf_bytes, "application/rtf"),
    ],
)
def test_each_format_is_detected_from_its_bytes(name: str, data: object, mime: str) -> None:
    raw = data()  # type: ignore[operator]
    assert SniffingMimeDetector().detect(raw[:8192], name, None) == mime
    assert SniffingMimeDetector().detect(raw[:8192], "download.bin", None) in {mime, "text/plain"}


def test_docx_gives_markdown_with_heading_list_and_table() -> None:
    parts = convert(documents.docx_bytes(), "report.docx")
    assert [p.note for p in parts] == [None], "markitdown's converter failed on a plain document"
    ((position, text),) = text_parts(parts)
    assert position is None
    assert "# Quarterly report" in text
    assert "* North up 12%" in text and "* South up 7%" in text
    assert "| Region | Sales |" in text and "| North | 1200 |" in text


def test_xlsx_gives_one_part_per_sheet_with_its_name() -> None:
    parts = text_parts(convert(documents.xlsx_bytes(sheets=3, rows=2), "t.xlsx"))
    assert [p for p, _ in parts] == ["sheet 1: Totals", "sheet 2: Region 2", "sheet 3: Region 3"]
    assert parts[1][1] == (
        "## Region 2\n\n| Item | Price |\n|---|---|\n| item 2.1 | 10 |\n| item 2.2 | 20 |"
    )


def test_pptx_gives_one_part_per_slide_with_speaker_notes() -> None:
    parts = text_parts(convert(documents.pptx_bytes(slides=3), "deck.pptx"))
    assert [p for p, _ in parts] == ["slide 1", "slide 2", "slide 3"]
    for number, (_, text) in enumerate(parts, start=1):
        assert f"Slide title {number}" in text
        assert f"Bullet point {number}" in text
        assert f"Speaker note {number}" in text


def test_odt_ods_epub_eml_rtf_give_their_text() -> None:
    ((_, odt),) = text_parts(convert(documents.odt_bytes(), "n.odt"))
    assert odt == "# Meeting notes\n\nDecisions were taken.\n\nNext meeting on Monday."
    ods = text_parts(convert(documents.ods_bytes(), "s.ods"))
    assert ods == [
        ("sheet 1: Stock", "## Stock\n\n| Item | Count |\n|---|---|\n| pens | 40 |"),
        ("sheet 2: Orders", "## Orders\n\n| Id |\n|---|\n| 7 |"),
    ]
    ((_, book),) = text_parts(convert(documents.epub_bytes(), "g.epub"))
    assert "Field guide" in book and "The robin sings at dawn." in book
    ((_, mail),) = text_parts(convert(documents.eml_bytes(), "m.eml"))
    assert mail.startswith("From: ana@example.org\nTo: bo@example.org\nSubject: Invoice March")
    assert "Please find the invoice attached." in mail and "Attachments: inv.pdf" in mail
    ((_, rtf),) = text_parts(convert(documents.rtf_bytes(), "d.rtf"))
    assert rtf == "Contract draft\nClause 1: delivery in May"


def test_text_limit_cuts_across_sheets_and_says_so() -> None:
    extractor = DefaultContentExtractor(max_text_chars=60)
    parts = convert(documents.xlsx_bytes(sheets=3, rows=2), "t.xlsx", extractor)
    assert sum(len(p.text or "") for p in parts) == 60
    assert parts[-1].truncated and parts[-1].truncated_reason == "text is longer than 60 characters"
    assert not any(p.truncated for p in parts[:-1])


def test_sheet_limit_keeps_the_first_sheets() -> None:
    parts = convert(documents.xlsx_bytes(sheets=4), "t.xlsx", DefaultContentExtractor(max_pages=2))
    assert [p.position for p in parts] == ["sheet 1: Totals", "sheet 2: Region 2"]
    assert parts[-1].truncated_reason == "more than 2 sheets"


@pytest.mark.parametrize(
    ("module", "name", "data"),
    [
        ("openpyxl", "t.xlsx", documents.xlsx_bytes),
        ("markitdown", "r.docx", documents.docx_bytes),
        ("odf", "n.odt", documents.odt_bytes),
    ],
)
def test_without_the_extra_the_part_names_it(
    monkeypatch: pytest.MonkeyPatch, module: str, name: str, data: object
) -> None:
    raw = data()  # type: ignore[operator]
    for loaded in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
        monkeypatch.delitem(sys.modules, loaded)
    monkeypatch.setitem(sys.modules, module, None)  # makes ``import <module>`` fail
    (part,) = convert(raw, name, DefaultContentExtractor(isolate=False))
    assert part.kind is ContentKind.BINARY and part.data == raw
    assert part.note is not None and "pip install -e '.[extract]'" in part.note


# -- hostile documents ------------------------------------------------------------------------
def test_zip_bomb_docx_is_refused_without_inflating(caplog: pytest.LogCaptureFixture) -> None:
    bomb = documents.zip_bomb_docx(20_000_000)
    assert len(bomb) < 100_000
    with caplog.at_level(logging.INFO, logger=LOGGER):
        (part,) = convert(bomb, "bomb.docx", DefaultContentExtractor(max_decoded_bytes=5_000_000))
    assert part.kind is ContentKind.BINARY and part.truncated
    assert part.truncated_reason is not None and "5000000 decoded bytes" in part.truncated_reason
    assert "zip bomb" in caplog.text


def test_million_empty_rows_end_at_the_row_limit() -> None:
    workbook = documents.xlsx_with_empty_rows(1_000_000)
    assert len(workbook) < 50_000
    (part,) = convert(workbook, "rows.xlsx")
    assert part.position == "sheet 1: Totals"
    assert part.text == "## Totals\n\n| Item | Price |\n|---|---|\n| item 1.1 | 10 |"
    assert part.truncated and part.truncated_reason == "the workbook has more than 100000 rows"


def test_deck_with_large_embedded_media_is_refused_by_the_decoded_size() -> None:
    deck = documents.pptx_bytes(media=bytes(3_000_000))
    (part,) = convert(deck, "deck.pptx", DefaultContentExtractor(max_decoded_bytes=2_000_000))
    assert part.kind is ContentKind.BINARY and part.truncated
    assert part.note is not None and "PowerPoint deck was not converted" in part.note


def test_pdf_pages_sharing_one_stream_stop_at_the_decoded_byte_cap() -> None:
    # Each page decodes the shared stream again: 2000 lines of 51 bytes, 102,000 bytes, so
    # three pages (306,000 bytes) fit under the cap and the fourth (408,000) does not. The
    # time budget is far beyond the few seconds the three pages take even on a loaded
    # machine: only the byte count can stop this conversion.
    pdf = documents.shared_stream_pdf(pages=30, stream_repeats=2_000)
    assert len(pdf) < 10_000  # the file is small: the cap counts decoded bytes
    extractor = DefaultContentExtractor(max_decoded_bytes=350_000, time_budget=3600.0)
    parts = convert(pdf, "shared.pdf", extractor)
    assert [p.position for p in parts] == ["page 1", "page 2", "page 3"]
    assert parts[-1].truncated
    assert parts[-1].truncated_reason == (
        "stopped before page 4: the pages' content streams decode to more than 350000 bytes"
    )


def test_pdf_conversion_stops_at_the_time_budget_with_the_pages_so_far() -> None:
    # 30 pages of 10 MB decoded content each: minutes of work, far past a 1 s budget.
    pdf = documents.shared_stream_pdf(pages=30, stream_repeats=200_000)
    parts = convert(
        pdf, "slow.pdf", DefaultContentExtractor(time_budget=1.0, max_decoded_bytes=1 << 40)
    )
    assert parts[-1].truncated
    assert parts[-1].truncated_reason is not None
    assert "time budget of 1.0 s spent" in parts[-1].truncated_reason
    assert len([p for p in parts if p.kind is ContentKind.TEXT]) < 30


def test_pdf_page_limit() -> None:
    pdf = documents.shared_stream_pdf(pages=5, stream_repeats=10)
    parts = convert(pdf, "p.pdf", DefaultContentExtractor(max_pages=2))
    assert [p.position for p in parts] == ["page 1", "page 2"]
    assert parts[-1].truncated_reason == "stopped before page 3: more than 2 pages"


def test_converter_out_of_memory_gives_a_part_not_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # 20 MB of markup to inflate and parse, in a process whose address space cannot grow:
    # the allocations cannot be served from memory the process already had.
    extractor = DefaultContentExtractor(memory_bytes=1024 * 1024)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        parts = convert(documents.zip_bomb_docx(20_000_000), "r.docx", extractor)
    (part,) = parts
    assert part.kind is ContentKind.BINARY and part.note is not None
    assert "content extraction failed for document doc-1" in caplog.text


def test_corrupt_package_gives_binary_part_with_reason() -> None:
    broken = documents.docx_bytes()[:2000]
    (part,) = convert(broken, "broken.docx")
    assert part.kind is ContentKind.BINARY and part.data == broken
    assert part.note is not None and part.note.startswith("the Word document could not be read")


# -- HTML -------------------------------------------------------------------------------------
PAGE = (
    b"<!DOCTYPE html><html><head><title>Prices</title><style>p{}</style></head><body>"
    b"<h2>Fruit</h2><ul><li>apple</li><li>pear</li></ul>"
    b"<table><tr><th>item</th><th>price</th></tr><tr><td>apple</td><td>3</td></tr></table>"
    b"<script>alert(1)</script></body></html>"
)


def test_html_becomes_markdown_with_title_lists_and_tables() -> None:
    ((_, text),) = text_parts(convert(PAGE, "p.html"))
    assert text.startswith("Prices\n\n## Fruit\n\n* apple\n* pear")
    assert "| item | price |" in text and "| apple | 3 |" in text
    assert "alert" not in text and "p{}" not in text


def test_html_without_markitdown_falls_back_to_visible_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for loaded in [m for m in sys.modules if m == "markitdown" or m.startswith("markitdown.")]:
        monkeypatch.delitem(sys.modules, loaded)
    monkeypatch.setitem(sys.modules, "markitdown", None)
    ((_, text),) = text_parts(convert(PAGE, "p.html", DefaultContentExtractor(isolate=False)))
    assert text == "Prices\nFruit\napple\npear\nitem\tprice\napple\t3"


def test_html_over_the_byte_limit_gives_the_visible_text_cut() -> None:
    page = b"<p>" + b"word " * 100 + b"</p>"
    (part,) = convert(page, "p.html", DefaultContentExtractor(max_bytes=100))
    assert part.kind is ContentKind.TEXT and part.truncated
    assert part.truncated_reason == "file is larger than 100 bytes"
    assert (part.text or "").startswith("word word")


def _convert_in_daemon(queue: Any) -> None:
    parts = convert(documents.xlsx_bytes(sheets=1, rows=1), "t.xlsx")
    queue.put([(p.kind.value, p.position) for p in parts])


def test_a_daemonic_process_converts_in_its_own_thread() -> None:
    # A daemonic multiprocessing worker may not start children: no converter process there.
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    worker = context.Process(target=_convert_in_daemon, args=(queue,), daemon=True)
    worker.start()
    try:
        assert queue.get(timeout=120) == [("text", "sheet 1: Totals")]
    finally:
        worker.join(10)


def test_ods_row_repeated_a_million_times_ends_at_the_row_limit() -> None:
    sheet = documents.ods_with_repeated_rows(1_000_000)
    assert len(sheet) < 10_000
    (part,) = convert(sheet, "big.ods")
    assert part.text == "## Data\n\n| value |\n|---|"
    assert part.truncated_reason == "the workbook has more than 100000 rows"
