"""SniffingMimeDetector: bytes first, then the name, then the claim (SPEC C8)."""

from __future__ import annotations

import gzip
import io
import random
import re
import zipfile

import pytest
from PIL import Image

from docbinder.adapters.extract import SniffingMimeDetector
from docbinder.adapters.extract.mime import (
    DOCX,
    ODT,
    PPTX,
    XLSX,
    file_extension,
    text_encoding,
)
from docbinder.domain.mime import normalize_mime
from docbinder.ports.extractor import SNIFF_BYTES, MimeDetector

MIME_SYNTAX = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*$")


def detect(data: bytes, name: str, declared: str | None = None) -> str:
    detector: MimeDetector = SniffingMimeDetector()
    return detector.detect(data[:SNIFF_BYTES], name, declared)


def image_bytes(fmt: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 3), (200, 10, 10)).save(buffer, format=fmt)
    return buffer.getvalue()


def zip_bytes(entries: list[tuple[str, bytes]], stored_first: bool = False) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for index, (name, data) in enumerate(entries):
            compress = zipfile.ZIP_STORED if stored_first and index == 0 else zipfile.ZIP_DEFLATED
            archive.writestr(name, data, compress_type=compress)
    return buffer.getvalue()


CONTENT_TYPES = b'<?xml version="1.0"?><Types xmlns="x"/>'


def docx_bytes() -> bytes:
    return zip_bytes(
        [
            ("[Content_Types].xml", CONTENT_TYPES),
            ("_rels/.rels", b"<Relationships/>"),
            ("word/document.xml", b"<w:document><w:body><w:p/></w:body></w:document>"),
        ]
    )


# -- magic numbers ------------------------------------------------------------------------------


def test_pdf_by_magic_whatever_the_name() -> None:
    assert detect(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj", "scan.bin") == "application/pdf"


def test_pdf_header_later_in_binary_data() -> None:
    assert detect(b"\x00\x01junk\x00\n%PDF-1.4\n%\xe2\xe3", "x") == "application/pdf"


def test_text_that_mentions_the_pdf_header_stays_text() -> None:
    assert detect(b"# Notes\nA PDF starts with %PDF-1.7\n", "notes.md") == "text/markdown"


def test_png_named_txt_is_png() -> None:
    assert detect(image_bytes("PNG"), "photo.txt", "text/plain") == "image/png"


@pytest.mark.parametrize(
    ("fmt", "mime"),
    [("JPEG", "image/jpeg"), ("GIF", "image/gif"), ("WEBP", "image/webp"), ("BMP", "image/bmp")],
)
def test_images_by_magic(fmt: str, mime: str) -> None:
    assert detect(image_bytes(fmt), "picture.dat") == mime


def test_other_signatures_via_filetype() -> None:
    assert detect(gzip.compress(b"hello" * 100), "archive") == "application/gzip"


# -- ZIP packages -------------------------------------------------------------------------------


def test_docx_with_upper_case_extension() -> None:
    assert detect(docx_bytes(), "Report.DOCX") == DOCX


def test_docx_bytes_win_over_name_and_claim() -> None:
    assert detect(docx_bytes(), "report.zip", "application/zip") == DOCX


@pytest.mark.parametrize(
    ("part", "mime"), [("xl/workbook.xml", XLSX), ("ppt/presentation.xml", PPTX)]
)
def test_xlsx_and_pptx_by_entry_names(part: str, mime: str) -> None:
    data = zip_bytes([("[Content_Types].xml", CONTENT_TYPES), (part, b"<x/>")])
    assert detect(data, "file.bin") == mime


def test_opendocument_by_mimetype_entry() -> None:
    data = zip_bytes([("mimetype", ODT.encode()), ("content.xml", b"<x/>")], stored_first=True)
    assert detect(data, "letter") == ODT


def test_plain_zip_is_zip() -> None:
    data = zip_bytes([("a.txt", b"alpha"), ("b/c.txt", b"beta")])
    assert detect(data, "bundle.zip") == "application/zip"


def test_complete_zip_without_office_parts_is_zip_even_if_named_docx() -> None:
    data = zip_bytes([("a.txt", b"alpha")])
    assert len(data) < SNIFF_BYTES
    assert detect(data, "fake.docx") == "application/zip"


def _long_first_entry_zip() -> bytes:
    noise = random.Random(7).randbytes(SNIFF_BYTES * 2)  # incompressible: pushes word/ out
    return zip_bytes([("[Content_Types].xml", noise), ("word/document.xml", b"<w/>")])


def test_zip_head_too_short_falls_back_to_extension() -> None:
    data = _long_first_entry_zip()
    assert b"word/" not in data[:SNIFF_BYTES]
    assert detect(data, "Report.Docx") == DOCX
    assert detect(data, "report.xlsx") == XLSX


def test_zip_head_too_short_uses_office_claim_then_zip() -> None:
    data = _long_first_entry_zip()
    assert detect(data, "report", XLSX) == XLSX
    assert detect(data, "report", "text/plain") == "application/zip"
    assert detect(data, "report") == "application/zip"


# -- text ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "mime"),
    [
        ("notes.TXT", "text/plain"),
        ("readme.md", "text/markdown"),
        ("README.Markdown", "text/markdown"),
        ("table.csv", "text/csv"),
        ("data.JSON", "application/json"),
        ("page.html", "text/html"),
        ("page.HTM", "text/html"),
        ("config.yaml", "application/yaml"),
        ("no_extension", "text/plain"),
        ("script.py", "text/plain"),
        ("dir/sub\\notes.Txt", "text/plain"),
    ],
)
def test_text_by_extension(name: str, mime: str) -> None:
    assert detect(b"a,b\n1,2\n", name) == mime


