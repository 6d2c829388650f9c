"""Tolerant tool arguments (issue: what the documentList parser does for references, every tool
does for its arguments): the examples a model sends, end to end through the tools, and the
coercion helpers one by one.
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest

from docbinder.application import DocBinder, Run
from docbinder.domain.errors import InvalidInput
from docbinder.domain.model import ContentKind
from docbinder.tools import create_chart, generate_image, render_document, write_file
from docbinder.tools.arguments import (
    ACCEPTED_SHAPES,
    ArgumentShapes,
    Shape,
    coerce_base64,
    coerce_bool,
    coerce_choices,
    coerce_file_content,
    coerce_file_name,
    coerce_int,
    coerce_number,
    coerce_string_list,
    strip_fence,
)
from docbinder.tools.images import GeneratedImage
from tests.unit.conftest import make_memory_binder
from tests.unit.test_tools_fixtures import ALICE, png_bytes

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def binder() -> DocBinder:
    return make_memory_binder()


@pytest.fixture
def run(binder: DocBinder) -> Run:
    return binder.start_new_run(ALICE)


def stored(run: Run, file_id: str) -> bytes:
    return run.read_file(file_id)


def jpeg_bytes() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), (0, 90, 0)).save(buffer, format="JPEG")
    return buffer.getvalue()


# -- the examples of the issue, end to end ---------------------------------------------------


def test_a_chartjs_spec_makes_a_chart(run: Run) -> None:
    spec = {
        "type": "bar",
        "data": {"labels": ["N", "S"], "datasets": [{"label": "2026", "data": [61, 48]}]},
    }
    result = create_chart(run, spec)
    [produced] = result.files
    assert produced.item.file_name == "chart.png"
    assert produced.item.mime_type == "image/png"
    content = run.get_content(f"docItem:{produced.document_id}")
    [part] = content.parts
    assert part.kind == ContentKind.IMAGE
    assert part.data is not None and part.data.startswith(PNG_SIGNATURE)


def test_a_dict_for_a_json_name_is_stored_as_json(run: Run) -> None:
    [produced] = write_file(run, "data.json", {"a": 1}).files
    assert stored(run, produced.item.id) == b'{\n  "a": 1\n}\n'
    assert produced.item.mime_type == "application/json"
    assert json.loads(stored(run, produced.item.id)) == {"a": 1}


def test_rows_for_a_csv_name_are_stored_as_csv(run: Run) -> None:
    [produced] = write_file(run, "rows.csv", [["a", "b"], [1, 2]]).files
    assert stored(run, produced.item.id) == b"a,b\r\n1,2\r\n"
    assert produced.item.mime_type == "text/csv"


def test_a_png_data_uri_is_decoded_not_stored_as_text(run: Run) -> None:
    [produced] = write_file(run, "x.png", "data:image/png;base64,iVBORw0KGgo=").files
    assert stored(run, produced.item.id) == PNG_SIGNATURE
    assert produced.item.size == 8
    assert produced.item.mime_type == "image/png"


def test_a_real_png_as_a_data_uri_is_readable_as_an_image(run: Run) -> None:
    png = png_bytes()
    uri = "data:image/png;base64," + base64.b64encode(png).decode()
    [produced] = write_file(run, "photo.png", f"  {uri}\n").files
    assert stored(run, produced.item.id) == png
    [part] = run.get_content(f"docItem:{produced.document_id}").parts
    assert (part.kind, part.data) == (ContentKind.IMAGE, png)


def test_a_png_name_with_jpeg_bytes_is_refused_with_the_reason(run: Run) -> None:
    jpeg = jpeg_bytes()
    uri = "data:image/png;base64," + base64.b64encode(jpeg).decode()
    with pytest.raises(InvalidInput) as caught:
        write_file(run, "x.png", uri)
    assert str(caught.value) == (
        f"the content for 'x.png' is not a PNG image: its {len(jpeg)} bytes (decoded from the "
        "data: URI) are a JPEG image; "
        "accepted: the bytes of a PNG image, raw, base64 or as a data: URI; "
        "example: data:image/png;base64,<base64 of the file>"
    )
    assert run.list_files() == []


def test_plain_text_for_a_png_name_is_refused_not_stored(run: Run) -> None:
    with pytest.raises(InvalidInput) as caught:
        write_file(run, "x.png", "A red square on white.")
    assert str(caught.value) == (
        "the content for 'x.png': got plain text ('A red square on white.' (str)), but a .png "
        "file is a PNG image and text is not stored under that name; accepted: bytes, a data: "
        "URI or a base64 string of the file; example: data:image/png;base64,<base64 of the file>"
    )
    assert run.list_files() == []


def test_formats_as_a_comma_separated_string(run: Run) -> None:
    result = render_document(run, "# A", name="c", formats="pdf, html")
    assert [f.item.file_name for f in result.files] == ["c.pdf", "c.html"]
    assert [f.item.mime_type for f in result.files] == ["application/pdf", "text/html"]


# -- write_file: more content shapes --------------------------------------------------------


def test_plain_base64_for_a_binary_name_is_decoded(run: Run) -> None:
    png = png_bytes()
    [produced] = write_file(run, "p.png", base64.b64encode(png).decode()).files
    assert stored(run, produced.item.id) == png


def test_wrapped_base64_is_decoded_but_words_on_one_line_are_text(run: Run) -> None:
    png = png_bytes()
    text = base64.b64encode(png).decode()
    wrapped = "\n".join(text[i : i + 8] for i in range(0, len(text), 8))
    [produced] = write_file(run, "w.png", wrapped).files
    assert stored(run, produced.item.id) == png
    # "just text" is valid base64 once its space is dropped; it is prose all the same.
    with pytest.raises(InvalidInput, match=r"got plain text \('just text'"):
        write_file(run, "x.png", "just text")
    assert run.list_files() == [produced.item]


def test_a_name_without_extension_takes_the_type_of_the_content(run: Run) -> None:
    png = png_bytes()
    uri = "data:image/png;base64," + base64.b64encode(png).decode()
    [image] = write_file(run, "diagram", uri).files
    [data] = write_file(run, "totals", {"north": 61}).files
    assert (image.item.file_name, image.item.mime_type) == ("diagram.png", "image/png")
    assert (data.item.file_name, stored(run, data.item.id)) == (
        "totals.json",
        b'{\n  "north": 61\n}\n',
    )


def test_a_directory_part_and_a_repeated_extension_are_dropped(run: Run) -> None:
    [produced] = write_file(run, "reports/2026/summary.md.md", "# S\n").files
    assert produced.item.file_name == "summary.md"
    assert run.workflow is not None
    assert run.workflow.messages[0].documents_label == "writeFile:summary.md"


def test_json_text_in_a_code_fence_is_unwrapped_and_checked(run: Run) -> None:
    [produced] = write_file(run, "a.json", '```json\n{"a": [1, 2]}\n```').files
    assert stored(run, produced.item.id) == b'{"a": [1, 2]}\n'
    with pytest.raises(InvalidInput, match=r"the content for 'b.json': got text that is not JSON"):
        write_file(run, "b.json", "{'a': 1}")


def test_unfenced_json_and_csv_text_is_kept_as_given(run: Run) -> None:
    [data] = write_file(run, "a.json", ' {"a": 1}').files
    [rows] = write_file(run, "b.csv", "x,y\n1,2\n\n").files
    assert stored(run, data.item.id) == b' {"a": 1}'
    assert stored(run, rows.item.id) == b"x,y\n1,2\n\n"


def test_a_chart_name_that_is_no_text_is_refused(run: Run) -> None:
    with pytest.raises(
        InvalidInput, match=r"^the chart name: got 5 \(int\); accepted: a file name"
    ):
        create_chart(run, {"labels": ["a"], "values": [1]}, name=5)  # type: ignore[arg-type]


def test_a_markdown_file_keeps_its_fence(run: Run) -> None:
    text = "```python\nprint(1)\n```\n"
    [produced] = write_file(run, "snippet.md", text).files
    assert stored(run, produced.item.id) == text.encode()


def test_a_code_file_loses_a_fence_around_all_of_it(run: Run) -> None:
    [produced] = write_file(run, "hello.py", "```python\nprint('hi')\n```").files
    assert stored(run, produced.item.id) == b"print('hi')\n"


def test_a_dict_for_a_text_name_is_refused_with_an_example(run: Run) -> None:
    with pytest.raises(InvalidInput) as caught:
        write_file(run, "notes.md", {"a": 1})
    assert str(caught.value) == (
        "the content for 'notes.md': got {'a': 1} (dict); accepted: text or bytes; objects "
        "and lists only for .json, .jsonl, .csv or .tsv names; example: name the file "
        '"notes.json" to store this as JSON'
    )


def test_mode_is_read_loosely_and_rows_append_to_a_csv(run: Run) -> None:
    item = write_file(run, "t.csv", [{"region": "North", "revenue": 61}]).files[0].item
    assert stored(run, item.id) == b"region,revenue\r\nNorth,61\r\n"
    write_file(run, "t.csv", [["South", 48]], mode=" Append ", file_id=f" {item.id}\n")
    assert stored(run, item.id) == b"region,revenue\r\nNorth,61\r\nSouth,48\r\n"


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("a.tsv", [["x", "y"], ["1", None]], b"x\ty\r\n1\t\r\n"),
        ("a.csv", [["q", 'say "hi", ok']], b'q,"say ""hi"", ok"\r\n'),
        ("a.csv", [{"a": 1}, {"b": True}], b"a,b\r\n1,\r\n,true\r\n"),
        ("a.jsonl", [{"a": 1}, [2]], b'{"a": 1}\n[2]\n'),
        ("a.json", [1, "é"], b'[\n  1,\n  "\xc3\xa9"\n]\n'),
        ("a.json", 3, b"3\n"),
        ("a.txt", b"raw", b"raw"),
        ("a.txt", "data:text/plain;base64,aGk=", b"hi"),
        ("a.bin", "AAEC", b"\x00\x01\x02"),
        ("a.pdf", "JVBERi0xLjQK", b"%PDF-1.4\n"),
    ],
)
def test_content_shapes_per_type(name: str, content: object, expected: bytes) -> None:
    assert coerce_file_content(name, content).data == expected


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        (
            "x.pdf",
            b"hello",
            "the content for 'x.pdf' is not a PDF document: its 5 bytes start with 68 65 6C 6C 6F",
        ),
        (
            "x.docx",
            "data:application/pdf;base64,JVBERi0=",
            "is not a Word document (ZIP): its 5 bytes (decoded from the data: URI) are a PDF document",
        ),
        (
            "x.png",
            "SGVsbG8=",
            "the content for 'x.png' is not a PNG image: its 5 bytes (the text 'SGVsbG8=' read "
            "as base64) start with 48 65 6C 6C 6F",
        ),
        ("x.csv", [1, 2], "the content for 'x.csv': got [1, 2] (list); accepted: a list of rows"),
        (
            "x.csv",
            {"a": 1},
            "the content for 'x.csv': got {'a': 1} (dict); accepted: a list of rows",
        ),
        (
            "x.json",
            {"a": float("nan")},
            "the content for 'x.json': got {'a': nan} (dict); accepted: JSON values",
        ),
        (
            "x.png",
            "data:image/png;base64,%%%",
            "got a data: URI whose base64 part is not valid base64",
        ),
        ("x", "data:image/jpeg;base64,/9j/4AAQ", None),
        ("x.txt", 1.5, "the content for 'x.txt': got 1.5 (float); accepted: text, bytes"),
    ],
)
def test_content_that_cannot_be_used_is_refused(
    name: str, content: object, message: str | None
) -> None:
    if message is None:  # a jpeg data URI for a name without extension is accepted as .jpg
        assert coerce_file_content(name, content).name == "x.jpg"
        return
    with pytest.raises(InvalidInput) as caught:
        coerce_file_content(name, content)
    assert message in str(caught.value)
    assert "; example: " in str(caught.value)


def test_a_data_uri_of_another_type_than_the_extension_says_is_refused() -> None:
    with pytest.raises(InvalidInput) as caught:
        coerce_file_content("notes.txt", "data:image/png;base64,iVBORw0KGgo=")
    assert str(caught.value) == (
        "the content for 'notes.txt': got a data: URI of type image/png, which does not fit "
        "the name's extension .txt; accepted: a name with the file's own extension; "
        "example: notes.png"
    )


def test_text_that_only_starts_with_data_is_kept_as_text() -> None:
    assert coerce_file_content("a.yaml", "data:\n  x: 1\n").data == b"data:\n  x: 1\n"


# -- other tools ----------------------------------------------------------------------------


class FixedImages:
    """An ImageGenerator that returns fixed PNGs and records its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, str]] = []

    def generate(self, prompt: str, *, n: int = 1, size: str = "512x512") -> list[GeneratedImage]:
        self.calls.append((prompt, n, size))
        return [GeneratedImage(png_bytes()) for _ in range(n)]


