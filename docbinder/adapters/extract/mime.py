"""MIME type detection from a file's leading bytes, its name and a producer's claim.

:class:`SniffingMimeDetector` implements
:class:`~docbinder.ports.extractor.MimeDetector`. The order of evidence is:

1. **Magic numbers** at the start of the head, where they are conclusive:
   PDF, PNG, JPEG, GIF, WEBP, ZIP (with a look inside for Office Open XML,
   OpenDocument and EPUB packages) and OLE2 compound files (legacy Excel,
   Word, PowerPoint and Outlook ``.msg``, told apart by their main stream's
   name in the directory, else by the extension).
2. **Text** (the head is UTF-8, UTF-16/32 with a byte order mark, or 8-bit text
   without control bytes): an HTML, RTF or PostScript signature, else the file
   name's extension (``.eml`` is ``message/rfc822``), else a textual
   ``declared`` type, else ``text/plain``. A ``charset`` the producer declared
   is kept on ``text/*`` types other than HTML (``text/csv; charset=gbk``),
   unless it is UTF-8 or ASCII, the default reading.
3. For other binary data: a PDF header later in the first 1024 bytes, then
   every signature the ``filetype`` library knows (:func:`filetype_guess`:
   ``filetype.guess``'s answer, running only the matchers that can accept the
   head's first byte).
4. The ``declared`` type, if it is a syntactically valid MIME type.
5. ``application/octet-stream``.

A zero-byte file has no bytes to judge: its extension decides, then
``declared``, then ``application/octet-stream``.

Magic numbers follow the format specifications: PDF (ISO 32000-1 §7.5.2,
``%PDF-`` at the start; in binary data also later within the first 1024
bytes, as readers accept it), PNG (ISO/IEC 15948 §5.2), JPEG (ITU-T T.81 SOI
marker ``FF D8`` followed by a marker), GIF (GIF89a specification §17), WEBP
(RIFF container with form type ``WEBP``), ZIP (PKWARE APPNOTE.TXT §4.3.7 local
file header ``PK\\x03\\x04`` and §4.3.16 end of central directory
``PK\\x05\\x06``), the main-part folders of Office Open XML packages
(``word/``, ``xl/``, ``ppt/``; packaging per ECMA-376 Part 2), OpenDocument's
uncompressed first entry ``mimetype`` (OASIS ODF 1.2 Part 3 §3.3) and EPUB's
(EPUB OCF 3 §4.3), the OLE2 header ``D0 CF 11 E0 A1 B1 1A E1`` ([MS-CFB] §2.2).
"""

from __future__ import annotations

import codecs
import re
import struct
from typing import Final

import filetype
from filetype.types import TYPES as _FILETYPE_MATCHERS
from filetype.types import Type as _FiletypeMatcher
from filetype.types import application as _ft_application
from filetype.types import archive as _ft_archive
from filetype.types import audio as _ft_audio
from filetype.types import document as _ft_document
from filetype.types import font as _ft_font
from filetype.types import image as _ft_image
from filetype.types import video as _ft_video

from docbinder.domain.mime import is_textual_mime, normalize_mime

OCTET_STREAM: Final = "application/octet-stream"
"""The answer when nothing better is known."""

DOCX: Final = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
XLSX: Final = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
PPTX: Final = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
ODT: Final = "application/vnd.oasis.opendocument.text"
ODS: Final = "application/vnd.oasis.opendocument.spreadsheet"
ODP: Final = "application/vnd.oasis.opendocument.presentation"
EPUB: Final = "application/epub+zip"
ZIP: Final = "application/zip"
XLS: Final = "application/vnd.ms-excel"
DOC: Final = "application/msword"
PPT: Final = "application/vnd.ms-powerpoint"
MSG: Final = "application/vnd.ms-outlook"
EML: Final = "message/rfc822"

