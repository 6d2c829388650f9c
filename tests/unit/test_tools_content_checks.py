"""Stored content matches its name's type, whatever encoding it arrives in (ADR 0020).

Every case runs through the Python tool and through the shared tool set
(``DocbinderToolset(run).call``, which MCP and the framework integrations use):
text, base64 (``encoding: "base64"``) and ``data:`` URIs are decoded to bytes
first; then a ``.json`` name needs strict JSON, ``.jsonl`` JSON on each line,
and a text name UTF-8 text without NUL. Refusals are ``InvalidInput`` with what
was received, what is accepted and an example, and store nothing.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from docbinder.application import DocBinder, Run
from docbinder.domain.errors import InvalidInput
from docbinder.tools import create_chart, write_file
from docbinder.tools.arguments import (
    MAX_JSON_DEPTH,
    coerce_file_name,
    is_text_name,
    json_text_depth,
    load_json,
)
from docbinder.tools.chart_dialects import to_docbinder_spec
from docbinder.toolset import DocbinderToolset
from tests.unit.conftest import make_memory_binder
from tests.unit.test_tools_fixtures import ALICE, png_bytes


@pytest.fixture
def binder() -> DocBinder:
    return make_memory_binder()


@pytest.fixture
def run(binder: DocBinder) -> Run:
    return binder.start_new_run(ALICE)


@pytest.fixture
def toolset(run: Run) -> DocbinderToolset:
    return DocbinderToolset(run)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def nested_dict(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    current = root
    for _ in range(depth - 1):
        current["a"] = {}
        current = current["a"]
    return root


# (name, content, encoding, a fragment of the reason)
REFUSED: list[tuple[str, object, str | None, str]] = [
    ("x.json", '{"a": NaN}', None, "NaN is not JSON (RFC 8259 has no NaN or Infinity)"),
    ("x.json", '{"a": Infinity}', None, "Infinity is not JSON"),
    ("x.json", "[-Infinity]", None, "-Infinity is not JSON"),
    ("x.json", "NaN", None, "NaN is not JSON"),
    ("x.json", "/w==", "base64", "is not UTF-8 text: its 1 bytes have byte 0xFF at position 0"),
    ("x.json", b64(b"not json"), "base64", "got text that is not JSON (Expecting value"),
    ("x.json", b64(b'{"a": NaN}'), "base64", "NaN is not JSON"),
    (
        "x.json",
        "data:application/json;base64,bm90IGpzb24=",
        None,
        "got text (decoded from the data: URI) that is not JSON",
    ),
    ("x", "data:application/json;base64,bm90IGpzb24=", None, "content for 'x.json': got text"),
    ("x.md", "data:text/plain;base64,/w==", None, "is not UTF-8 text: its 1 bytes (decoded"),
    ("x.md", "/w==", "base64", "'x.md' is not UTF-8 text"),
    ("x.txt", b64(png_bytes()), "base64", "which is not UTF-8, they are a PNG image"),
    ("x.md", "nul \x00 char", None, "NUL character at character 4"),
    ("x.csv", b64(b"a,b\n\x00,1\n"), "base64", "NUL character at character 4"),
    ("x.jsonl", "not json\nalso not", None, "line 1 is not JSON"),
    ("x.ndjson", '{"a": 1}\n\n{"a": NaN}\n', None, "line 3 is not JSON (NaN is not JSON"),
    ("x.json", "[" * 5000 + "]" * 5000, None, "nested 5000 deep, more than the 100 accepted"),
    ("x.json", "1" * 5000, None, "a number of 5000 digits, more than the 4300 accepted"),
    ("x.md", "a\ud800b", None, "lone surrogate U+D800 at character 1"),
    ("x.json", {"a": "\udfff"}, None, "lone surrogate U+DFFF"),
    ("x.json", nested_dict(5000), None, "nested at most 100 deep"),
    ("x.jsonl", [nested_dict(MAX_JSON_DEPTH + 1)], None, "nested at most 100 deep"),
    (".json", {"a": 1}, None, "has nothing before its extension '.json'"),
    ("out/.png", b64(png_bytes()), None, "has nothing before its extension '.png'"),
    ("x.png.", "hello", None, "content for 'x.png': got plain text"),
    ("x.png\u200b", "hello", None, "content for 'x.png': got plain text"),
    ("x.p\u200bng", "hello", None, "content for 'x.png': got plain text"),
]


def _python_content(content: object, encoding: str | None) -> object:
    """What a Python caller passes for the tool set's ``encoding: "base64"``: the bytes."""
    if encoding == "base64":
        assert isinstance(content, str)
        return base64.b64decode(content)
    return content


