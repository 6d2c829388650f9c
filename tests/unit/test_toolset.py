"""The framework-neutral tool set on in-memory adapters (SPEC C5, C7, C8, C10; ADR 0016).

Each tool is called by name with the arguments a model would send; the answer's
text, parts and ids are checked against what the binder stored.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator

from docbinder.application import DocBinder, Run
from docbinder.domain.model import ContentKind, Principal
from docbinder.tools import (
    LocalDirectorySource,
    OpenAICompatibleImageGenerator,
    persist_task_result,
)
from docbinder.tools.datasources import Download
from docbinder.toolset import DocbinderToolset, ToolOutcome, ToolSpec
from docbinder.toolset.specs import strict_schema
from tests.integration.shapes import strict_problems
from tests.unit.conftest import make_memory_binder
from tests.unit.test_tools_fixtures import (
    ALICE,
    LoopbackServer,
    image_api_answer,
    png_bytes,
    serve_loopback,
)

OUTSIDER = Principal("eve", "m2", None, roles=("admin",))

ALL_TOOLS = (
    "write_file",
    "download_from_data_source",
    "render_document",
    "create_chart",
    "generate_image",
    "read_documents",
    "list_documents",
    "read_file",
    "search_in_file_content",
    "get_file_info",
    "list_files",
)


@pytest.fixture
def binder() -> DocBinder:
    return make_memory_binder()


@pytest.fixture
def run(binder: DocBinder) -> Run:
    return binder.start_new_run(ALICE)


@pytest.fixture
def toolset(run: Run) -> DocbinderToolset:
    return DocbinderToolset(run)


@pytest.fixture
def http_server() -> Iterator[LoopbackServer]:
    yield from serve_loopback()


def refs(outcome: ToolOutcome) -> list[str]:
    return re.findall(r"docItem:[0-9a-f-]{36}", outcome.text)


def ok(outcome: ToolOutcome) -> ToolOutcome:
    assert not outcome.is_error, outcome.text
    return outcome


# -- specs ------------------------------------------------------------------------------------


def test_full_configuration_offers_every_tool_in_a_fixed_order(run: Run, tmp_path: Path) -> None:
    generator = OpenAICompatibleImageGenerator("http://127.0.0.1:9/v1", trust_env=False)
    toolset = DocbinderToolset(
        run, data_sources={"inbox": LocalDirectorySource(tmp_path)}, image_generator=generator
    )

    assert tuple(s.name for s in toolset.specs) == ALL_TOOLS
    producers = {s.name for s in toolset.specs if s.produces_files}
    assert producers == set(ALL_TOOLS[:5])
    assert {s.name for s in toolset.specs if s.read_only} == set(ALL_TOOLS[5:])
    assert toolset.spec("download_from_data_source").parameters["properties"]["service"][
        "enum"
    ] == ["inbox"]


def test_default_configuration_leaves_out_unconfigured_tools(toolset: DocbinderToolset) -> None:
    names = [s.name for s in toolset.specs]
    assert "download_from_data_source" not in names
    assert "generate_image" not in names
    assert names == [n for n in ALL_TOOLS if n in names]
    with pytest.raises(KeyError):
        toolset.spec("generate_image")


def test_tools_without_their_packages_say_which_extra_installs_them(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    import docbinder.toolset.toolset as module

    real = module._has_module
    monkeypatch.setattr(module, "_has_module", lambda name: name != "matplotlib" and real(name))
    toolset = DocbinderToolset(run)
    names = [s.name for s in toolset.specs]
    assert "render_document" not in names and "create_chart" not in names
    for tool in ("render_document", "create_chart"):
        outcome = toolset.call(tool, {"name": "x.pdf", "content": "x"})
        assert outcome.is_error
        assert outcome.text.startswith(f"tool '{tool}' is not installed here: it needs the tools")
        assert "pip install -e '.[tools]'" in outcome.text
    assert toolset.call("no_such_tool", {}).text.startswith("unknown tool 'no_such_tool';")
    assert set(module.unavailable_tools()) == {"render_document", "create_chart"}
    monkeypatch.setattr(module, "_has_module", real)
    assert module.unavailable_tools() == {}


NOT_STRICT = {"write_file", "create_chart", "read_documents"}
"""The tools with an argument that takes any JSON value (ADR 0023)."""


def test_schemas_are_strict_or_come_with_a_strict_encoding(run: Run, tmp_path: Path) -> None:
    generator = OpenAICompatibleImageGenerator("http://127.0.0.1:9/v1", trust_env=False)
    toolset = DocbinderToolset(
        run, data_sources={"inbox": LocalDirectorySource(tmp_path)}, image_generator=generator
    )
    for spec in toolset.specs:
        assert isinstance(spec, ToolSpec)
        assert spec.parameters["type"] == "object"
        assert spec.parameters["additionalProperties"] is False
        json.dumps(spec.parameters)  # plain JSON
        Draft202012Validator.check_schema(dict(spec.parameters))
        strict = strict_schema(spec)
        Draft202012Validator.check_schema(strict)
        assert strict_problems(strict) == [], spec.name
        assert list(strict["properties"]) == list(spec.parameters["properties"])
        if spec.name in NOT_STRICT:
            assert spec.strict is False
            assert strict_problems(spec.parameters) != []
            assert spec.strict_parameters is not None
        else:
            assert spec.strict is True and spec.strict_parameters is None
            assert strict_problems(spec.parameters) == []
            assert strict == {**spec.parameters, "required": list(spec.parameters["properties"])}
        if spec.produces_files:
            assert "docItem:" in spec.description and "documentList" in spec.description
    assert "type" not in toolset.spec("read_documents").parameters["properties"]["documentList"]


# -- producing --------------------------------------------------------------------------------


def test_write_file_text_answers_the_unified_text_and_attaches(
    toolset: DocbinderToolset, run: Run
) -> None:
    outcome = ok(toolset.call("write_file", {"name": "notes.md", "content": "# Notes\nhello"}))

    [file_id] = outcome.file_ids
    [document_id] = outcome.document_ids
    assert outcome.text == (
        f"Wrote 'notes.md' (13 bytes)\n  documentList ref: docItem:{document_id}\n"
        f"  file id: {file_id}"
    )
    assert run.workflow is not None
    [message] = run.workflow.messages
    assert message.documents_label == "writeFile:notes.md"
    assert [d.id for d in message.documents] == [document_id]
    assert run.read_file(file_id) == b"# Notes\nhello"


def test_write_file_base64_stores_the_decoded_bytes(toolset: DocbinderToolset, run: Run) -> None:
    png = png_bytes()
    outcome = ok(
        toolset.call(
            "write_file",
            {"name": "dot.png", "content": base64.b64encode(png).decode(), "encoding": "base64"},
        )
    )
    item = run.get_file(outcome.file_ids[0])
    assert (item.size, item.mime_type) == (len(png), "image/png")
    assert run.read_file(item.id) == png


def test_write_file_refuses_bad_base64_and_stores_nothing(
    toolset: DocbinderToolset, run: Run
) -> None:
    outcome = toolset.call(
        "write_file", {"name": "x.bin", "content": "not base64!!", "encoding": "base64"}
    )
    assert outcome.is_error
    assert outcome.text == (
        "the content (encoding 'base64'): got 'not base64!!' (str); "
        'accepted: base64 text (RFC 4648); example: "aGVsbG8="'
    )
    assert run.list_files() == []


def test_download_from_configured_directory_only(run: Run, tmp_path: Path) -> None:
    (tmp_path / "report.csv").write_bytes(b"region,revenue\nNorth,61\n")
    toolset = DocbinderToolset(run, data_sources={"inbox": LocalDirectorySource(tmp_path)})

    outcome = ok(
        toolset.call("download_from_data_source", {"service": "inbox", "path": "report.csv"})
    )
    assert outcome.text.startswith("Downloaded 'report.csv' (24 bytes)\n  documentList ref: ")
    assert run.workflow is not None
    assert run.workflow.messages[-1].documents_label == "datasource:inbox"

    unknown = toolset.call("download_from_data_source", {"service": "web", "path": "x"})
    assert unknown.is_error and unknown.text == "unknown data source 'web'; configured: 'inbox'"
    escape = toolset.call("download_from_data_source", {"service": "inbox", "path": "../x"})
    assert escape.is_error
    assert str(tmp_path) not in escape.text
    missing = toolset.call("download_from_data_source", {"service": "inbox", "path": "nope.csv"})
    assert missing.is_error and missing.text == "no file 'nope.csv' in data source <inbox>"
    # an absolute path inside the source: its location replaced, the quoting intact
    absolute = toolset.call(
        "download_from_data_source", {"service": "inbox", "path": str(tmp_path / "report.csv")}
    )
    assert absolute.is_error and absolute.text == (
        "the path '<inbox>/report.csv' must be relative to the data source"
    )
    assert len(run.list_files()) == 1


def test_render_document_pdf_then_read_back_page_text(toolset: DocbinderToolset) -> None:
    outcome = ok(
        toolset.call(
            "render_document",
            {
                "markdown": "# Quarterly\n\nRevenue grew in the North.",
                "name": "q3.md",
                "formats": ["pdf"],
                "title": None,
            },
        )
    )
    assert outcome.text.startswith("Rendered 'q3.pdf' (")
    [ref] = refs(outcome)

    read = ok(toolset.call("read_documents", {"documentList": f"Here: {ref}."}))
    assert "(application/pdf," in read.text
    assert "[page 1]" in read.text
    assert "Revenue grew in the North." in read.text
    assert [p.position for p in read.parts] == ["page 1"]


def test_create_chart_from_flat_arguments(toolset: DocbinderToolset, run: Run) -> None:
    outcome = ok(
        toolset.call(
            "create_chart",
            {
                "kind": "bar",
                "series": [{"name": None, "labels": ["North", "South"], "values": [61, 48]}],
                "title": "Revenue",
                "x_label": None,
                "y_label": "EUR m",
                "name": None,
            },
        )
    )
    assert outcome.text.startswith("Created chart 'Revenue.png' (")
    assert run.get_file(outcome.file_ids[0]).mime_type == "image/png"

    bad = toolset.call("create_chart", {"kind": "pie", "series": []})
    assert bad.is_error and bad.text.startswith("chart spec:")


def test_generate_image_through_the_configured_service(
    run: Run, http_server: LoopbackServer
) -> None:
    red = png_bytes((200, 0, 0))
    http_server.route(
        "/v1/images/generations",
        headers={"Content-Type": "application/json"},
        chunks=(image_api_answer([red]),),
    )
    generator = OpenAICompatibleImageGenerator(http_server.url("/v1"), trust_env=False)
    toolset = DocbinderToolset(run, image_generator=generator)

    outcome = ok(toolset.call("generate_image", {"prompt": "a red square", "n": "1"}))
    assert outcome.text.startswith(f"Generated 'image-1.png' ({len(red)} bytes)")
    assert json.loads(http_server.seen[0].body)["n"] == 1


# -- consuming --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape",
    [
        lambda ref: f'```json\n["{ref}"]\n```',
        lambda ref: {"documents": [{"id": ref.removeprefix("docItem:"), "name": "x"}]},
        lambda ref: ref.removeprefix("docItem:").upper(),
        lambda ref: [f"  `{ref.upper()}`,"],
    ],
    ids=["fenced-json", "object", "bare-uuid-upper", "list-with-noise"],
)
def test_read_documents_accepts_sloppy_shapes(toolset: DocbinderToolset, shape: Any) -> None:
    written = ok(toolset.call("write_file", {"name": "a.txt", "content": "alpha beta"}))
    [ref] = refs(written)

    read = ok(toolset.call("read_documents", {"documentList": shape(ref)}))

    assert read.text.splitlines()[0] == "Read 1 document(s); 0 unresolved."
    assert f"--- {ref} 'a.txt' (text/plain, 10 bytes, file id {written.file_ids[0]}) ---" in (
        read.text
    )
    assert "alpha beta" in read.text
    assert read.document_ids == written.document_ids
    assert [p.text for p in read.parts] == ["alpha beta"]


def test_read_documents_returns_images_as_parts_within_the_cap(run: Run) -> None:
    small, big = png_bytes(size=2), png_bytes(size=64)
    toolset = DocbinderToolset(run, max_image_bytes=len(small))
    written = [
        ok(
            toolset.call(
                "write_file",
                {"name": name, "content": base64.b64encode(data).decode(), "encoding": "base64"},
            )
        )
        for name, data in (("small.png", small), ("big.png", big))
    ]
    references = [refs(w)[0] for w in written]

    read = ok(toolset.call("read_documents", {"documentList": references}))

    [image] = read.images
    assert (image.kind, image.mime_type, image.data) == (ContentKind.IMAGE, "image/png", small)
    assert f"[image 'small.png' (image/png, {len(small)} bytes)]" in read.text
    assert (
        f"[image 'big.png' (image/png, {len(big)} bytes) is larger than the "
        f"{len(small)}-byte limit for images and is not included]"
    ) in read.text


def test_read_documents_explains_each_unresolved_reference(toolset: DocbinderToolset) -> None:
    [ref] = refs(ok(toolset.call("write_file", {"name": "a.txt", "content": "x"})))
    missing = "docItem:00000000-0000-4000-8000-000000000000"

    read = ok(toolset.call("read_documents", {"documentList": [ref, missing, 42]}))

    lines = read.text.splitlines()
    assert lines[0] == "Read 1 document(s); 2 unresolved."
    assert (
        f"Unresolved: {missing} (not_in_workflow): no document with this reference in the "
        "active workflow"
    ) in lines
    assert any(
        line.startswith("Unresolved: 42 (rejected_input): not a usable document reference")
        for line in lines
    )
    assert lines[-1] == f"Valid references: {ref} ('a.txt')"


def test_read_documents_of_another_workflow_is_not_found(binder: DocBinder) -> None:
    first = DocbinderToolset(binder.start_new_run(ALICE))
    second = DocbinderToolset(binder.start_new_run(ALICE))
    [ref] = refs(ok(first.call("write_file", {"name": "a.txt", "content": "x"})))

    read = ok(second.call("read_documents", {"documentList": [ref]}))
    assert read.parts == ()
    assert f"Unresolved: {ref} (not_in_workflow)" in read.text
    assert read.text.splitlines()[-1].startswith("Valid references: none")


def test_read_documents_with_nothing_usable(toolset: DocbinderToolset) -> None:
    read = ok(toolset.call("read_documents", {"documentList": []}))
    assert read.text.startswith("documentList held no document reference")
    missing = toolset.call("read_documents", {})
    assert missing.is_error and missing.text == "missing argument 'documentList' for read_documents"


def test_list_documents_names_the_workflow_newest_first(
    toolset: DocbinderToolset, run: Run
) -> None:
    empty = ok(toolset.call("list_documents", {}))
    assert run.workflow is not None
    assert empty.text == f"Active workflow: {run.workflow.id}\nIt has no documents yet."
    first = ok(toolset.call("write_file", {"name": "a.txt", "content": "a"}))
    second = ok(toolset.call("write_file", {"name": "b.txt", "content": "bb"}))

    listed = ok(toolset.call("list_documents", None))

    assert listed.text.splitlines() == [
        f"Active workflow: {run.workflow.id}",
        "2 document(s), newest first:",
        f"{refs(second)[0]}  'b.txt' (text/plain, 2 bytes)  file id: {second.file_ids[0]}",
        f"{refs(first)[0]}  'a.txt' (text/plain, 1 bytes)  file id: {first.file_ids[0]}",
    ]
    assert listed.document_ids == (*second.document_ids, *first.document_ids)


def test_without_workflow_files_are_stored_but_not_referenced(binder: DocBinder) -> None:
    toolset = DocbinderToolset(binder.start_run(ALICE))
    written = ok(toolset.call("write_file", {"name": "a.txt", "content": "a"}))
    assert "docItem:" not in written.text and written.document_ids == ()
    assert ok(toolset.call("list_documents", {})).text == (
        "No workflow is active in this run, so there are no documents to list; stored files "
        "stay reachable by file id (list_files). To list a workflow's documents, bind a "
        "workflow: `docbinder mcp --workflow ID`, in Python "
        "`DocBinder.start_run(principal, workflow_id)`."
    )
    read = ok(toolset.call("read_documents", {"documentList": [written.file_ids[0]]}))
    assert "(no_active_workflow)" in read.text


def test_file_tools_by_file_id(toolset: DocbinderToolset, run: Run) -> None:
    written = ok(
        toolset.call("write_file", {"name": "log.txt", "content": "start\nNeedle here\nend"})
    )
    [file_id] = written.file_ids

    assert ok(toolset.call("read_file", {"file_id": file_id})).text == ("start\nNeedle here\nend")
    cut = ok(toolset.call("read_file", {"file_id": file_id, "max_chars": 5}))
    assert cut.text == "start\n[truncated after 5 characters]"

    found = ok(toolset.call("search_in_file_content", {"query": "needle", "file_ids": file_id}))
    assert found.text.splitlines() == [
        "1 match(es) for 'needle':",
        f"'log.txt' (file id {file_id}) line 2: Needle here",
    ]
    none = ok(toolset.call("search_in_file_content", {"query": "absent"}))
    assert none.text == "No line contains 'absent'."

    item = run.get_file(file_id)
    info = ok(toolset.call("get_file_info", {"file_id": file_id})).text.splitlines()
    assert info[:4] == [
        f"file id: {file_id}",
        "name: log.txt",
        "MIME type: text/plain",
        f"size: {item.size} bytes",
    ]
    assert f"SHA-256: {item.sha256}" in info

    listed = ok(toolset.call("list_files", {"limit": 1}))
    assert listed.text.splitlines() == [
        "1 file(s), newest first:",
        f"file id: {file_id}  'log.txt' (text/plain, {item.size} bytes)",
    ]


def test_file_tools_refuse_references_without_a_workflow(binder: DocBinder) -> None:
    toolset = DocbinderToolset(binder.start_run(ALICE))
    [file_id] = ok(toolset.call("write_file", {"name": "a.txt", "content": "a"})).file_ids
    assert ok(toolset.call("read_file", {"file_id": file_id})).text == "a"
    assert ok(toolset.call("read_file", {"file_id": f"file:{file_id}"})).text == "a"
    for tool, reference in (("read_file", "docItem:abc"), ("get_file_info", "docList:q3")):
        refused = toolset.call(tool, {"file_id": reference})
        assert refused.is_error
        assert refused.text == (
            f"{reference} is a document reference, resolved in the active workflow, and this "
            "run has no workflow; pass the file id instead (the `file id:` line of a tool "
            "result, or list_files), or bind a workflow: `docbinder mcp --workflow ID`, in "
            "Python `DocBinder.start_run(principal, workflow_id)`"
        )


def test_read_file_of_a_long_doc_list_stays_near_max_chars(run: Run) -> None:
    files = [(f"f{i}.txt", f"text {i} ".encode() * 20) for i in range(300)]
    label = persist_task_result(run, files, label="many").list_reference
    assert label is not None
    toolset = DocbinderToolset(run)
    answer = ok(toolset.call("read_file", {"file_id": label, "max_chars": 10}))
    # Asked for 10 characters: one header, the text and one line for the other 299.
    assert len(answer.text) < 1_000, len(answer.text)
    last = answer.text.splitlines()[-1]
    assert last.startswith("[299 more file(s) not read: this answer already holds max_chars=10")
    assert last.count("docItem:") == 5 and last.endswith(", ...]")
    info = ok(toolset.call("get_file_info", {"file_id": label}))
    assert info.text.count("documentList ref:") == 20
    assert "[280 more file(s) not shown (at most 20 per answer)" in info.text
    assert len(info.text) < 10_000, len(info.text)


def test_file_tools_do_not_cross_mandates(binder: DocBinder, toolset: DocbinderToolset) -> None:
    [file_id] = ok(toolset.call("write_file", {"name": "a.txt", "content": "secret"})).file_ids
    outsider = DocbinderToolset(binder.start_new_run(OUTSIDER))

    denied = outsider.call("read_file", {"file_id": file_id})
    assert denied.is_error and denied.text == f"file {file_id} not found"
    assert ok(outsider.call("list_files", {})).text == "No stored files that you may read."


# -- errors and calling conventions -----------------------------------------------------------


def test_bad_calls_are_one_line_errors(toolset: DocbinderToolset) -> None:
    unknown = toolset.call("delete_everything", {})
    assert unknown.is_error and unknown.text.startswith("unknown tool 'delete_everything'")
    extra = toolset.call("read_file", {"file_id": "x", "path": "/etc/passwd"})
    assert extra.text == "unknown argument(s) 'path' for read_file; expected: file_id, max_chars"
    assert toolset.call("read_file", {}).text == "missing argument 'file_id' for read_file"
    assert toolset.call("read_file", {"file_id": "x", "max_chars": "many"}).is_error
    assert toolset.call("list_files", "not json").text == (
        "the arguments of list_files are not a JSON object "
        "(Expecting value: line 1 column 1 (char 0))"
    )
    for outcome in (unknown, extra):
        assert "\n" not in outcome.text and "Traceback" not in outcome.text


def test_arguments_as_json_text(toolset: DocbinderToolset) -> None:
    outcome = ok(toolset.call("write_file", json.dumps({"name": "j.txt", "content": "{}"})))
    assert outcome.text.startswith("Wrote 'j.txt' (2 bytes)")


class _BrokenSource:
    def fetch(self, ref: str) -> Download:
        raise RuntimeError(f"driver exploded at /srv/secret/{ref}")


def test_a_defect_is_logged_and_answered_without_details(
    run: Run, caplog: pytest.LogCaptureFixture
) -> None:
    toolset = DocbinderToolset(run, data_sources={"broken": _BrokenSource()})
    outcome = toolset.call("download_from_data_source", {"service": "broken", "path": "x"})
    assert outcome.is_error
    assert outcome.text == (
        "internal error in tool download_from_data_source; the details were logged"
    )
    assert "driver exploded" in caplog.text


def test_acall_runs_in_a_worker_thread(toolset: DocbinderToolset) -> None:
    async def main() -> tuple[ToolOutcome, ToolOutcome]:
        written = await toolset.acall("write_file", {"name": "async.txt", "content": "hi"})
        read = await toolset.acall("read_documents", {"documentList": refs(written)})
        return written, read

    written, read = anyio.run(main)
    assert ok(written).text.startswith("Wrote 'async.txt'")
    assert [p.text for p in ok(read).parts] == ["hi"]


def test_valid_references_say_when_they_are_only_the_most_recent(run: Run) -> None:
    toolset = DocbinderToolset(run)
    for i in range(12):
        ok(toolset.call("write_file", {"name": f"v{i}.txt", "content": f"text {i}"}))
    refused = toolset.call("read_file", {"file_id": "docItem:00000000-0000-4000-8000-000000000000"})
    assert refused.is_error
    note = "Valid references (the most recent only; list_documents lists them all): docItem:"
    assert note in refused.text
    partly = ok(toolset.call("read_file", {"file_id": "docList:writeFile:v0.txt, docItem:nope"}))
    last = partly.text.splitlines()[-1]
    assert last.startswith(note) and last.count("docItem:") == 10
    few = DocbinderToolset(run.binder.start_new_run(run.principal))
    few.call("write_file", {"name": "only.txt", "content": "x"})
    alone = ok(few.call("read_file", {"file_id": "docList:writeFile:only.txt, docItem:nope"}))
    assert alone.text.splitlines()[-1].startswith("Valid references: docItem:")


def test_tool_errors_escape_control_characters(toolset: DocbinderToolset) -> None:
    refused = toolset.call("read_file", {"file_id": "\x1b[2Jgone"})
    assert refused.is_error
    # No raw escape reaches the model; the id is quoted escaped (ASCII, as shown_id does).
    assert "\x1b" not in refused.text and "\\x1b[2Jgone" in refused.text


def test_a_missing_blob_is_told_without_its_key_or_store(
    binder: DocBinder, toolset: DocbinderToolset
) -> None:
    written = ok(toolset.call("write_file", {"name": "gone.txt", "content": "soon gone"}))
    [file_id] = written.file_ids
    item = binder.get_file(ALICE, file_id)
    binder.blobs.delete(item.blob_key)
    for arguments in ({"file_id": file_id}, {"file_id": "docList:writeFile:gone.txt"}):
        answer = toolset.call("read_file", arguments)
        assert "missing from the blob store" in answer.text
        assert item.blob_key not in answer.text and "memory" not in answer.text.lower()


def test_search_names_a_file_whose_bytes_are_missing_instead_of_answering_no_match(
    run: Run,
) -> None:
    gone = run.produce_file("gone.txt", b"the word gone is here").item
    kept = run.produce_file("kept.txt", b"nothing to see").item
    run.binder.blobs.delete(gone.blob_key)
    outcome = DocbinderToolset(run).call(
        "search_in_file_content", {"query": "gone", "file_ids": [gone.id, kept.id]}
    )
    assert not outcome.is_error, outcome.text
    assert outcome.structured is not None
    assert outcome.structured["matches"] == []
    [missing] = outcome.structured["unsearched"]
    assert missing["fileId"] == gone.id
    assert missing["reason"] == "not searched: the stored bytes of this file are missing"
    assert "gone.txt" in outcome.text and gone.blob_key not in outcome.text