TEXT_EXTENSIONS: Final[dict[str, str]] = {
    "txt": "text/plain",
    "text": "text/plain",
    "log": "text/plain",
    "md": "text/markdown",
    "markdown": "text/markdown",
    "csv": "text/csv",
    "tsv": "text/tab-separated-values",
    "json": "application/json",
    "html": "text/html",
    "htm": "text/html",
    "xhtml": "application/xhtml+xml",
    "xml": "application/xml",
    "svg": "image/svg+xml",
    "yaml": "application/yaml",
    "yml": "application/yaml",
    "eml": EML,
    "rtf": "application/rtf",
}
"""MIME type by lowercase extension for content that looks like text."""

OLE_EXTENSIONS: Final[dict[str, str]] = {"xls": XLS, "doc": DOC, "ppt": PPT, "msg": MSG}
"""MIME type by lowercase extension for OLE2 compound files."""

# Stream names in an OLE2 directory (UTF-16LE), as the formats name their main stream:
# [MS-XLS] §2.1.2 "Workbook", [MS-DOC] §2.1 "WordDocument", [MS-PPT] §2.1 "PowerPoint
# Document", [MS-OXMSG] §2.1 "__substg1.0_" property streams.
_OLE_STREAMS: Final = (
    ("Workbook".encode("utf-16-le"), XLS),
    ("Book".encode("utf-16-le"), XLS),
    ("WordDocument".encode("utf-16-le"), DOC),
    ("PowerPoint Document".encode("utf-16-le"), PPT),
    ("__substg1.0_".encode("utf-16-le"), MSG),
)
_OLE_MAGIC: Final = bytes.fromhex("D0CF11E0A1B11AE1")

ZIP_EXTENSIONS: Final[dict[str, str]] = {
    "docx": DOCX,
    "xlsx": XLSX,
    "pptx": PPTX,
    "odt": ODT,
    "ods": ODS,
    "odp": ODP,
    "epub": EPUB,
    "zip": ZIP,
}
"""MIME type by lowercase extension for ZIP-based packages."""

EMPTY_FILE_EXTENSIONS: Final[dict[str, str]] = {
    **TEXT_EXTENSIONS,
    **ZIP_EXTENSIONS,
    "pdf": "application/pdf",
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
    **OLE_EXTENSIONS,
}
"""MIME type by lowercase extension for zero-byte files."""

# RFC 6838 §4.2 restricted-name: type "/" subtype, 1..127 characters each.
_CHARSET_PARAM = re.compile(
    r";\s*charset\s*=\s*\"?([A-Za-z0-9][A-Za-z0-9!#$%&'+^_`{}~.-]{0,39})", re.IGNORECASE
)
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_ZIP_LOCAL_HEADER = b"PK\x03\x04"
_ZIP_END_OF_CENTRAL_DIRECTORY = b"PK\x05\x06"
_ZIP_LOCAL_HEADER_SIZE = 30
_PDF_HEADER_WINDOW = 1024

# Control bytes that do not occur in 8-bit text: C0 except TAB, LF, VT, FF, CR, ESC.
_NON_TEXT_BYTES = frozenset(range(0x20)) - {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1B}

BYTE_ORDER_MARKS: Final = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
"""Byte order marks (The Unicode Standard §23.8) and the Python codec that decodes and drops them.

UTF-32 LE comes before UTF-16 LE: its mark starts with the UTF-16 LE mark.
"""


def file_extension(file_name: str) -> str:
    """The lowercase extension of the last path component of ``file_name``, or ``""``.

    ``"a/b/Report.DOCX"`` gives ``"docx"``; a leading dot (``".bashrc"``) is not
    an extension. Both ``/`` and ``\\`` separate path components.
    """
    base = file_name.replace("\\", "/").rsplit("/", 1)[-1]
    _stem, dot, ext = base[1:].rpartition(".")
    if not dot or not ext:
        return ""
    return ext.lower()


