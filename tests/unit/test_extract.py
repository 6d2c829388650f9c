"""DefaultContentExtractor: content parts per format, limits and failures (SPEC C8)."""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from PIL import Image
from pypdf import PdfWriter

from docbinder.adapters.extract import DefaultContentExtractor
from docbinder.domain.errors import BlobMissing, InvalidInput
from docbinder.domain.model import (
    EMPTY_SHA256,
    ChatDocument,
    ContentKind,
    ContentPart,
    FileItem,
    Scope,
)
from docbinder.ports.extractor import SNIFF_BYTES, ContentExtractor
from tests.documents import pdf_document

LOGGER = "docbinder.adapters.extract.extractor"
TEXT_HTML = DefaultContentExtractor(html="text")
"""The built-in visible-text HTML parser (the fallback of the Markdown conversion)."""


def make_item(name: str, mime: str, size: int) -> tuple[ChatDocument, FileItem]:
    item = FileItem(
        id="file-1",
        file_name=name,
        mime_type=mime,
        size=size,
        sha256=EMPTY_SHA256,
        created_by="u1",
        scope=Scope("m1", "f1"),
        created_at=datetime(2024, 5, 1, tzinfo=UTC),
        blob_key="blob-1",
    )
    document = ChatDocument(
        id="doc-1",
        message_id="msg-1",
        workflow_id="wf-1",
        file_id=item.id,
        file_name=name,
        file_size=size,
        mime_type=mime,
    )
    return document, item


def chunked(data: bytes, size: int = 7) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def extract(
    data: bytes,
    name: str,
    mime: str,
    extractor: ContentExtractor | None = None,
    chunk_size: int = 7,
) -> list[ContentPart]:
    document, item = make_item(name, mime, len(data))
    extractor = extractor or DefaultContentExtractor()
    return extractor.extract(document.id, item, chunked(data, chunk_size))


def only_text(parts: list[ContentPart]) -> str:
    assert len(parts) == 1
    assert parts[0].kind is ContentKind.TEXT
    assert parts[0].data is None
    assert parts[0].text is not None
    return parts[0].text


def pdf_bytes(*pages: str | None) -> bytes:
    """A minimal PDF 1.4 file (ISO 32000-1 §7.5) with one Helvetica text line per page.

    ``None`` makes a page without content. Offsets in the cross-reference
    table are computed, so pypdf reads the file without repairs.
    """
    count = len(pages)
    font_id = 3 + 2 * count
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids ["
        + b" ".join(b"%d 0 R" % (3 + 2 * i) for i in range(count))
        + b"] /Count %d >>" % count,
    ]
    for index, text in enumerate(pages):
        content_id = 4 + 2 * index
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>" % (font_id, content_id)
        )
        stream = b"" if text is None else b"BT /F1 12 Tf 72 720 Td (%s) Tj ET" % text.encode()
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    return pdf_document(objects)


def png_bytes() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (3, 2), (0, 128, 255)).save(buffer, format="PNG")
    return buffer.getvalue()


class TrackedChunks:
    """An iterator of chunks that records how much was read and whether it was closed."""

    def __init__(self, data: bytes, size: int = 4) -> None:
        self._chunks = chunked(data, size)
        self.read = 0
        self.closed = False

    def __iter__(self) -> TrackedChunks:
        return self

    def __next__(self) -> bytes:
        chunk = next(self._chunks)
        self.read += len(chunk)
        return chunk

    def close(self) -> None:
        self.closed = True


# -- text formats -------------------------------------------------------------------------------


def test_plain_text_exact() -> None:
    assert only_text(extract(b"hello\nworld\r\n", "notes.TXT", "text/plain")) == "hello\nworld\r\n"


def test_markdown_exact() -> None:
    md = "# Title\n\n* one\n* two — ünïcode\n"
    assert only_text(extract(md.encode(), "readme.md", "text/markdown")) == md


def test_csv_text_equals_the_csv() -> None:
    csv_text = 'name,city\n"Müller, Anna",Zürich\nBob,"New\nYork"\n'
    assert only_text(extract(csv_text.encode(), "people.csv", "text/csv")) == csv_text


def test_json_is_kept_as_stored() -> None:
    raw = '{"a": [1, 2], "b": {"c": "ä"}}'
    assert only_text(extract(raw.encode(), "data.json", "application/json")) == raw


