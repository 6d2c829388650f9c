"""Which sandbox paths :func:`rewrite_links` rewrites, and which it leaves alone and reports."""

from __future__ import annotations

import pytest

from docbinder.harvest import ChunkStream, rewrite_links
from docbinder.harvest.anthropic_files import output_file_ids

KNOWN = {
    "/mnt/data/chart.png": "docItem:c1",
    "/mnt/data/a/report.csv": "docItem:r1",
    "/mnt/data/b/report.csv": "docItem:r2",
    "/home/user/outputs/x.csv": "docItem:x1",
}


@pytest.mark.parametrize(
    ("text", "expected", "unknown"),
    [
        ("sandbox:/mnt/data/chart.png", "docItem:c1", ()),
        ("see /mnt/data/chart.png.", "see docItem:c1.", ()),
        ("![c](sandbox:/mnt/data/chart.png)", "![c](docItem:c1)", ()),
        ("[x](./outputs/x.csv), done", "[x](docItem:x1), done", ()),
        ("`/mnt/data/./chart.png`", "`docItem:c1`", ()),
        # a trailing part that fits two harvested paths is ambiguous: left alone, reported
        ("./report.csv", "./report.csv", ("./report.csv",)),
        ("./a/report.csv", "docItem:r1", ()),
        # inside a URL or a word: not a sandbox path
        ("https://host/mnt/data/chart.png", "https://host/mnt/data/chart.png", ()),
        ("and/or", "and/or", ()),
        # never climbs out of a path
        ("./../chart.png", "./../chart.png", ("./../chart.png",)),
        (
            "sandbox:/mnt/data/none.png!",
            "sandbox:/mnt/data/none.png!",
            ("sandbox:/mnt/data/none.png",),
        ),
    ],
)
def test_rewrite(text: str, expected: str, unknown: tuple[str, ...]) -> None:
    result = rewrite_links(text, KNOWN)
    assert result.text == expected
    assert result.unknown == unknown


def test_a_chunk_stream_reads_across_chunk_boundaries_and_closes_once() -> None:
    closed: list[int] = []
    stream = ChunkStream([b"ab", b"", b"cde", b"f"], lambda: closed.append(1))
    assert stream.read(3) == b"ab"  # a raw read gives what one chunk holds
    assert stream.read() == b"cdef"
    assert stream.read(1) == b""
    stream.close()
    stream.close()
    assert closed == [1] and stream.closed


def test_output_file_ids_of_both_code_execution_result_shapes() -> None:
    message = {
        "content": [
            {"type": "text", "text": "x"},
            {
                "type": "code_execution_tool_result",
                "content": {
                    "type": "code_execution_result",
                    "content": [{"type": "code_execution_output", "file_id": "file_old"}],
                },
            },
            {
                "type": "bash_code_execution_tool_result",
                "content": {
                    "type": "bash_code_execution_result",
                    "content": [
                        {"type": "bash_code_execution_output", "file_id": "file_new"},
                        {"type": "bash_code_execution_output", "file_id": "file_old"},
                    ],
                },
            },
            {"type": "document", "source": {"type": "file", "file_id": "file_input"}},
        ]
    }
    assert output_file_ids(message) == ["file_old", "file_new"]