def text_encoding(head: bytes, *, whole: bool = False) -> str | None:
    """Name the encoding in which ``head`` looks like text, or ``None`` for binary data.

    A byte order mark (UTF-8, UTF-16, UTF-32) decides the encoding; without
    one the head must contain no NUL byte and either be valid UTF-8 (a
    multi-byte sequence cut at the end of the head is allowed, unless
    ``whole`` says the head is the whole file: then nothing was cut) or
    contain no C0 control bytes other than whitespace and ESC (8-bit text,
    reported as ``"latin-1"``). Text decoded from a BOM must not contain NUL
    characters.
    """
    for bom, codec in BYTE_ORDER_MARKS:
        if head.startswith(bom):
            try:
                decoded = codecs.getincrementaldecoder(codec)().decode(head, final=False)
            except UnicodeDecodeError:
                return None
            return None if "\x00" in decoded else codec
    if b"\x00" in head:
        return None
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=whole)
    except UnicodeDecodeError:
        pass
    else:
        return "utf-8"
    if _NON_TEXT_BYTES.isdisjoint(head):
        return "latin-1"
    return None


def _zip_entries(head: bytes) -> tuple[list[tuple[str, bytes]], bool]:
    """Entry names of the ZIP local file headers found in ``head``.

    Returns ``(entries, complete)``: each entry is ``(name, first data
    bytes)`` and ``complete`` says the end-of-central-directory record is in
    the head, so no entry is missing. Headers are found by their signature
    rather than by walking sizes, since entries written with a data descriptor
    (APPNOTE §4.4.4 bit 3) carry no size in the local header.
    """
    entries: list[tuple[str, bytes]] = []
    start = head.find(_ZIP_LOCAL_HEADER)
    while start >= 0:
        fixed_end = start + _ZIP_LOCAL_HEADER_SIZE
        if fixed_end > len(head):
            break
        name_length, extra_length = struct.unpack_from("<HH", head, start + 26)
        compressed_size = struct.unpack_from("<I", head, start + 18)[0]
        name_end = fixed_end + name_length
        if name_end > len(head):
            break
        name = head[fixed_end:name_end].decode("utf-8", "replace")
        data_start = name_end + extra_length
        data = head[data_start : data_start + min(compressed_size, 128)]
        entries.append((name, data))
        start = head.find(_ZIP_LOCAL_HEADER, name_end)
    return entries, _ZIP_END_OF_CENTRAL_DIRECTORY in head


def _zip_kind(head: bytes) -> str | None:
    """The package type of a ZIP head, or ``None`` when the head cannot tell."""
    entries, complete = _zip_entries(head)
    if entries and entries[0][0] == "mimetype":
        declared = entries[0][1].decode("ascii", "replace").strip()
        if declared in {ODT, ODS, ODP, EPUB}:
            return declared
    for name, _data in entries:
        if name.startswith("word/"):
            return DOCX
        if name.startswith("xl/"):
            return XLSX
        if name.startswith("ppt/"):
            return PPTX
    if complete:
        return ZIP
    return None


def _magic(head: bytes) -> str | None:
    """The MIME type named by a binary signature at the start of ``head``, if any."""
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    if head.startswith(_PNG_MAGIC):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _sniff_text(head: bytes, encoding: str) -> str | None:
    """A MIME type from signatures of text formats (HTML, XML, RTF, PostScript)."""
    try:
        sample = codecs.getincrementaldecoder(encoding)("replace").decode(head[:1024])
    except (LookupError, UnicodeDecodeError):
        return None
    sample = sample.lstrip("\ufeff \t\r\n\f").lower()
    if sample.startswith(("<!doctype html", "<html")):
        return "text/html"
    if sample.startswith("{\\rtf"):
        return "application/rtf"
    if sample.startswith("%!ps"):
        return "application/postscript"
    return None