@pytest.mark.parametrize(
    "mime", ["text/x-python", "application/xml", "application/ld+json", "image/svg+xml"]
)
def test_other_textual_types_give_text(mime: str) -> None:
    assert only_text(extract(b"<a>1</a>", "f", mime)) == "<a>1</a>"


def test_empty_text_file_gives_one_empty_text_part() -> None:
    assert only_text(extract(b"", "empty.txt", "text/plain")) == ""


def test_utf8_bom_is_removed_and_split_sequences_decode() -> None:
    data = "\ufeffgrüße €".encode()
    assert only_text(extract(data, "a.txt", "text/plain", chunk_size=1)) == "grüße €"


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_utf16_and_utf32_with_bom(encoding: str) -> None:
    data = "\ufeffZeile 1: Grüße 🙂\nZeile 2\n".encode(encoding)
    parts = extract(data, "a.txt", "text/plain", chunk_size=3)
    assert only_text(parts) == "Zeile 1: Grüße 🙂\nZeile 2\n"


def test_invalid_utf8_after_a_utf8_head_becomes_replacement_characters() -> None:
    head = "ä".encode() * SNIFF_BYTES
    text = only_text(extract(head + b"ab\xffcd", "a.txt", "text/plain", chunk_size=1000))
    assert text == "ä" * SNIFF_BYTES + "ab\ufffdcd"


def test_invalid_utf8_with_control_bytes_becomes_replacement_characters() -> None:
    assert only_text(extract(b"ab\xff\x02cd", "a.txt", "text/plain")) == "ab\ufffd\x02cd"


def test_eight_bit_text_is_decoded_as_windows_1252() -> None:
    text = "Straße;Größe;Preis\nMüller;“groß”;5 €\n"
    assert only_text(extract(text.encode("cp1252"), "werte.csv", "text/csv")) == text


# -- HTML ---------------------------------------------------------------------------------------


def test_html_visible_text_without_script_and_style() -> None:
    page = (
        "<!DOCTYPE html><html><head><title>Quarterly  report</title>"
        "<style>body { color: red }</style>"
        "<script>var secret = 'do not show';</script></head>"
        "<body><h1>Results</h1><p>Revenue   grew <b>12&nbsp;%</b> &amp; costs fell.</p>"
        "<div>Line one<br>Line two</div>"
        "<ul><li>alpha</li><li>beta</li></ul>"
        "<table><tr><th>Q</th><th>Value</th></tr><tr><td>1</td><td>10</td></tr></table>"
        "<pre>  keep\n    spacing</pre>"
        "<script type='module'>alert('x')</script><noscript>enable js</noscript>"
        "</body></html>"
    )
    text = only_text(
        extract(page.encode(), "page.html", "text/html", DefaultContentExtractor(html="text"), 5)
    )
    assert text == (
        "Quarterly report\n"
        "Results\n"
        "Revenue grew 12 % & costs fell.\n"
        "Line one\n"
        "Line two\n"
        "alpha\n"
        "beta\n"
        "Q\tValue\n"
        "1\t10\n"
        "  keep\n"
        "    spacing"
    )
    assert "secret" not in text
    assert "alert" not in text


def test_html_without_head_end_tag_keeps_body_text() -> None:
    page = b"<html><head><title>T</title><body><p>Body text</p>"
    assert only_text(extract(page, "p.htm", "text/html", TEXT_HTML)) == "T\nBody text"


def test_html_with_bogus_marked_section_does_not_raise() -> None:
    page = b"<p>before</p><![bogus[ x ]]><p>after</p>"
    assert only_text(extract(page, "p.html", "text/html", TEXT_HTML)) == "before\nafter"


def test_html_text_limit() -> None:
    page = b"<p>" + b"word " * 100 + b"</p>"
    parts = extract(page, "p.html", "text/html", DefaultContentExtractor(max_text_chars=12))
    assert only_text(parts) == "word word wo"
    assert parts[0].truncated is True


# -- PDF ----------------------------------------------------------------------------------------


def test_two_page_pdf_gives_one_part_per_page() -> None:
    data = pdf_bytes("Hello from page one", "Second page text")
    parts = extract(data, "report.pdf", "application/pdf")
    assert [(p.kind, p.position, p.text) for p in parts] == [
        (ContentKind.TEXT, "page 1", "Hello from page one"),
        (ContentKind.TEXT, "page 2", "Second page text"),
    ]
    assert all(p.truncated is False and p.data is None for p in parts)