def test_generate_image_reads_numbers_sizes_and_names_loosely(run: Run) -> None:
    generator = FixedImages()
    result = generate_image(
        run, "  a red fox \n", generator=generator, n="2", size="256 X 256", name="art/fox.png"
    )
    assert generator.calls == [("a red fox", 2, "256x256")]
    assert [f.item.file_name for f in result.files] == ["fox-1.png", "fox-2.png"]


def test_create_chart_name_loses_directory_and_extension(run: Run) -> None:
    spec = {"labels": ["a", "b"], "values": ["1", "2"]}
    [produced] = create_chart(run, spec, name="charts/sales.png").files
    assert produced.item.file_name == "sales.png"


def test_render_document_unwraps_a_markdown_fence_and_a_name_path(run: Run) -> None:
    result = render_document(run, "```markdown\n# Plan\n\nStep one.\n```", name="out/plan.md")
    [html] = result.files
    assert html.item.file_name == "plan.html"
    text = stored(run, html.item.id).decode()
    assert "<h1>Plan</h1>" in text and "```" not in text


# -- the helpers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("pdf, html", ("pdf", "html")),
        ("PDF HTML", ("pdf", "html")),
        ("pdf and html", ("pdf", "html")),
        ("pdf;html;pdf", ("pdf", "html")),
        (".pdf/.html", ("pdf", "html")),
        ('["html", "pdf"]', ("html", "pdf")),
        ("```\npdf\n```", ("pdf",)),
        (["HTML"], ("html",)),
        ("'pdf'", ("pdf",)),
    ],
)
def test_choice_lists(value: object, expected: tuple[str, ...]) -> None:
    assert coerce_choices(value, "the formats", ("html", "pdf"), example='"pdf"') == expected