class SniffingMimeDetector:
    """:class:`~docbinder.ports.extractor.MimeDetector`: bytes first, then the name, then the claim.

    See the module documentation for the order of evidence and the format
    specifications followed. ``detect`` never raises: any input, including
    malformed names or claims, gives a syntactically valid lowercase MIME type.
    """

    def detect(self, head: bytes, file_name: str, declared: str | None) -> str:
        """Return the MIME type of a file.

        ``head`` holds the file's leading bytes (at most
        :data:`~docbinder.ports.extractor.SNIFF_BYTES`); ``file_name`` is its
        name (any path components are ignored; the extension is compared
        case-insensitively); ``declared`` is the producer's claim, used only
        where the bytes and the name do not decide.

        Examples: real DOCX bytes named ``Report.DOCX`` give
        ``application/vnd.openxmlformats-officedocument.wordprocessingml.document``;
        text named ``notes.TXT`` gives ``text/plain``; PNG bytes named
        ``photo.txt`` give ``image/png``.
        """
        try:
            return self._detect(bytes(head), str(file_name), declared)
        except Exception:  # pragma: no cover - a last guard; the steps below do not raise
            return OCTET_STREAM

    def _detect(self, head: bytes, file_name: str, declared: str | None) -> str:
        ext = file_extension(file_name)
        claim = normalize_mime(declared)
        if not head:
            return EMPTY_FILE_EXTENSIONS.get(ext) or claim or OCTET_STREAM

        found = _magic(head)
        if found is not None:
            return found
        if head.startswith((_ZIP_LOCAL_HEADER, _ZIP_END_OF_CENTRAL_DIRECTORY)):
            return self._detect_zip(head, ext, claim)
        if head.startswith(_OLE_MAGIC):
            return self._detect_ole(head, ext, claim)

        encoding = text_encoding(head)
        if encoding is not None:
            return self._with_charset(self._detect_text(head, encoding, ext, claim), declared)

        # Readers accept a PDF header anywhere in the first 1024 bytes; text that
        # merely mentions it was handled above.
        if b"%PDF-" in head[:_PDF_HEADER_WINDOW]:
            return "application/pdf"
        found = self._filetype(head)
        if found is not None:
            return found
        return claim or OCTET_STREAM

    @staticmethod
    def _detect_zip(head: bytes, ext: str, claim: str | None) -> str:
        kind = _zip_kind(head)
        if kind is not None:
            return kind
        # The head ends before the entries that would tell: trust the name, then the claim.
        by_name = ZIP_EXTENSIONS.get(ext)
        if by_name is not None:
            return by_name
        if claim is not None and claim in ZIP_EXTENSIONS.values():
            return claim
        return ZIP

    @staticmethod
    def _detect_ole(head: bytes, ext: str, claim: str | None) -> str:
        """An OLE2 compound file ([MS-CFB]): by its stream names, then the name, then the claim."""
        for name, mime in _OLE_STREAMS:
            if name in head:
                return mime
        by_name = OLE_EXTENSIONS.get(ext)
        if by_name is not None:
            return by_name
        if claim is not None and claim in OLE_EXTENSIONS.values():
            return claim
        return "application/x-ole-storage"

    @staticmethod
    def _with_charset(mime: str, declared: str | None) -> str:
        """Keep the producer's declared ``charset`` on a ``text/*`` type (not HTML).

        ``text/csv`` with the claim ``text/csv; charset=GBK`` gives
        ``text/csv; charset=gbk``: text files are stored as given, so the
        declared encoding is needed to read them (RFC 2046 §4.1.2). Only a
        charset Python knows is kept.
        """
        if not mime.startswith("text/") or mime == "text/html" or not isinstance(declared, str):
            return mime
        match = _CHARSET_PARAM.search(declared)
        if match is None:
            return mime
        label = match.group(1).lower()
        try:
            name = codecs.lookup(label).name
        except LookupError:
            return mime
        if name in {"utf-8", "ascii"}:
            return mime  # the default reading; nothing to keep
        return f"{mime}; charset={label}"

    @staticmethod
    def _detect_text(head: bytes, encoding: str, ext: str, claim: str | None) -> str:
        sniffed = _sniff_text(head, encoding)
        if sniffed is not None:
            return sniffed
        by_name = TEXT_EXTENSIONS.get(ext)
        if by_name is not None:
            return by_name
        if claim is not None and is_textual_mime(claim):
            return claim
        return "text/plain"

    @staticmethod
    def _filetype(head: bytes) -> str | None:
        try:
            kind = filetype_guess(head)
        except Exception:
            return None
        if kind is None:
            return None
        return normalize_mime(kind.mime)


