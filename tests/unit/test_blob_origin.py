"""Provenance marks: the full ``v1`` form and the compact ``v2`` form (ADR 0022, ADR 0036)."""

from __future__ import annotations

import base64
import re

import pytest

from docbinder.ports.blobs import BlobOrigin, blob_origin, compact_blob_origin, read_origin

STORE = "0f8c7a52-2b1e-4d7e-9a4c-3f2d1e0b9a87"
OTHER_STORE = "6a1d0c3b-8e2f-4b5a-9c7d-1e0f2a3b4c5d"
DB = "2c9e4b71-5d3a-4f6e-8b1c-7a0d9e8f6b5c"
OTHER_DB = "9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
KEY = "ab/abc123"


def test_a_compact_mark_is_fifteen_ascii_characters_that_fit_in_an_inode() -> None:
    mark = compact_blob_origin(STORE, DB, KEY)
    assert re.fullmatch(r"v2 [A-Za-z0-9_-]{12}", mark)
    assert len(mark.encode("ascii")) == 15
    assert len(blob_origin(STORE, DB, KEY).encode("ascii")) == 109  # what it replaces


def test_the_compact_mac_is_the_head_of_the_full_marks_mac() -> None:
    """One HMAC-SHA-256 over the same input: the compact mark keeps its first 9 bytes."""
    for database in (DB, None):
        full_mac = bytes.fromhex(blob_origin(STORE, database, KEY).split(" ")[3])
        compact = compact_blob_origin(STORE, database, KEY).split(" ")[1]
        assert base64.urlsafe_b64decode(compact) == full_mac[:9]


def test_a_compact_mark_differs_for_every_key_store_and_database() -> None:
    marks = {
        compact_blob_origin(store, database, key)
        for store in (STORE, OTHER_STORE)
        for database in (DB, OTHER_DB, None)
        for key in (KEY, "ab/abc124", "cd/cd1")
    }
    assert len(marks) == 18


@pytest.mark.parametrize("database", [DB, None])
def test_a_compact_mark_reads_back_against_its_store_and_database(database: str | None) -> None:
    mark = compact_blob_origin(STORE, database, KEY)
    assert read_origin(mark, KEY, STORE, [database]) == BlobOrigin(STORE, database)
    assert read_origin(mark + "\n", KEY, STORE, [database]) == BlobOrigin(STORE, database)
    # the matching candidate is named, wherever it stands among the others
    candidates = [OTHER_DB, "f" * 36, database, None if database else DB]
    assert read_origin(mark, KEY, STORE, candidates) == BlobOrigin(STORE, database)
    assert read_origin(mark, KEY, STORE, iter(candidates)) == BlobOrigin(STORE, database)


def test_a_dash_candidate_stands_for_no_database() -> None:
    mark = compact_blob_origin(STORE, None, KEY)
    assert read_origin(mark, KEY, STORE, ["-"]) == BlobOrigin(STORE, None)


def test_a_compact_mark_is_refused_for_another_key_store_or_database() -> None:
    mark = compact_blob_origin(STORE, DB, KEY)
    assert read_origin(mark, "ab/abc124", STORE, [DB]) is None  # copied onto another key
    assert read_origin(mark, KEY, OTHER_STORE, [DB]) is None  # copied from another store
    assert read_origin(mark, KEY, STORE, [OTHER_DB, None]) is None  # a database not asked for
    assert read_origin(mark, KEY, STORE, []) is None  # nothing to verify against
    assert read_origin(mark, KEY, None, [DB]) is None  # a store without identity
    assert read_origin(mark, KEY) is None  # a caller that passes nothing
    assert read_origin(compact_blob_origin(STORE, None, KEY), KEY, STORE, [DB]) is None


@pytest.mark.parametrize(
    "garbage",
    [
        "v2",
        "v2 ",
        "v2 AAAAAAAAAAAA",
        "v2 " + "=" * 12,
        "v2  abcdefghijkl",
        "v3 abcdefghijkl",
        "V2 abcdefghijkl",
        "v2 abcdefghijk\u00e9",
        "v2\u00a0abcdefghijkl",
        "",
        "   ",
    ],
)
def test_garbage_is_no_compact_mark(garbage: str) -> None:
    assert read_origin(garbage, KEY, STORE, [DB, OTHER_DB, None]) is None


def test_a_truncated_or_altered_compact_mark_is_refused() -> None:
    mark = compact_blob_origin(STORE, DB, KEY)
    assert read_origin(mark[:-1], KEY, STORE, [DB]) is None
    assert read_origin(mark + "A", KEY, STORE, [DB]) is None
    assert read_origin(mark + " " + DB, KEY, STORE, [DB]) is None
    last = "B" if mark[-1] != "B" else "C"
    assert read_origin(mark[:-1] + last, KEY, STORE, [DB]) is None
    full = blob_origin(STORE, DB, KEY)
    assert read_origin(full[:-1], KEY, STORE, [DB]) is None
    assert read_origin("v2 " + full.split(" ")[3][:12], KEY, STORE, [DB]) is None  # hex, not b64


@pytest.mark.parametrize("database", [DB, None])
def test_a_full_mark_still_reads_back_on_its_own(database: str | None) -> None:
    mark = blob_origin(STORE, database, KEY)
    assert read_origin(mark, KEY) == BlobOrigin(STORE, database)
    # the candidates do not matter for it: it names its store and database itself
    assert read_origin(mark, KEY, OTHER_STORE, [OTHER_DB]) == BlobOrigin(STORE, database)
    assert read_origin(mark, "ab/abc124") is None


def test_a_mark_with_non_ascii_characters_is_refused_not_raised() -> None:
    """A file in the layout whose attribute holds non-ASCII text looks like a full mark:
    comparing it in constant time raised ``TypeError`` (gc stopped, a delete failed)."""
    assert read_origin(f"v1 {STORE}\u00e9 - {'0' * 32}", KEY) is None
    replaced = "\ufffd" * 32  # what local disk reads from bytes that are not ASCII
    assert read_origin(f"v1 {STORE} {DB} {replaced}", KEY, STORE, [DB]) is None