@pytest.mark.parametrize("value", ["", " , ", 3, None, ["pdf", 2], "pdf, docx"])
def test_choice_lists_that_cannot_be_used(value: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        coerce_choices(value, "the formats", ("html", "pdf"), example='"pdf"')
    message = str(caught.value)
    assert message.startswith(f"the formats: got {value!r}")
    assert message.endswith(
        '; accepted: html, pdf, as a list or a comma/space-separated string; example: "pdf"'
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("report.md", "report.md"),
        ("  report.md\n", "report.md"),
        ("/tmp/out/report.md", "report.md"),
        ("C:\\Users\\me\\report.md", "report.md"),
        ("data.json.json", "data.json"),
        ("data.JSON.json", "data.json"),
        ("archive.tar.gz", "archive.tar.gz"),
        ('"quoted.txt"', "quoted.txt"),
        ("`x.csv`", "x.csv"),
        (".env", ".env"),
        ("no extension", "no extension"),
    ],
)
def test_file_names(value: str, expected: str) -> None:
    assert coerce_file_name(value, example="a.txt") == expected


@pytest.mark.parametrize("value", ["", "dir/", "..", 7])
def test_file_names_that_cannot_be_used(value: object) -> None:
    with pytest.raises(InvalidInput, match=r"the file name: got .*; accepted: .*; example: a.txt"):
        coerce_file_name(value, example="a.txt")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (False, False),
        ("true", True),
        (" False ", False),
        ("YES", True),
        ("no", False),
        ("on", True),
        ("off", False),
        ("1", True),
        ("0", False),
        (1, True),
        (0, False),
        ('"true"', True),
    ],
)
def test_booleans(value: object, expected: bool) -> None:
    assert coerce_bool(value, "the flag") is expected