# -- the filetype library, without the matchers that cannot match ------------------------

FILETYPE_TABLE_VERSION: Final = "1.2.0"
"""The ``filetype`` release whose matchers :data:`FILETYPE_FIRST_BYTES` was read from."""

_FILETYPE_SIGNATURE_BYTES: Final = 8192
"""How much of its input ``filetype.guess`` looks at (``filetype.utils._NUM_SIGNATURE_BYTES``)."""

FILETYPE_FIRST_BYTES: Final[dict[type[_FiletypeMatcher], frozenset[int]]] = {
    # Each entry is read from the matcher's ``match`` in filetype 1.2.0: it returns a
    # false value whenever the first byte of its input is not in the set, and it
    # raises for no input. Matchers not listed here (image.Dcm and archive.Dcm at
    # offset 128, Tar at 257, Eot at 8 and 34, M4a whose ``ftypM4A`` form starts at
    # offset 4) can accept any first byte and always run.
    _ft_image.Dwg: frozenset(b"A"),
    _ft_image.Xcf: frozenset(b"g"),
    _ft_image.Jpeg: frozenset(b"\xff"),
    _ft_image.Jpx: frozenset(b"\x00"),
    _ft_image.Apng: frozenset(b"\x89"),
    _ft_image.Png: frozenset(b"\x89"),
    _ft_image.Gif: frozenset(b"G"),
    _ft_image.Webp: frozenset(b"R"),
    _ft_image.Tiff: frozenset(b"IM"),
    _ft_image.Cr2: frozenset(b"IM"),
    _ft_image.Bmp: frozenset(b"B"),
    _ft_image.Jxr: frozenset(b"I"),
    _ft_image.Psd: frozenset(b"8"),
    _ft_image.Ico: frozenset(b"\x00"),
    # ISO BMFF (Heic, Avif, Mp4, Mov): the big-endian box size in bytes 0..3 must not
    # exceed the input, which is at most 8192 bytes, so byte 0 is zero.
    _ft_image.Heic: frozenset(b"\x00"),
    _ft_image.Avif: frozenset(b"\x00"),
    _ft_audio.Aac: frozenset(b"\xff"),
    _ft_audio.Midi: frozenset(b"M"),
    _ft_audio.Mp3: frozenset(b"I\xff"),
    _ft_audio.Ogg: frozenset(b"O"),
    _ft_audio.Flac: frozenset(b"f"),
    _ft_audio.Wav: frozenset(b"R"),
    _ft_audio.Amr: frozenset(b"#"),
    _ft_audio.Aiff: frozenset(b"F"),
    _ft_video.M3gp: frozenset(b"f"),
    _ft_video.Mp4: frozenset(b"\x00"),
    _ft_video.M4v: frozenset(b"\x00"),
    _ft_video.Mkv: frozenset(b"\x1a"),
    _ft_video.Mov: frozenset(b"\x00"),
    _ft_video.Avi: frozenset(b"R"),
    _ft_video.Wmv: frozenset(b"0"),
    _ft_video.Mpeg: frozenset(b"\x00"),
    _ft_video.Webm: frozenset(b"\x1a"),
    _ft_video.Flv: frozenset(b"F"),
    _ft_font.Woff: frozenset(b"w"),
    _ft_font.Woff2: frozenset(b"w"),
    _ft_font.Ttf: frozenset(b"\x00"),
    _ft_font.Otf: frozenset(b"O"),
    _ft_document.Doc: frozenset(b"\xd0"),
    _ft_document.Xls: frozenset(b"\xd0"),
    _ft_document.Ppt: frozenset(b"\xd0"),
    # The zipped documents need the ZIP local file header at offset 0.
    _ft_document.Docx: frozenset(b"P"),
    _ft_document.Odt: frozenset(b"P"),
    _ft_document.Xlsx: frozenset(b"P"),
    _ft_document.Ods: frozenset(b"P"),
    _ft_document.Pptx: frozenset(b"P"),
    _ft_document.Odp: frozenset(b"P"),
    _ft_archive.Br: frozenset(b"\xce"),
    _ft_archive.Rpm: frozenset(b"\xed"),
    _ft_archive.Epub: frozenset(b"P"),
    _ft_archive.Zip: frozenset(b"P"),
    _ft_archive.Rar: frozenset(b"R"),
    _ft_archive.Gz: frozenset(b"\x1f"),
    _ft_archive.Bz2: frozenset(b"B"),
    _ft_archive.SevenZ: frozenset(b"7"),
    _ft_archive.Pdf: frozenset(b"%\xef"),  # "%PDF", possibly after a UTF-8 byte order mark
    _ft_archive.Exe: frozenset(b"M"),
    _ft_archive.Swf: frozenset(b"CF"),
    _ft_archive.Rtf: frozenset(b"{"),
    _ft_archive.Nes: frozenset(b"N"),
    _ft_archive.Crx: frozenset(b"C"),
    _ft_archive.Cab: frozenset(b"MI"),
    _ft_archive.Ps: frozenset(b"%"),
    _ft_archive.Xz: frozenset(b"\xfd"),
    _ft_archive.Sqlite: frozenset(b"S"),
    _ft_archive.Deb: frozenset(b"!"),
    _ft_archive.Ar: frozenset(b"!"),
    _ft_archive.Z: frozenset(b"\x1f"),
    _ft_archive.Lzop: frozenset(b"\x89"),
    _ft_archive.Lz: frozenset(b"L"),
    _ft_archive.Elf: frozenset(b"\x7f"),
    _ft_archive.Lz4: frozenset(b"\x04"),
    # A Zstandard frame (0x22..0x28) or a skippable frame (little-endian magic 0x184D2A5?).
    _ft_archive.Zstd: frozenset(range(0x22, 0x29)) | frozenset(range(0x50, 0x60)),
    _ft_application.Wasm: frozenset(b"\x00"),
}
"""The first bytes each ``filetype`` matcher class can accept (read from filetype 1.2.0)."""


