"""``filetype_guess`` answers as ``filetype.guess`` for any input type and any added matcher."""

from __future__ import annotations

import struct
from typing import Any

import filetype
import pytest
from filetype.types import TYPES
from filetype.types.image import Jpeg

from docbinder.adapters.extract.mime import filetype_guess


def _answer(head: Any) -> tuple[str, object]:
    try:
        return "ok", filetype.guess(head)
    except Exception as exc:
        return "raised", type(exc)


def _ours(head: Any) -> tuple[str, object]:
    try:
        return "ok", filetype_guess(head)
    except Exception as exc:
        return "raised", type(exc)


@pytest.mark.parametrize(
    "head",
    [
        b"\x1a",
        b"P\xfe\x00\x01",
        b"\x00\x00\x00\x18ftypisom" + bytes(9000),
        b"\xff\xd8\xff\xe0" + bytes(30),
        b"%PDF-1.7\n",
        bytes(300),
    ],
)
def test_a_memoryview_gets_the_answer_of_filetype(head: bytes) -> None:
    # filetype copies a memoryview into a bytearray; some matchers call bytes methods.
    assert _ours(memoryview(head)) == _answer(memoryview(head))
    assert _ours(bytearray(head)) == _answer(bytearray(head))


def test_a_matcher_added_with_its_own_match_runs_for_every_first_byte() -> None:
    own = Jpeg()
    own.match = lambda buf: bytes(buf[:1]) == b"Q"  # type: ignore[method-assign]
    filetype.add_type(own)
    try:
        assert filetype.guess(b"Qabc") is own
        assert filetype_guess(b"Qabc") is own
    finally:
        TYPES.remove(own)
    assert filetype_guess(b"Qabc") is None


def test_box_sizes_past_the_head_still_agree() -> None:
    for size in (0, 8, 8192, 8193, 0x01000000, 0xFFFFFFFF):
        head = struct.pack(">I", size) + b"ftypisom" + bytes(40)
        assert _ours(head) == _answer(head)
