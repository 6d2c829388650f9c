"""The shared tool set's schemas and descriptions against the accepted shapes (issue 20, ADR 0023).

One source, :data:`docbinder.tools.arguments.ARGUMENT_SHAPES`, gives the
argument descriptions and the shape lists of the tool descriptions; every
example in it must pass the published JSON schema, its strict encoding (as is
or as JSON text) and the tool set itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from docbinder.application import Run
from docbinder.tools import LocalDirectorySource, OpenAICompatibleImageGenerator
from docbinder.tools.arguments import ACCEPTED_SHAPES, ARGUMENT_SHAPES
from docbinder.tools.consuming import DEFAULT_MAX_CHARS, DEFAULT_SEARCH_LIMIT
from docbinder.tools.images import MAX_IMAGES
from docbinder.tools.producing import DOCUMENT_FORMATS
from docbinder.toolset import DocbinderToolset, ToolOutcome
from docbinder.toolset.specs import strict_schema
from docbinder.toolset.toolset import DEFAULT_LIST_FILES
from tests.unit.conftest import make_memory_binder
from tests.unit.test_tools_fixtures import ALICE


@pytest.fixture
def run() -> Run:
    return make_memory_binder().start_new_run(ALICE)


@pytest.fixture
def toolset(run: Run) -> DocbinderToolset:
    return DocbinderToolset(run)


def full_toolset(run: Run, tmp_path: Path) -> DocbinderToolset:
    generator = OpenAICompatibleImageGenerator("http://127.0.0.1:9/v1", trust_env=False)
    return DocbinderToolset(
        run, data_sources={"inbox": LocalDirectorySource(tmp_path)}, image_generator=generator
    )


def ok(outcome: ToolOutcome) -> ToolOutcome:
    assert not outcome.is_error, outcome.text
    return outcome


def shaped_arguments(toolset: DocbinderToolset) -> list[tuple[str, str]]:
    """``(tool, argument)`` of every tool-set argument that has accepted shapes."""
    return [
        (spec.name, argument)
        for spec in toolset.specs
        for argument in spec.parameters["properties"]
        if f"{spec.name}.{argument}" in ARGUMENT_SHAPES
    ]


def test_every_coerced_argument_of_the_tool_set_has_shapes(run: Run, tmp_path: Path) -> None:
    covered = {
        f"{tool}.{argument}" for tool, argument in shaped_arguments(full_toolset(run, tmp_path))
    }
    assert covered >= {
        "write_file.name",
        "write_file.content",
        "write_file.encoding",
        "render_document.formats",
        "render_document.name",
        "create_chart.spec",
        "create_chart.name",
        "generate_image.n",
        "generate_image.size",
        "read_file.max_chars",
        "search_in_file_content.file_ids",
        "search_in_file_content.limit",
        "list_files.limit",
    }


def test_argument_and_tool_descriptions_come_from_the_shapes(run: Run, tmp_path: Path) -> None:
    toolset = full_toolset(run, tmp_path)
    for tool, argument in shaped_arguments(toolset):
        spec = toolset.spec(tool)
        key = f"{tool}.{argument}"
        assert spec.parameters["properties"][argument]["description"] == ACCEPTED_SHAPES[key]
        strict = strict_schema(spec)["properties"][argument]
        assert strict["description"].startswith(ACCEPTED_SHAPES[key])
    for tool, arguments in {
        "write_file": ("content", "name"),
        "create_chart": ("spec",),
        "render_document": ("formats", "name"),
        "generate_image": ("n", "size"),
    }.items():
        description = toolset.spec(tool).description
        for argument in arguments:
            shapes = ARGUMENT_SHAPES[f"{tool}.{argument}"]
            assert f"Accepted `{argument}`: {shapes.brief}." in description
    chart = toolset.spec("create_chart").description
    assert '{"type": "bar", "data": {"labels": ["N", "S"], "datasets": [' in chart
    for dialect in ("Chart.js", "docbinder's own spec", "Vega-Lite", "Plotly", "a table", "rows"):
        assert dialect in chart
    assert '"pdf, html"' in ACCEPTED_SHAPES["render_document.formats"]
    assert "data:image/png;base64," in ACCEPTED_SHAPES["write_file.content"]


def test_the_shapes_state_the_tools_own_limits_and_defaults() -> None:
    assert f"Formats: {', '.join(DOCUMENT_FORMATS)};" in ACCEPTED_SHAPES["render_document.formats"]
    assert f"from 1 to {MAX_IMAGES}" in ACCEPTED_SHAPES["generate_image.n"]
    assert f"Default {DEFAULT_MAX_CHARS}." in ACCEPTED_SHAPES["read_file.max_chars"]
    assert f"Default {DEFAULT_SEARCH_LIMIT}." in ACCEPTED_SHAPES["search_in_file_content.limit"]
    assert f"Default {DEFAULT_LIST_FILES}." in ACCEPTED_SHAPES["list_files.limit"]


def test_every_example_passes_the_published_and_the_strict_schema(run: Run, tmp_path: Path) -> None:
    toolset = full_toolset(run, tmp_path)
    checked = 0
    for tool, argument in shaped_arguments(toolset):
        spec = toolset.spec(tool)
        published = Draft202012Validator(spec.parameters["properties"][argument])
        strict = Draft202012Validator(strict_schema(spec)["properties"][argument])
        for example in ARGUMENT_SHAPES[f"{tool}.{argument}"].examples:
            published.validate(example)
            if not strict.is_valid(example):  # strict mode: an object goes as JSON text
                strict.validate(json.dumps(example))
            checked += 1
    assert checked >= 30


def _content_name(example: object) -> str:
    """A file name whose type fits a ``write_file.content`` example."""
    if isinstance(example, str) and example.startswith("data:image/png"):
        return "example.png"
    if isinstance(example, dict):
        return "example.json"
    if isinstance(example, list):
        return "example.csv"
    return "example.md"


@pytest.mark.parametrize("example", ARGUMENT_SHAPES["write_file.content"].examples)
def test_every_content_example_is_stored(toolset: DocbinderToolset, run: Run, example: Any) -> None:
    name = _content_name(example)
    outcome = ok(toolset.call("write_file", {"name": name, "content": example}))
    [item] = run.list_files()
    assert item.file_name == name and item.size > 0
    assert f"file id: {item.id}" in outcome.text


@pytest.mark.parametrize("example", ARGUMENT_SHAPES["create_chart.spec"].examples)
def test_every_chart_example_is_drawn(toolset: DocbinderToolset, example: Any) -> None:
    outcome = ok(toolset.call("create_chart", {"spec": example, "name": None}))
    assert outcome.text.startswith("Created chart ")
    strict_form = example if isinstance(example, str) else json.dumps(example)
    ok(toolset.call("create_chart", {"spec": f"```json\n{strict_form}\n```", "name": "again"}))


@pytest.mark.parametrize(
    ("key", "call"),
    [
        ("write_file.name", lambda v: ("write_file", {"name": v, "content": "x"})),
        ("render_document.formats", lambda v: ("render_document", _doc(formats=v))),
        ("render_document.name", lambda v: ("render_document", _doc(name=v))),
        ("create_chart.name", lambda v: ("create_chart", {"spec": [["N", 1]], "name": v})),
        ("list_files.limit", lambda v: ("list_files", {"limit": v})),
    ],
)
def test_every_example_of_the_other_arguments_is_accepted(
    toolset: DocbinderToolset, key: str, call: Any
) -> None:
    examples = ARGUMENT_SHAPES[key].examples
    assert examples, key
    for example in examples:
        tool, arguments = call(example)
        outcome = ok(toolset.call(tool, arguments))
        assert outcome.text, (key, example)


def _doc(**changes: Any) -> dict[str, Any]:
    return {"markdown": "# A\n\nText.", "name": "doc", "formats": None, **changes}


def test_a_chart_spec_passed_as_the_arguments_themselves(
    toolset: DocbinderToolset, run: Run
) -> None:
    chartjs = {"type": "doughnut", "data": {"labels": ["a", "b"], "datasets": [{"data": [1, 2]}]}}
    outcome = ok(toolset.call("create_chart", {**chartjs, "name": "share"}))
    assert outcome.text.startswith("Created chart 'share.png' (")
    flat_own = {"kind": "line", "series": [{"name": None, "labels": ["a"], "values": ["3"]}]}
    ok(toolset.call("create_chart", {**flat_own, "title": "T", "x_label": None, "name": None}))
    unknown = toolset.call("create_chart", {"spec": chartjs, "colour": "red"})
    assert unknown.text == "unknown argument(s) 'colour' for create_chart; expected: spec, name"
    missing = toolset.call("create_chart", {"colour": "red"})
    assert missing.is_error and "unknown argument(s) 'colour'" in missing.text
    assert [i.file_name for i in run.list_files()] == ["T.png", "share.png"]


def test_loose_consuming_arguments(toolset: DocbinderToolset) -> None:
    first = ok(toolset.call("write_file", {"name": "a.txt", "content": "alpha\nbeta"}))
    second = ok(toolset.call("write_file", {"name": "b.txt", "content": "beta"}))
    ids = [first.file_ids[0], second.file_ids[0]]
    found = ok(
        toolset.call(
            "search_in_file_content",
            {"query": "beta", "file_ids": f" {ids[0]}, {ids[1]} ", "limit": "5"},
        )
    )
    assert found.file_ids == tuple(ids)
    read = ok(toolset.call("read_file", {"file_id": f"```\n{ids[0]}\n```", "max_chars": "5"}))
    assert read.text.startswith("alpha\n[truncated")
    listed = ok(toolset.call("list_files", {"limit": "1"}))
    assert listed.file_ids == (ids[1],)
    refused = toolset.call("list_files", {"limit": "many"})
    assert refused.is_error and "got 'many' (str); accepted: a whole number" in refused.text


def test_arguments_as_fenced_json_text(toolset: DocbinderToolset) -> None:
    arguments = '```json\n{"name": "data.json", "content": {"a": 1}}\n```'
    outcome = ok(toolset.call("write_file", arguments))
    assert outcome.text.startswith("Wrote 'data.json' (")