@pytest.mark.parametrize(("name", "content", "encoding", "reason"), REFUSED)
def test_the_tool_set_refuses_content_that_does_not_fit_the_name(
    toolset: DocbinderToolset,
    run: Run,
    name: str,
    content: object,
    encoding: str | None,
    reason: str,
) -> None:
    arguments: dict[str, object] = {"name": name, "content": content}
    if encoding:
        arguments["encoding"] = encoding
    outcome = toolset.call("write_file", arguments)
    assert outcome.is_error
    assert reason in outcome.text
    assert "accepted: " in outcome.text and "example: " in outcome.text
    assert "internal error" not in outcome.text
    assert run.list_files() == []


@pytest.mark.parametrize(("name", "content", "encoding", "reason"), REFUSED)
def test_the_python_tool_refuses_content_that_does_not_fit_the_name(
    run: Run, name: str, content: object, encoding: str | None, reason: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        write_file(run, name, _python_content(content, encoding))
    assert reason in str(refused.value)
    assert "accepted: " in str(refused.value) and "example: " in str(refused.value)
    assert run.list_files() == []


# (name, content, encoding, stored name, stored bytes, stored MIME type)
STORED: list[tuple[str, object, str | None, str, bytes, str]] = [
    ("x.json", b64(b'{"a": 1}'), "base64", "x.json", b'{"a": 1}', "application/json"),
    (
        "x",
        "data:application/json;base64," + b64(b'[1, "\xc3\xa9"]'),
        None,
        "x.json",
        b'[1, "\xc3\xa9"]',
        "application/json",
    ),
    ("x.json", "1" * 4300, None, "x.json", b"1" * 4300, "application/json"),
    (
        "x.json",
        "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH,
        None,
        "x.json",
        b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH,
        "application/json",
    ),
    ("x.json", '{"s": "NaN [[["}', None, "x.json", b'{"s": "NaN [[["}', "application/json"),
    ("x.jsonl", '{"a": 1}\r\n\n[2]\n', None, "x.jsonl", b'{"a": 1}\r\n\n[2]\n', "text/plain"),
    ("x.md", b64("# Café\n".encode()), "base64", "x.md", "# Café\n".encode(), "text/markdown"),
    (
        "x.md",
        "\U0001f600 tab\tesc\x1b\n",
        None,
        "x.md",
        "\U0001f600 tab\tesc\x1b\n".encode(),
        "text/markdown",
    ),
    ("x.dat", "/wA=", "base64", "x.dat", b"\xff\x00", "application/octet-stream"),
    ("a.md\u200b", "# A\n", None, "a.md", b"# A\n", "text/markdown"),
    (".gitignore", "*.pyc\n", None, ".gitignore", b"*.pyc\n", "text/plain"),
]


@pytest.mark.parametrize(("name", "content", "encoding", "stored", "data", "mime"), STORED)
def test_content_that_fits_the_name_is_stored_through_the_tool_set(
    toolset: DocbinderToolset,
    run: Run,
    name: str,
    content: object,
    encoding: str | None,
    stored: str,
    data: bytes,
    mime: str,
) -> None:
    arguments: dict[str, object] = {"name": name, "content": content}
    if encoding:
        arguments["encoding"] = encoding
    outcome = toolset.call("write_file", arguments)
    assert not outcome.is_error, outcome.text
    item = run.get_file(outcome.file_ids[0])
    assert (item.file_name, run.read_file(item.id), item.mime_type) == (stored, data, mime)


@pytest.mark.parametrize(("name", "content", "encoding", "stored", "data", "mime"), STORED)
def test_content_that_fits_the_name_is_stored_through_the_python_tool(
    run: Run,
    name: str,
    content: object,
    encoding: str | None,
    stored: str,
    data: bytes,
    mime: str,
) -> None:
    [produced] = write_file(run, name, _python_content(content, encoding)).files
    item = produced.item
    assert (item.file_name, run.read_file(item.id), item.mime_type) == (stored, data, mime)


def test_a_png_name_with_a_trailing_dot_stores_real_png_bytes_as_png(
    toolset: DocbinderToolset, run: Run
) -> None:
    png = png_bytes()
    outcome = toolset.call("write_file", {"name": "dot.png.", "content": b64(png)})
    assert not outcome.is_error, outcome.text
    item = run.get_file(outcome.file_ids[0])
    assert (item.file_name, item.mime_type, run.read_file(item.id)) == ("dot.png", "image/png", png)


def test_arguments_sent_as_deeply_nested_json_text_are_refused_with_the_reason(
    toolset: DocbinderToolset,
) -> None:
    text = '{"name": "x.json", "content": ' + "[" * 5000 + "]" * 5000 + "}"
    outcome = toolset.call("write_file", text)
    assert outcome.text == (
        "the arguments of write_file are not a JSON object "
        "(arrays and objects nested 5001 deep, more than the 100 accepted)"
    )
    nan = toolset.call("list_files", '{"limit": NaN}')
    assert nan.text == (
        "the arguments of list_files are not a JSON object "
        "(NaN is not JSON (RFC 8259 has no NaN or Infinity))"
    )


def test_appended_text_must_fit_the_name_too(run: Run) -> None:
    write_file(run, "log.md", "# Log\n")
    write_file(run, "rows.jsonl", '{"a": 1}\n')
    with pytest.raises(InvalidInput, match="lone surrogate U\\+D800"):
        write_file(run, "log.md", "x\ud800", mode="append")
    with pytest.raises(InvalidInput, match="is not UTF-8 text"):
        write_file(run, "log.md", b"\xff", mode="append")
    with pytest.raises(InvalidInput, match="line 1 is not JSON"):
        write_file(run, "rows.jsonl", "not json\n", mode="append")
    write_file(run, "rows.jsonl", '{"a": 2}\n', mode="append")
    [rows] = [item for item in run.list_files() if item.file_name == "rows.jsonl"]
    assert run.read_file(rows.id) == b'{"a": 1}\n{"a": 2}\n'


# -- charts -----------------------------------------------------------------------------------


def test_a_plain_label_to_value_mapping_is_a_bar_chart(toolset: DocbinderToolset, run: Run) -> None:
    assert to_docbinder_spec({"North": 61, "South": "2"}) == (
        "table",
        {
            "kind": "bar",
            "series": [{"name": "values", "labels": ["North", "South"], "values": [61, "2"]}],
        },
    )
    outcome = toolset.call("create_chart", {"spec": {"North": 61, "South": 2}})
    assert not outcome.is_error, outcome.text
    assert run.get_file(outcome.file_ids[0]).mime_type == "image/png"
    [produced] = create_chart(run, {"North": 61, "South": 2}, name="regions").files
    assert produced.item.file_name == "regions.png"
    with pytest.raises(InvalidInput, match="no chart spec shape known"):
        create_chart(run, {"North": 61, "South": "many"})


def test_a_flat_chart_call_with_one_unknown_key_names_only_that_key(
    toolset: DocbinderToolset,
) -> None:
    outcome = toolset.call(
        "create_chart",
        {
            "kind": "bar",
            "title": "Revenue",
            "series": [{"name": "2026", "labels": ["N"], "values": [61]}],
            "colour": "red",
        },
    )
    assert outcome.text == (
        "unknown argument(s) 'colour' for create_chart ('kind', 'title', 'series' would be "
        "read as the chart spec); expected: spec, name"
    )


def test_a_chart_spec_as_deep_json_text_is_refused_with_the_reason() -> None:
    with pytest.raises(InvalidInput, match="nested 5000 deep, more than the 100 accepted"):
        to_docbinder_spec("[" * 5000 + "]" * 5000)


# -- helpers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "depth"),
    [("1", 0), ("[1]", 1), ('{"a": [{"b": []}]}', 4), ('["[[[", {"q\\"[": [1]}]', 3)],
)
def test_json_text_depth_ignores_brackets_in_strings(text: str, depth: int) -> None:
    assert json_text_depth(text) == depth