def test_html_sniffed_without_extension() -> None:
    assert detect(b"\n  <!DOCTYPE html><html><body>x</body></html>", "download") == "text/html"
    assert detect(b"<HTML><body>x</body></HTML>", "download") == "text/html"


def test_html_sniff_wins_over_declared() -> None:
    assert detect(b"<!doctype html><p>x", "page", "text/plain") == "text/html"


def test_text_with_unknown_extension_uses_textual_claim() -> None:
    assert detect(b"a;b\n1;2\n", "export", "text/csv") == "text/csv"
    assert detect(b"a;b\n1;2\n", "export", "Text/CSV; charset=utf-8") == "text/csv"


def test_text_ignores_a_binary_claim() -> None:
    assert detect(b"just words\n", "export", "image/png") == "text/plain"


def test_extension_wins_over_textual_claim() -> None:
    assert detect(b"# Title\n", "readme.md", "text/plain") == "text/markdown"


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le"])
def test_bom_text_is_text(encoding: str) -> None:
    data = "\ufeffHällo, Wörld\n".encode(encoding)  # the BOM, then the text
    assert b"\x00" in data
    assert detect(data, "notes.csv") == "text/csv"


def test_utf8_bom_and_cut_multibyte_sequence_are_text() -> None:
    head = b"\xef\xbb\xbfname\n" + "ä".encode() * 10 + "€".encode()[:2]
    assert detect(head, "x.csv") == "text/csv"


def test_latin1_text_is_text() -> None:
    assert detect("Straße;Größe\n".encode("latin-1"), "werte.csv") == "text/csv"


def test_rtf_signature() -> None:
    assert detect(b"{\\rtf1\\ansi Hello}", "letter.txt") == "application/rtf"


# -- binary without signature, empty files, claims -----------------------------------------------


def test_unknown_binary_uses_valid_claim() -> None:
    blob = b"\x00\x01\x02\x03\x10\x11binary"
    assert detect(blob, "x.txt", "application/x-thing") == "application/x-thing"
    assert detect(blob, "x.txt", "not a mime") == "application/octet-stream"
    assert detect(blob, "x.txt", None) == "application/octet-stream"