def test_pdf_empty_pages_are_skipped() -> None:
    parts = extract(pdf_bytes("first", None, "third"), "r.pdf", "application/pdf")
    assert [(p.position, p.text) for p in parts] == [("page 1", "first"), ("page 3", "third")]


def test_pdf_without_text_gives_binary_part_with_note(caplog: pytest.LogCaptureFixture) -> None:
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    writer.add_blank_page(width=200, height=200)
    buffer = io.BytesIO()
    writer.write(buffer)
    data = buffer.getvalue()
    with caplog.at_level(logging.INFO, logger=LOGGER):
        parts = extract(data, "scan.pdf", "application/pdf")
    assert len(parts) == 1
    part = parts[0]
    assert part.kind is ContentKind.BINARY
    assert part.data == data
    assert part.text is not None and "no extractable text" in part.text
    assert "no text in PDF document doc-1 (application/pdf)" in caplog.text


def test_corrupt_pdf_gives_binary_part_and_warning(caplog: pytest.LogCaptureFixture) -> None:
    data = b"%PDF-1.7\nthis is not really a pdf\n"
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        parts = extract(data, "broken.pdf", "application/pdf")
    assert len(parts) == 1
    assert parts[0].kind is ContentKind.BINARY
    assert parts[0].data == data
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and r.name == LOGGER]
    assert len(warnings) == 1
    assert (
        warnings[0]
        .getMessage()
        .startswith("content extraction failed for document doc-1 (application/pdf): ")
    )


def test_pdf_over_byte_limit_is_not_read(caplog: pytest.LogCaptureFixture) -> None:
    data = pdf_bytes("page text")
    document, item = make_item("big.pdf", "application/pdf", len(data))
    chunks = TrackedChunks(data)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        parts = DefaultContentExtractor(max_bytes=100).extract(document.id, item, chunks)
    assert len(parts) == 1
    part = parts[0]
    assert (part.kind, part.data, part.truncated, part.size) == (
        ContentKind.BINARY,
        None,
        True,
        len(data),
    )
    assert part.text is not None and "larger than the extraction limit of 100 bytes" in part.text
    assert chunks.read == 0
    assert chunks.closed is True
    assert "content of document doc-1 (application/pdf) truncated" in caplog.text


def test_pdf_longer_than_its_recorded_size_is_treated_as_too_big() -> None:
    data = pdf_bytes("page text")
    document, item = make_item("big.pdf", "application/pdf", 50)
    parts = DefaultContentExtractor(max_bytes=100).extract(document.id, item, chunked(data))
    assert [(p.kind, p.data, p.truncated) for p in parts] == [(ContentKind.BINARY, None, True)]


def test_pdf_text_limit_spans_pages() -> None:
    data = pdf_bytes("abcdefgh", "ijklmnop")
    parts = extract(data, "r.pdf", "application/pdf", DefaultContentExtractor(max_text_chars=5))
    assert [(p.position, p.text, p.truncated) for p in parts] == [("page 1", "abcde", True)]
    parts = extract(data, "r.pdf", "application/pdf", DefaultContentExtractor(max_text_chars=8))
    assert [(p.position, p.text, p.truncated) for p in parts] == [("page 1", "abcdefgh", True)]
    parts = extract(data, "r.pdf", "application/pdf", DefaultContentExtractor(max_text_chars=12))
    assert [(p.position, p.text, p.truncated) for p in parts] == [
        ("page 1", "abcdefgh", False),
        ("page 2", "ijkl", True),
    ]


def test_pdf_without_pypdf_gives_binary_part_and_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "pypdf", None)  # makes ``import pypdf`` fail
    data = pdf_bytes("text")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        # In the calling thread, where the import is made to fail.
        parts = extract(data, "r.pdf", "application/pdf", DefaultContentExtractor(isolate=False))
    assert [(p.kind, p.data) for p in parts] == [(ContentKind.BINARY, data)]
    assert parts[0].text is not None and "pip install -e '.[extract]'" in parts[0].text
    assert "content extraction failed for document doc-1 (application/pdf)" in caplog.text
    assert "pip install -e '.[extract]'" in caplog.text


# -- images and binary --------------------------------------------------------------------------


def test_png_gives_image_part_with_same_bytes() -> None:
    data = png_bytes()
    parts = extract(data, "chart.png", "image/png")
    assert len(parts) == 1
    part = parts[0]
    assert (part.kind, part.data, part.text, part.mime_type, part.truncated) == (
        ContentKind.IMAGE,
        data,
        None,
        "image/png",
        False,
    )