class _FiletypeIndex:
    """``filetype``'s matchers grouped by the first byte they can accept, in the library's order.

    Built from one state of the library's matcher list; :func:`filetype_guess`
    rebuilds it when that list changes (``filetype.add_type``). A matcher
    given its own ``match`` (an instance attribute) runs for every first byte.
    """

    def __init__(self, matchers: list[_FiletypeMatcher]) -> None:
        self.matchers = list(matchers)
        self.by_first_byte = tuple(
            tuple(
                matcher
                for matcher in self.matchers
                if first in FILETYPE_FIRST_BYTES.get(type(matcher), range(256))
                or "match" in getattr(matcher, "__dict__", ())  # its own match, not the class's
            )
            for first in range(256)
        )


_filetype_index: _FiletypeIndex | None = None
_FILETYPE_TABLE_APPLIES: Final = filetype.__version__ == FILETYPE_TABLE_VERSION


def filetype_guess(head: bytes) -> _FiletypeMatcher | None:
    """``filetype.guess(head)`` for ``bytes``, running only the matchers that can match.

    Gives the same matcher as ``filetype.guess`` for every input, and raises
    whatever it would raise: a matcher is skipped only when
    :data:`FILETYPE_FIRST_BYTES` says it returns a false value for the head's
    first byte, and the others run in the library's order on the same first
    8192 bytes. With a ``filetype`` release other than
    :data:`FILETYPE_TABLE_VERSION`, whose matchers were not read, it calls
    ``filetype.guess``.
    """
    global _filetype_index
    if not _FILETYPE_TABLE_APPLIES or not isinstance(head, bytes | bytearray):
        return filetype.guess(head)  # filetype turns a memoryview (or a path) into bytes first
    buf = head[:_FILETYPE_SIGNATURE_BYTES]
    if not buf:
        return None
    index = _filetype_index
    if index is None or index.matchers != _FILETYPE_MATCHERS:
        index = _filetype_index = _FiletypeIndex(_FILETYPE_MATCHERS)
    for matcher in index.by_first_byte[buf[0]]:
        if matcher.match(buf):
            return matcher
    return None