@pytest.mark.parametrize(
    ("name", "declared", "mime"),
    [
        ("empty.md", None, "text/markdown"),
        ("EMPTY.TXT", "image/png", "text/plain"),
        ("empty.pdf", None, "application/pdf"),
        ("empty", None, "application/octet-stream"),
        ("empty.xyz", None, "application/octet-stream"),
        ("empty", "text/csv", "text/csv"),
    ],
)
def test_zero_byte_file(name: str, declared: str | None, mime: str) -> None:
    assert detect(b"", name, declared) == mime


def test_helpers() -> None:
    assert file_extension("a/b/Report.DOCX") == "docx"
    assert file_extension(".bashrc") == ""
    assert file_extension("archive.tar.GZ") == "gz"
    assert file_extension("trailing.") == ""
    assert normalize_mime(" Text/Plain ; charset=UTF-8") == "text/plain"
    assert normalize_mime("text") is None
    assert normalize_mime(42) is None
    assert text_encoding(b"abc") == "utf-8"
    assert text_encoding(b"a\x00b") is None
    assert text_encoding(b"\xff\xfea\x00") == "utf-16"
    assert text_encoding(b"\x01\x02\x03\xff") is None


def test_never_raises_and_always_answers_a_mime_type() -> None:
    rng = random.Random(1234)
    detector = SniffingMimeDetector()
    prefixes = [b"", b"PK\x03\x04", b"PK\x05\x06", b"%PDF-", b"\xff\xfe", b"RIFF", b"<html"]
    names = ["", "a", ".md", "x.DOCX", "../../etc/passwd", "ü.csv", "a.", "\\\\x.zip"]
    claims = [None, "", "text/plain", "bad", "a/b/c", "x" * 300 + "/y", ";", "TEXT/HTML;q=1"]
    for _ in range(3000):
        head = rng.choice(prefixes) + rng.randbytes(rng.randint(0, 80))
        result = detector.detect(head, rng.choice(names), rng.choice(claims))
        assert MIME_SYNTAX.match(result), (head, result)


def test_never_raises_on_wrong_argument_types() -> None:
    detector = SniffingMimeDetector()
    assert detector.detect(b"x", None, 5) == "text/plain"  # type: ignore[arg-type]
    assert detector.detect(bytearray(b"%PDF-1.4"), "a", None) == "application/pdf"  # type: ignore[arg-type]


def test_ole2_compound_files_by_stream_name_then_extension() -> None:
    from docbinder.adapters.extract.mime import DOC, MSG, XLS

    header = bytes.fromhex("D0CF11E0A1B11AE1") + bytes(504)
    detector = SniffingMimeDetector()
    assert detector.detect(header + "Workbook".encode("utf-16-le"), "x.bin", None) == XLS
    assert detector.detect(header + "WordDocument".encode("utf-16-le"), "x", None) == DOC
    assert detector.detect(header + "__substg1.0_0037001F".encode("utf-16-le"), "m", None) == MSG
    assert detector.detect(header, "old.xls", None) == XLS
    assert detector.detect(header, "mail.msg", None) == MSG
    assert detector.detect(header, "blob", None) == "application/x-ole-storage"


def test_declared_charset_is_kept_on_text_types_only() -> None:
    detector = SniffingMimeDetector()
    gbk = "名称,单价\n".encode("gbk")
    assert detector.detect(gbk, "a.csv", "text/csv; charset=GBK") == "text/csv; charset=gbk"
    assert detector.detect(gbk, "a.txt", 'text/plain;charset="gb2312"') == (
        "text/plain; charset=gb2312"
    )
    assert detector.detect(b"<html></html>", "a.html", "text/html; charset=gbk") == "text/html"
    assert detector.detect(b"{}", "a.json", "application/json; charset=gbk") == "application/json"
    assert detector.detect(b"%PDF-1.4", "a.pdf", "text/plain; charset=gbk") == "application/pdf"
