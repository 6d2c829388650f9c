"""The first-byte index over ``filetype``'s matchers gives exactly ``filetype.guess``'s answers."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import random
import sqlite3
import struct
import sys
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import filetype
import pytest
from filetype.types import TYPES, Type, archive, audio, image
from PIL import Image

from docbinder.adapters.extract import mime
from docbinder.adapters.extract.mime import (
    FILETYPE_FIRST_BYTES,
    FILETYPE_TABLE_VERSION,
    SniffingMimeDetector,
    filetype_guess,
)
from tests import documents

# Matchers that look past the first byte for their signature: they always run.
ANY_FIRST_BYTE = {image.Dcm, archive.Dcm, archive.Tar, archive.Eot, audio.M4a}


def _image(fmt: str) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (4, 4), (200, 10, 10)).save(out, format=fmt)
    return out.getvalue()


def _tar() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo("a.txt")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"abc"))
    return out.getvalue()


def _zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive_file:
        archive_file.writestr("a.txt", b"abc")
    return out.getvalue()


def _opendocument(mime_type: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive_file:
        archive_file.writestr("mimetype", mime_type, compress_type=zipfile.ZIP_STORED)
        archive_file.writestr("content.xml", b"<office:document-content/>")
    return out.getvalue()


def _sqlite(tmp: Path) -> bytes:
    path = tmp / "db.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x)")
    db.close()
    return path.read_bytes()


def _ole(stream_marker: bytes) -> bytes:
    head = bytearray(4096)
    head[:8] = bytes.fromhex("D0CF11E0A1B11AE1")
    head[512 : 512 + len(stream_marker)] = stream_marker
    return bytes(head)


def _isobmff(brand: bytes, compatible: bytes = b"") -> bytes:
    box = struct.pack(">I", 16 + len(compatible)) + b"ftyp" + brand + b"\x00\x00\x00\x00"
    return box + compatible + bytes(64)


def _zstd_skippable_chain(frames: int) -> bytes:
    return (struct.pack("<II", 0x184D2A50, 0) * frames) + b"\x28\xb5\x2f\xfd"


def signature_samples(tmp: Path) -> list[bytes]:
    """Heads that some ``filetype`` matcher accepts: real files and the documented signatures."""
    Image.init()
    formats = ("PNG", "JPEG", "GIF", "BMP", "TIFF", "WEBP", "ICO", "JPEG2000", "AVIF")
    real = [_image(fmt) for fmt in formats if fmt in Image.SAVE] + [
        gzip.compress(b"abc"),
        bz2.compress(b"abc"),
        lzma.compress(b"abc"),
        _tar(),
        _zip(),
        _sqlite(tmp),
        Path(sys.executable).resolve().read_bytes()[:8192],
        documents.pdf_document([b"<< /Type /Catalog >>"]),
        documents.docx_bytes(),
        documents.xlsx_bytes(),
        documents.pptx_bytes(),
        documents.odt_bytes(),
        documents.ods_bytes(),
        documents.epub_bytes(),
        _opendocument("application/vnd.oasis.opendocument.presentation"),
        documents.rtf_bytes(),
    ]
    made = [
        b"AC1018" + bytes(64),
        b"gimp xcf v011" + bytes(64),
        b"\x00\x00\x00\x0cjP  \r\n\x87\n\x00\x00\x00\x14ftypjp2 " + bytes(64),
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\x08acTL" + bytes(64),
        b"II*\x00\x10\x00\x00\x00CR" + bytes(64),
        b"MM\x00*\x00\x00\x00\x08" + bytes(64),
        b"II\xbc\x01" + bytes(64),
        b"8BPS\x00\x01" + bytes(64),
        bytes(128) + b"DICM" + bytes(64),
        _isobmff(b"heic"),
        _isobmff(b"mif1", b"avif"),
        _isobmff(b"isom"),
        _isobmff(b"qt  "),
        b"\xff\xf1\x50\x80",
        b"\xff\xf9\x50\x80",
        b"MThd\x00\x00\x00\x06",
        b"ID3\x04\x00",
        b"\xff\xfb\x90\x00",
        b"\x00\x00\x00\x20ftypM4A " + bytes(64),
        b"M4A " + bytes(64),
        b"OggS\x00\x02" + bytes(64),
        b"fLaC\x00\x00\x00\x22" + bytes(64),
        b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(64),
        b"RIFF\x24\x00\x00\x00AVI LIST" + bytes(64),
        b"#!AMR\n" + bytes(64),
        b"FORM\x00\x00\x00\x00AIFF" + bytes(64),
        b"ftyp3gp5" + bytes(64),
        b"\x00\x00\x00\x1cftypM4V " + bytes(64),
        b"\x1aE\xdf\xa3\x42\x82\x88matroska" + bytes(64),
        b"\x1aE\xdf\xa3\x42\x82\x84webm" + bytes(64),
        bytes.fromhex("3026B2758E66CF11A6D900AA0062CE6C") + bytes(64),
        b"\x00\x00\x01\xba" + bytes(64),
        b"FLV\x01\x05" + bytes(64),
        b"wOFF\x00\x01\x00\x00" + bytes(64),
        b"wOF2OTTO" + bytes(64),
        b"\x00\x01\x00\x00\x00" + bytes(64),
        b"OTTO\x00" + bytes(64),
        _ole(b"\xec\xa5\xc1\x00"),
        _ole(b"\x09\x08\x10\x00\x00\x06\x05\x00"),
        _ole(b"\xa0\x46\x1d\xf0"),
        b"\xce\xb2\xcf\x81" + bytes(64),
        b"\xed\xab\xee\xdb" + bytes(64),
        b"Rar!\x1a\x07\x01\x00" + bytes(64),
        b"7z\xbc\xaf\x27\x1c" + bytes(64),
        b"\xef\xbb\xbf%PDF-1.7" + bytes(64),
        b"MZ\x90\x00" + bytes(64),
        b"FWS\x0a" + bytes(64),
        b"CWS\x0a" + bytes(64),
        b"NES\x1a" + bytes(64),
        b"Cr24\x02\x00" + bytes(64),
        b"MSCF\x00\x00" + bytes(64),
        b"ISc(\x00\x00" + bytes(64),
        bytes(8) + b"\x02\x00\x01" + bytes(23) + b"LP" + bytes(64),
        b"%!PS-Adobe-3.0" + bytes(64),
        b"!<arch>\ndebian-binary" + bytes(64),
        b"!<arch>\nfoo" + bytes(64),
        b"\x1f\x9d\x90",
        b"\x1f\xa0\x90",
        b"\x89LZO\x00\r\n\x1a" + bytes(64),
        b"LZIP\x01" + bytes(64),
        b"\x04\x22\x4d\x18" + bytes(64),
        b"\x28\xb5\x2f\xfd" + bytes(64),
        _zstd_skippable_chain(3),
        b"\x00asm\x01\x00\x00\x00" + bytes(64),
        b"PK\x07\x08" + bytes(64),
        b"PK\x05\x06" + bytes(64),
    ]
    return real + made


RAISING = _zstd_skippable_chain(1100)
"""Skippable frames nested deeper than the recursion limit: the Zstd matcher raises."""


def _outcome(guess: Callable[[bytes], Any], head: bytes) -> object:
    """The matcher found, or the type of the exception raised."""
    try:
        return guess(head)
    except Exception as exc:
        return type(exc)


def _variants(samples: list[bytes], rng: random.Random) -> Iterator[bytes]:
    """Each sample, with every first byte, cut short, and with random bytes after its start."""
    for sample in samples:
        yield sample
        for first in range(256):
            yield bytes([first]) + sample[1:]
        for length in (1, 2, 3, 4, 8, 12, 16, 40, 64, 200, 600):
            yield sample[:length]
        for length in (4, 8, 16, 64):
            yield sample[:length] + rng.randbytes(rng.choice((0, 16, 600, 9000)))


def _random_heads(rng: random.Random, count: int) -> Iterator[bytes]:
    for _ in range(count):
        length = rng.choice((1, 2, 3, 7, 16, 100, 1024, 4096, 8192, 9000))
        head = rng.randbytes(length)
        if rng.random() < 0.5:  # many zero bytes, as in binary headers
            head = bytes(b if rng.random() < 0.5 else 0 for b in head[:300]) + head[300:]
        yield head


def test_the_table_was_read_from_the_installed_filetype() -> None:
    # A new filetype release may change its matchers: read them again, then update the table.
    assert filetype.__version__ == FILETYPE_TABLE_VERSION


def test_every_matcher_is_in_the_table_or_runs_for_any_first_byte() -> None:
    classes = {type(matcher) for matcher in TYPES}
    assert classes == set(FILETYPE_FIRST_BYTES) | ANY_FIRST_BYTE
    assert not set(FILETYPE_FIRST_BYTES) & ANY_FIRST_BYTE


def test_samples_are_recognised(tmp_path: Path) -> None:
    found = {type(filetype.guess(sample)) for sample in signature_samples(tmp_path)}
    # Every matcher but archive.Dcm (image.Dcm, earlier, has its signature) answers a sample.
    assert len(found - {type(None)}) == len(TYPES) - 1


def test_same_answer_as_filetype_guess_on_signatures_and_their_variants(tmp_path: Path) -> None:
    rng = random.Random(20261201)
    checked = 0
    for head in _variants([*signature_samples(tmp_path), RAISING], rng):
        assert _outcome(filetype_guess, head) == _outcome(filetype.guess, head), head[:16]
        checked += 1
    assert checked > 20_000


def test_same_answer_as_filetype_guess_on_random_heads() -> None:
    rng = random.Random(7)
    for head in _random_heads(rng, 5_000):
        assert _outcome(filetype_guess, head) == _outcome(filetype.guess, head), head[:16]


def test_a_matcher_refuses_every_first_byte_outside_its_set(tmp_path: Path) -> None:
    rng = random.Random(11)
    heads = signature_samples(tmp_path) + list(_random_heads(rng, 200))
    for matcher in TYPES:
        allowed = FILETYPE_FIRST_BYTES.get(type(matcher))
        if allowed is None:
            continue
        for head in heads:
            for first in set(range(256)) - allowed:
                assert not matcher.match(bytes([first]) + head[1:]), (matcher, first)


def test_empty_head_matches_nothing() -> None:
    assert filetype_guess(b"") is None


def test_an_added_matcher_is_seen() -> None:
    class Everything(Type):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(mime="application/x-everything", extension="all")

        def match(self, buf: bytes) -> bool:
            return True

    head = b"\x89PNG\r\n\x1a\n" + bytes(32)
    assert filetype_guess(head) is filetype.guess(head)
    added = Everything()
    filetype.add_type(added)
    try:
        assert filetype_guess(head) is added
        assert filetype_guess(bytes(8)) is added
    finally:
        TYPES.remove(added)
    assert filetype_guess(bytes(8)) is filetype.guess(bytes(8))


def test_detector_answers_as_with_filetype_guess(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(3)
    heads = list(_variants([*signature_samples(tmp_path), RAISING], rng)) + list(
        _random_heads(rng, 2_000)
    )
    names = ("f1.bin", "a.txt", "x.docx", "noext", "m.doc")
    detector = SniffingMimeDetector()
    fast = [detector.detect(head, names[i % 5], "image/png") for i, head in enumerate(heads)]
    monkeypatch.setattr(mime, "filetype_guess", filetype.guess)
    slow = [detector.detect(head, names[i % 5], "image/png") for i, head in enumerate(heads)]
    assert fast == slow
