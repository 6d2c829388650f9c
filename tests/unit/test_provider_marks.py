"""The names provider uploads carry (ADR 0125) and the blob file they stream from."""

from __future__ import annotations

import io
import os

import pytest

from docbinder.adapters.memory import MemoryBlobStore
from docbinder.application.steps.blob_file import BlobFile
from docbinder.domain.errors import InvalidInput
from docbinder.domain.providers import MAX_MARKED_NAME, marked_name, token_of

TOKEN = "3f2a9c1e-7b4d-4e2a-9c1e-7b4d4e2a9c1e"
CYRILLIC_A = TOKEN.replace("a", "\u0430")
FULLWIDTH_1 = TOKEN.replace("1", "\uff11")


@pytest.mark.parametrize(
    ("name", "marked"),
    [
        ("report.pdf", f"report~docbinder-{TOKEN}.pdf"),
        ("archive.tar.gz", f"archive.tar~docbinder-{TOKEN}.gz"),
        ("README", f"README~docbinder-{TOKEN}"),
        (".env", f".env~docbinder-{TOKEN}"),
        ("a/b\\c.txt", f"a_b_c~docbinder-{TOKEN}.txt"),
    ],
)
def test_the_suffix_stays_last_and_the_token_reads_back(name: str, marked: str) -> None:
    assert marked_name(name, TOKEN) == marked
    assert token_of(marked) == TOKEN


def test_a_long_name_is_shortened_in_its_stem() -> None:
    marked = marked_name("x" * 400 + ".docx", TOKEN)
    assert len(marked) == MAX_MARKED_NAME and marked.endswith(f"~docbinder-{TOKEN}.docx")
    assert token_of(marked) == TOKEN


@pytest.mark.parametrize(
    "name", [None, "", "report.pdf", "report~docbinder-.pdf", "report~docbinder-a b.pdf"]
)
def test_names_without_a_token(name: str | None) -> None:
    assert token_of(name) is None


def test_a_token_must_be_letters_digits_or_dashes() -> None:
    with pytest.raises(InvalidInput):
        marked_name("r.pdf", "a/b")


@pytest.mark.parametrize(
    ("name", "read"),
    [
        # look-alikes of a docbinder name: none reads back as TOKEN
        (f"report~docbinder-{TOKEN}.pdf\n", None),  # a line end after the name
        (f"report~docbinder-{TOKEN}\n", None),
        (f"report~docbinder-{TOKEN[:-1]}.pdf", TOKEN[:-1]),  # a truncated token is another one
        (f"report~docbinder-{TOKEN}0.pdf", f"{TOKEN}0"),  # the token inside a longer one
        (f"report~docbinder-x{TOKEN}.pdf", f"x{TOKEN}"),
        (f"report~docbinder-{TOKEN}.pdf.exe", None),  # not the last part of the name
        (f"report~docbinder-{CYRILLIC_A}.pdf", None),  # Cyrillic a
        (f"report~docbinder-{FULLWIDTH_1}.pdf", None),  # fullwidth digit
        (f"report\uff5edocbinder-{TOKEN}.pdf", None),  # fullwidth tilde
        (f"report~Docbinder-{TOKEN}.pdf", None),
        (f"report~docbinder-{TOKEN.upper()}.pdf", TOKEN.upper()),  # not the same token
    ],
)
def test_only_the_exact_token_reads_back(name: str, read: str | None) -> None:
    assert token_of(name) == read
    assert token_of(name) != TOKEN


def test_a_token_with_a_line_end_is_refused() -> None:
    with pytest.raises(InvalidInput):
        marked_name("report.pdf", TOKEN + "\n")


def test_the_blob_file_reads_seeks_and_measures_like_a_file() -> None:
    data = os.urandom(300_000)
    blobs = MemoryBlobStore()
    key = "blobs/ab/k1"
    assert blobs.put(key, [data]) == len(data)
    with BlobFile(blobs, key, len(data), chunk_size=65_536) as f:
        assert f.seek(0, io.SEEK_END) == len(data) and f.tell() == len(data)
        assert f.read(10) == b""
        f.seek(0)
        assert f.read(100_000) == data[:100_000]  # filled across chunks
        f.seek(250_000)
        assert f.read() == data[250_000:]
        f.seek(-10, io.SEEK_END)
        assert f.read() == data[-10:]
        with pytest.raises(ValueError):
            f.seek(-1)
    assert f.closed