@pytest.mark.parametrize(
    ("mime", "kind"), [("image/png", ContentKind.IMAGE), ("application/zip", ContentKind.BINARY)]
)
def test_over_byte_limit_gives_no_data(mime: str, kind: ContentKind) -> None:
    data = bytes(range(256)) * 4
    document, item = make_item("f", mime, len(data))
    chunks = TrackedChunks(data)
    parts = DefaultContentExtractor(max_bytes=100).extract(document.id, item, chunks)
    assert [(p.kind, p.data, p.truncated, p.size) for p in parts] == [(kind, None, True, 1024)]
    assert chunks.read == 0


def test_other_types_give_binary_part_with_same_bytes() -> None:
    data = b"PK\x05\x06" + b"\x00" * 18
    parts = extract(data, "empty.zip", "application/zip")
    assert [(p.kind, p.data, p.truncated) for p in parts] == [(ContentKind.BINARY, data, False)]


def test_binary_exactly_at_the_limit_is_kept() -> None:
    data = bytes(range(100))
    parts = extract(
        data, "f.bin", "application/octet-stream", DefaultContentExtractor(max_bytes=100)
    )
    assert [(p.data, p.truncated) for p in parts] == [(data, False)]


# -- limits and common fields -------------------------------------------------------------------


def test_text_cut_at_byte_limit(caplog: pytest.LogCaptureFixture) -> None:
    data = b"0123456789abcdefghij"
    document, item = make_item("a.txt", "text/plain", len(data))
    chunks = TrackedChunks(data, size=4)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        parts = DefaultContentExtractor(max_bytes=10).extract(document.id, item, chunks)
    assert [(p.text, p.truncated) for p in parts] == [("0123456789", True)]
    assert chunks.read <= 12
    assert chunks.closed is True
    assert "content of document doc-1 (text/plain) truncated" in caplog.text


def test_byte_limit_inside_a_multibyte_character_drops_it() -> None:
    data = "aaäbb".encode()  # ä is two bytes at offsets 2 and 3
    parts = extract(data, "a.txt", "text/plain", DefaultContentExtractor(max_bytes=3))
    assert [(p.text, p.truncated) for p in parts] == [("aa", True)]


def test_text_cut_at_char_limit() -> None:
    parts = extract(b"abcdefghij", "a.txt", "text/plain", DefaultContentExtractor(max_text_chars=4))
    assert [(p.text, p.truncated) for p in parts] == [("abcd", True)]


def test_text_exactly_at_the_limits_is_not_truncated() -> None:
    extractor = DefaultContentExtractor(max_bytes=10, max_text_chars=10)
    parts = extract(b"0123456789", "a.txt", "text/plain", extractor)
    assert [(p.text, p.truncated) for p in parts] == [("0123456789", False)]


@pytest.mark.parametrize(
    ("data", "mime"),
    [
        (b"plain", "text/plain"),
        (b"<p>x</p>", "text/html"),
        (pdf_bytes("x"), "application/pdf"),
        (b"\x89PNG", "image/png"),
        (b"\x00\x01", "application/octet-stream"),
    ],
)
def test_every_part_carries_the_document_fields(data: bytes, mime: str) -> None:
    document, item = make_item("Name ü.bin", mime, len(data))
    parts = DefaultContentExtractor().extract(document.id, item, chunked(data))
    assert parts
    for part in parts:
        assert (part.document_id, part.file_name, part.mime_type, part.size) == (
            "doc-1",
            "Name ü.bin",
            mime,
            len(data),
        )


@pytest.mark.parametrize("mime", ["text/plain", "text/html", "application/pdf", "image/png"])
def test_storage_fault_while_reading_propagates(mime: str) -> None:
    def failing() -> Iterator[bytes]:
        yield b"%PDF-1.4 <p>partial"
        raise BlobMissing("blob blob-1 is missing")

    document, item = make_item("f", mime, 100)
    with pytest.raises(BlobMissing):
        DefaultContentExtractor().extract(document.id, item, failing())


@pytest.mark.parametrize(("max_bytes", "max_chars"), [(0, 10), (10, 0), (-1, 10), (True, 10)])
def test_limits_must_be_positive(max_bytes: int, max_chars: int) -> None:
    with pytest.raises(InvalidInput):
        DefaultContentExtractor(max_bytes=max_bytes, max_text_chars=max_chars)