@pytest.mark.parametrize("value", ["maybe", 2, None, "", 0.5])
def test_booleans_that_cannot_be_used(value: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        coerce_bool(value, "the flag")
    assert str(caught.value) == (
        f"the flag: got {value!r} ({type(value).__name__}); accepted: true or false (also the "
        "strings 'true', 'false', 'yes', 'no'); example: true"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, 3.0),
        (2.5, 2.5),
        ("61", 61.0),
        (" 48.5 ", 48.5),
        ("-3", -3.0),
        ("1e3", 1000.0),
        ("1,234.5", 1234.5),
        ("1_000", 1000.0),
        (".5", 0.5),
    ],
)
def test_numbers(value: object, expected: float) -> None:
    assert coerce_number(value, "the value") == expected


@pytest.mark.parametrize("value", [True, None, "nan", "inf", "12 apples", "1,2", float("inf")])
def test_numbers_that_cannot_be_used(value: object) -> None:
    with pytest.raises(InvalidInput, match=r"^the value: got .*; accepted: a finite number"):
        coerce_number(value, "the value")


@pytest.mark.parametrize(("value", "expected"), [(2, 2), ("2", 2), (2.0, 2), (" 10 ", 10)])
def test_integers(value: object, expected: int) -> None:
    assert coerce_int(value, "n", minimum=1, maximum=10) == expected