def test_load_json_is_strict() -> None:
    assert load_json('{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}
    for text in ("NaN", "[Infinity]", "-Infinity", "1" * 4301, "[" * 101 + "]" * 101, "{"):
        with pytest.raises(ValueError):
            load_json(text)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("a.md", True),
        ("a.JSON", True),
        ("a.py", True),
        ("a.vcf", True),
        ("a.png", False),
        ("a.dat", False),
        ("a", False),
        (".gitignore", False),
    ],
)
def test_text_names(name: str, text: bool) -> None:
    assert is_text_name(name) is text


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("x.png.", "x.png"),
        ("x.png \u200b", "x.png"),
        ("\u202ereport.md", "report.md"),
        ("a..", "a"),
        (".env", ".env"),
        (".gitignore", ".gitignore"),
    ],
)
def test_file_names_lose_invisible_characters_and_trailing_dots(value: str, expected: str) -> None:
    assert coerce_file_name(value, example="a.md") == expected


@pytest.mark.parametrize("value", [".json", ".PNG", "dir/.md", "...", "a\udc00.md"])
def test_file_names_without_a_stem_or_with_a_surrogate_are_refused(value: str) -> None:
    with pytest.raises(InvalidInput, match="accepted: "):
        coerce_file_name(value, example="a.md")