@pytest.mark.parametrize("value", [2.5, True, "two", 0, "11", None])
def test_integers_that_cannot_be_used(value: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        coerce_int(value, "n", minimum=1, maximum=10)
    assert str(caught.value) == (
        f"n: got {value!r} ({type(value).__name__}); accepted: a whole number from 1 to 10, "
        "or a string holding one; example: 1"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("  x  ", "x"),
        ("```json\n{}\n```", "{}"),
        ("~~~\nplain\n~~~\n", "plain"),
        ("````md\n```inner```\n````", "```inner```"),
        ("text ```x```", "text ```x```"),
    ],
)
def test_fences_and_whitespace_around_whole_arguments(value: str, expected: str) -> None:
    assert strip_fence(value) == expected


def test_accepted_shapes_cover_every_coerced_argument() -> None:
    keys: dict[str, Any] = dict(ACCEPTED_SHAPES)
    for key in (
        "create_chart.spec",
        "create_chart.name",
        "write_file.name",
        "write_file.content",
        "write_file.mode",
        "render_document.formats",
        "render_document.name",
        "generate_image.n",
        "generate_image.size",
    ):
        assert keys.pop(key).strip()
    assert all(k.count(".") == 1 for k in keys)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("a1", ("a1",)),
        (" a1, b2 ;c3  d4 ", ("a1", "b2", "c3", "d4")),
        ('["a1", "b2"]', ("a1", "b2")),
        ("[a1, b2]", ("a1", "b2")),
        (["a1", " 'b2' ", "a1"], ("a1", "b2")),
        ("```\na1\n```", ("a1",)),
    ],
)
def test_lists_of_identifiers(value: Any, expected: tuple[str, ...]) -> None:
    assert coerce_string_list(value, "the file ids", example='["<id>"]') == expected


@pytest.mark.parametrize("value", [None, 3, ["a", 1], " , ", []])
def test_lists_of_identifiers_refused(value: Any) -> None:
    with pytest.raises(InvalidInput, match=r"^the file ids: got .*; accepted: a list of strings"):
        coerce_string_list(value, "the file ids", example='["<id>"]')


def test_base64_in_any_common_form() -> None:
    data = bytes(range(250, 256)) + b"hello"
    standard = base64.b64encode(data).decode()
    assert coerce_base64(standard, "x") == data
    assert coerce_base64(base64.urlsafe_b64encode(data).decode().rstrip("="), "x") == data
    assert coerce_base64(f"```\n{standard[:8]}\n{standard[8:]}\n```", "x") == data
    with pytest.raises(InvalidInput, match=r"^x: got 'not base64!' \(str\); accepted: base64"):
        coerce_base64("not base64!", "x")


def test_argument_descriptions_list_each_shape_with_its_example() -> None:
    shapes = ArgumentShapes(
        (Shape("a list", ["pdf", "html"]), Shape('a "quoted" string', 'say "hi"')), "Default html."
    )
    assert shapes.brief == 'a list; a "quoted" string'
    assert shapes.described == (
        'A list, e.g. ["pdf", "html"]; a "quoted" string, e.g. \'say "hi"\'. Default html.'
    )
    assert shapes.examples == (["pdf", "html"], 'say "hi"')
