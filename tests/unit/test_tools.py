"""Agent tools end to end on in-memory adapters (SPEC C5, C8, C9, C10).

Each producing tool: tool call -> exact tool-result text -> the reference sent
back in a sloppy shape -> ``run.get_content`` -> the expected content parts.
Consuming tools: results, access checks, and no new ChatMessage.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from docbinder.application import DocBinder, Run
from docbinder.domain.errors import (
    AccessDenied,
    Conflict,
    FileItemNotFound,
    InvalidInput,
    SizeLimitExceeded,
)
from docbinder.domain.model import ContentKind, FileItem, Principal
from docbinder.tools import (
    HttpSource,
    LocalDirectorySource,
    OpenAICompatibleImageGenerator,
    ToolResult,
    bridge,
    bridged_tool,
    create_chart,
    download_from_data_source,
    generate_image,
    get_file_info,
    list_files,
    persist_task_result,
    read_file,
    render_document,
    replace_in_file,
    search_in_file_content,
    write_file,
)
from tests.unit.conftest import make_memory_binder
from tests.unit.test_tools_fixtures import (
    ALICE,
    LOOPBACK,
    LoopbackServer,
    image_api_answer,
    png_bytes,
    serve_loopback,
)


@pytest.fixture
def http_server() -> Iterator[LoopbackServer]:
    """A loopback HTTP server on 127.0.0.1 for one test."""
    yield from serve_loopback()


BOB = Principal("bob", "m1", "f1", roles=("member",))
"""Another member of the same feature instance: may read alice's files, not change them."""

OUTSIDER = Principal("eve", "m2", None, roles=("admin",))
"""An admin of another mandate: sees nothing of m1."""


@pytest.fixture
def binder() -> DocBinder:
    return make_memory_binder()


@pytest.fixture
def run(binder: DocBinder) -> Run:
    return binder.start_new_run(ALICE)


def block(verb: str, name: str, size: int, document_id: str | None, file_id: str) -> str:
    """The unified tool-result block of SPEC C5, written out independently of the library."""
    lines = [f"{verb} '{name}' ({size} bytes)"]
    if document_id is not None:
        lines.append(f"  documentList ref: docItem:{document_id}")
    lines.append(f"  file id: {file_id}")
    return "\n".join(lines)


def stored_message_count(binder: DocBinder, run: Run) -> int:
    assert run.workflow is not None
    return len(binder.list_messages(ALICE, run.workflow.id))


def only_text(run: Run, document_list: object) -> list[tuple[str, str, str | None]]:
    content = run.get_content(document_list)
    assert content.unresolved == ()
    return [(p.kind.value, p.mime_type, p.text) for p in content.parts]


# -- download_from_data_source --------------------------------------------------------------


def test_download_from_a_local_directory_end_to_end(
    binder: DocBinder, run: Run, tmp_path: Path
) -> None:
    (tmp_path / "exports").mkdir()
    csv = b"region,revenue\nNorth,61\nSouth,48\n"
    (tmp_path / "exports" / "sales.csv").write_bytes(csv)

    result = download_from_data_source(
        run, LocalDirectorySource(tmp_path), "exports/sales.csv", service="sharepoint"
    )

    [produced] = result.files
    assert produced.document_id is not None
    assert result.text == block(
        "Downloaded", "sales.csv", 33, produced.document_id, produced.item.id
    )
    assert produced.item.mime_type == "text/csv"
    assert produced.item.sha256 == hashlib.sha256(csv).hexdigest()
    assert run.workflow is not None
    assert [m.documents_label for m in run.workflow.messages] == ["datasource:sharepoint"]
    # The model sends the reference back inside a json fence with an upper-case prefix.
    sloppy = f'```json\n["DOCITEM:{produced.document_id}"]\n```'
    assert only_text(run, sloppy) == [("text", "text/csv", csv.decode())]


def test_download_over_http_end_to_end(run: Run, http_server: LoopbackServer) -> None:
    page = (
        b"<!DOCTYPE html><html><head><title>Platform overview</title><style>p{}</style></head>"
        b"<body><h1>Overview</h1><p>The platform has <b>three</b> parts.</p>"
        b"<script>x()</script></body></html>"
    )
    url = http_server.route(
        "/docs/page",
        headers={
            "Content-Type": "text/html; charset=utf-8",
            "Content-Disposition": 'attachment; filename="platform-overview.html"',
        },
        chunks=(page[:50], page[50:]),
    )

    result = download_from_data_source(
        run, HttpSource(trust_env=False, allowed_networks=LOOPBACK), url, service="web"
    )

    [produced] = result.files
    assert result.text == block(
        "Downloaded", "platform-overview.html", len(page), produced.document_id, produced.item.id
    )
    assert produced.item.mime_type == "text/html"
    sloppy = {"documents": [{"id": produced.document_id, "name": "platform-overview.html"}]}
    assert only_text(run, sloppy) == [
        (
            "text",
            "text/html",
            "Platform overview\n\n# Overview\n\nThe platform has **three** parts.",
        )
    ]


def test_a_download_over_the_size_limit_stores_nothing(
    binder: DocBinder, run: Run, http_server: LoopbackServer
) -> None:
    url = http_server.route("/big.bin", chunks=(b"x" * 600, b"y" * 600), length=False)
    with pytest.raises(SizeLimitExceeded, match="size limit of 1000 bytes"):
        download_from_data_source(
            run,
            HttpSource(max_bytes=1000, trust_env=False, allowed_networks=LOOPBACK),
            url,
            service="web",
        )
    assert list(binder.blobs.keys()) == []
    assert run.list_files() == []
    assert run.workflow is not None and run.workflow.messages == ()


# -- write_file -----------------------------------------------------------------------------


def test_write_file_create_end_to_end(run: Run) -> None:
    result = write_file(run, "notes.md", "# Notes\n\nBuy milk.\n")

    [produced] = result.files
    assert result.text == block("Wrote", "notes.md", 19, produced.document_id, produced.item.id)
    assert run.workflow is not None
    assert run.workflow.messages[0].documents_label == "writeFile:notes.md"
    # backticks and a trailing full stop around the reference
    assert only_text(run, f"see `docItem:{produced.document_id}`.") == [
        ("text", "text/markdown", "# Notes\n\nBuy milk.\n")
    ]


def test_write_file_append_changes_the_file_in_place_without_a_message(
    binder: DocBinder, run: Run
) -> None:
    created = write_file(run, "notes.md", "first line\n").files[0]
    old_blob = created.item.blob_key
    before = stored_message_count(binder, run)

    result = write_file(run, "notes.md", "second line\n", mode="append", file_id=created.item.id)

    assert (
        result.text == f"Appended 12 bytes to 'notes.md' (23 bytes)\n  file id: {created.item.id}"
    )
    assert result.files == ()
    [item] = result.updated
    assert item.id == created.item.id
    assert item.size == 23
    assert item.sha256 == hashlib.sha256(b"first line\nsecond line\n").hexdigest()
    assert item.blob_key != old_blob
    assert list(binder.blobs.keys()) == [item.blob_key]  # the old blob is gone
    assert run.get_file(item.id) == item
    assert stored_message_count(binder, run) == before
    # the reference the model already holds now yields the longer text
    assert only_text(run, [created.reference]) == [
        ("text", "text/markdown", "first line\nsecond line\n")
    ]


def test_write_file_append_by_name_targets_the_newest_file_of_that_name(run: Run) -> None:
    older = write_file(run, "log.txt", "a\n").files[0].item
    newer = write_file(run, "log.txt", "b\n").files[0].item
    result = write_file(run, "log.txt", "c\n", mode="append")
    assert [i.id for i in result.updated] == [newer.id]
    assert read_file(run, newer.id) == "b\nc\n"
    assert read_file(run, older.id) == "a\n"


def test_append_needs_update_permission(binder: DocBinder, run: Run) -> None:
    item = write_file(run, "notes.md", "mine\n").files[0].item
    bob = binder.start_run(BOB)
    with pytest.raises(AccessDenied, match="user bob may not update file"):
        write_file(bob, "notes.md", "theirs\n", mode="append", file_id=item.id)
    with pytest.raises(FileItemNotFound, match=r"no file named 'notes.md' that you may change"):
        write_file(bob, "notes.md", "theirs\n", mode="append")
    outsider = binder.start_run(OUTSIDER)
    with pytest.raises(FileItemNotFound, match=f"file {item.id} not found"):
        write_file(outsider, "notes.md", "x", mode="append", file_id=item.id)
    assert read_file(run, item.id) == "mine\n"


def test_append_over_the_size_limit_keeps_the_file_and_leaves_no_blob() -> None:
    binder = make_memory_binder(max_file_size=10)
    run = binder.start_new_run(ALICE)
    item = write_file(run, "n.txt", "12345").files[0].item
    with pytest.raises(SizeLimitExceeded):
        write_file(run, "n.txt", "678901", mode="append", file_id=item.id)
    assert run.get_file(item.id) == item
    assert list(binder.blobs.keys()) == [item.blob_key]


def test_append_that_would_duplicate_another_file_is_a_conflict(
    binder: DocBinder, run: Run
) -> None:
    short = write_file(run, "n.txt", "ab").files[0].item
    full = write_file(run, "n.txt", "abc").files[0].item
    with pytest.raises(Conflict, match=r"would make 'n.txt' a duplicate of another file"):
        write_file(run, "n.txt", "c", mode="append", file_id=short.id)
    assert run.get_file(short.id) == short
    assert sorted(binder.blobs.keys()) == sorted([short.blob_key, full.blob_key])


def test_replace_based_on_a_stale_read_is_a_conflict(run: Run) -> None:
    item = write_file(run, "n.txt", "one").files[0].item
    write_file(run, "n.txt", " two", mode="append", file_id=item.id)
    with pytest.raises(Conflict, match="changed since it was read"):
        run.binder.update_file.replace(run.principal, item.id, b"three", expected=item)
    assert read_file(run, item.id) == "one two"


def test_write_file_rejects_a_bad_mode_and_content(run: Run) -> None:
    with pytest.raises(InvalidInput) as caught:
        write_file(run, "a.txt", "x", mode="overwrite")
    assert str(caught.value) == (
        "the write mode: got 'overwrite' (str); accepted: one of create, append; example: 'create'"
    )
    with pytest.raises(InvalidInput) as caught:
        write_file(run, "a.txt", 42)
    assert str(caught.value) == (
        "the content for 'a.txt': got 42 (int); accepted: text, bytes, a data: URI or base64 "
        'for binary types, objects/lists for .json/.csv; example: "hello" or {"a": 1} for '
        "a .json name"
    )
    assert run.list_files() == []


# -- render_document ------------------------------------------------------------------------

REPORT_MD = "# Quarterly report\n\nRevenue grew **12 %** in Q3.\n\n- North: 61\n- South: 48\n"


def test_render_document_html_and_pdf_end_to_end(run: Run) -> None:
    result = render_document(run, REPORT_MD, name="report.md", formats=("html", "pdf"))

    html_file, pdf_file = result.files
    assert result.text == "\n".join(
        [
            block(
                "Rendered",
                "report.html",
                html_file.item.size,
                html_file.document_id,
                html_file.item.id,
            ),
            block(
                "Rendered", "report.pdf", pdf_file.item.size, pdf_file.document_id, pdf_file.item.id
            ),
        ]
    )
    assert html_file.item.mime_type == "text/html"
    assert pdf_file.item.mime_type == "application/pdf"
    assert run.workflow is not None
    assert [m.documents_label for m in run.workflow.messages] == [
        "renderDocument:report.html",
        "renderDocument:report.pdf",
    ]
    html = run.read_file(html_file.item.id).decode()
    assert "<title>Quarterly report</title>" in html
    assert html.startswith("<!DOCTYPE html>\n<html>\n<head>\n")
    assert "<h1>Quarterly report</h1>\n<p>Revenue grew <strong>12 %</strong> in Q3.</p>" in html
    # both references, as a list of dicts the way models like to send them
    sloppy = json.dumps([{"id": f.document_id, "type": "document"} for f in result.files])
    content = run.get_content(sloppy)
    assert content.unresolved == ()
    assert [(p.kind, p.mime_type, p.text, p.position) for p in content.parts] == [
        (
            ContentKind.TEXT,
            "text/html",
            "# Quarterly report\n\nRevenue grew **12 %** in Q3.\n\n* North: 61\n* South: 48",
            None,
        ),
        (
            ContentKind.TEXT,
            "application/pdf",
            "Quarterly report\nRevenue grew 12 % in Q3.\n• North: 61\n• South: 48",
            "page 1",
        ),
    ]


def test_render_document_escapes_raw_html_and_drops_script_links(run: Run) -> None:
    md = "# T\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1))\n"
    [produced] = render_document(run, md, name="t").files
    html = run.read_file(produced.item.id).decode()
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'href="javascript' not in html
    assert "<p>[x](javascript:alert(1))</p>" in html  # shown as text, not a link


def test_render_document_rejects_unknown_formats(run: Run) -> None:
    with pytest.raises(InvalidInput) as caught:
        render_document(run, "# x", name="x", formats=("html", "docx"))
    assert str(caught.value) == (
        "the document formats: got ('html', 'docx') (tuple), and 'docx' is not one of them; "
        'accepted: html, pdf, as a list or a comma/space-separated string; example: "pdf, html"'
    )
    assert run.list_files() == []


# -- generate_image -------------------------------------------------------------------------


def test_generate_image_end_to_end(run: Run, http_server: LoopbackServer) -> None:
    red, blue = png_bytes((200, 0, 0)), png_bytes((0, 0, 200))
    http_server.route(
        "/v1/images/generations",
        headers={"Content-Type": "application/json"},
        chunks=(image_api_answer([red, blue]),),
    )
    generator = OpenAICompatibleImageGenerator(
        http_server.url("/v1"), api_key="sk-test", model="test-model", trust_env=False
    )

    result = generate_image(run, "a red square", generator=generator, n=2, name="square")

    first, second = result.files
    assert result.text == "\n".join(
        [
            block("Generated", "square-1.png", len(red), first.document_id, first.item.id),
            block("Generated", "square-2.png", len(blue), second.document_id, second.item.id),
        ]
    )
    [request] = http_server.seen
    assert (request.method, request.path) == ("POST", "/v1/images/generations")
    assert request.headers["authorization"] == "Bearer sk-test"
    assert json.loads(request.body) == {
        "model": "test-model",
        "prompt": "a red square",
        "n": 2,
        "size": "512x512",
        "response_format": "b64_json",
    }
    assert run.workflow is not None
    labels = [m.documents_label for m in run.workflow.messages]
    assert labels[0] == "generateImage:square"
    assert labels[1].startswith("generateImage:square#")
    content = run.get_content(f"docList:generateImage:square, DocItem:{second.document_id}")
    assert content.unresolved == ()
    assert [(p.kind, p.mime_type, p.file_name, p.data) for p in content.parts] == [
        (ContentKind.IMAGE, "image/png", "square-1.png", red),
        (ContentKind.IMAGE, "image/png", "square-2.png", blue),
    ]


# -- create_chart ---------------------------------------------------------------------------


def test_create_chart_end_to_end(run: Run) -> None:
    spec = json.dumps(
        {
            "kind": "bar",
            "title": "Revenue by region",
            "series": [{"name": "2024", "labels": ["North", "South"], "values": [61, 48]}],
        }
    )

    result = create_chart(run, spec)

    [produced] = result.files
    assert result.text == block(
        "Created chart",
        "Revenue by region.png",
        produced.item.size,
        produced.document_id,
        produced.item.id,
    )
    assert run.workflow is not None
    assert run.workflow.messages[0].documents_label == "createChart:Revenue by region"
    # a bare UUID inside free text is read as a docItem reference
    content = run.get_content(f"Please describe the chart {produced.document_id} for me")
    part, *read = content.parts  # the image, then what OCR read in it (title, labels)
    assert all(p.kind is ContentKind.TEXT and p.ocr for p in read)
    assert (part.kind, part.mime_type, part.file_name) == (
        ContentKind.IMAGE,
        "image/png",
        "Revenue by region.png",
    )
    from PIL import Image

    assert part.data is not None
    assert Image.open(io.BytesIO(part.data)).size == (800, 500)


def test_create_chart_rejects_a_bad_spec_and_stores_nothing(run: Run) -> None:
    with pytest.raises(
        InvalidInput, match=r"chart spec: 'kind' must be one of bar, line, pie, got 'scatter'"
    ):
        create_chart(run, {"kind": "scatter", "series": []})
    assert run.list_files() == []


# -- without a workflow ---------------------------------------------------------------------


def test_tools_without_a_workflow_omit_the_reference_line(
    binder: DocBinder, caplog: pytest.LogCaptureFixture
) -> None:
    run = binder.start_run(ALICE)
    with caplog.at_level(logging.WARNING, logger="docbinder"):
        result = write_file(run, "a.txt", "hello")
    [produced] = result.files
    assert produced.document_id is None
    assert result.text == f"Wrote 'a.txt' (5 bytes)\n  file id: {produced.item.id}"
    assert "documentList" not in result.text
    assert [r.getMessage() for r in caplog.records] == [
        f"attach skipped: no workflow bound; file {produced.item.id} stays reachable by file id"
    ]
    assert read_file(run, produced.item.id) == "hello"

    chart = create_chart(run, {"kind": "pie", "series": [{"labels": ["a", "b"], "values": [1, 3]}]})
    assert (
        chart.text
        == f"Created chart 'chart.png' ({chart.files[0].item.size} bytes)\n  file id: {chart.files[0].item.id}"
    )


# -- task result path (C9) ------------------------------------------------------------------


def test_persist_task_result_makes_one_message_with_several_documents(
    binder: DocBinder, run: Run
) -> None:
    result = persist_task_result(
        run,
        [("summary.csv", b"region,revenue\nNorth,61\n"), ("notes.md", iter([b"# Notes", b"\n"]))],
        label="task:3:extract",
        message="Extracted two files",
    )

    assert result.message is not None
    first, second = result.message.documents
    csv_item, md_item = result.items
    assert result.text == "\n".join(
        [
            "Task result with 2 files (32 bytes)",
            "  documentList ref: docList:task:3:extract",
            block("Stored", "summary.csv", 24, first.id, csv_item.id),
            block("Stored", "notes.md", 8, second.id, md_item.id),
        ]
    )
    assert result.list_reference == "docList:task:3:extract"
    assert result.references == (f"docItem:{first.id}", f"docItem:{second.id}")
    assert result.message.message == "Extracted two files"
    assert stored_message_count(binder, run) == 1
    assert only_text(run, '"docList:task:3:extract"') == [
        ("text", "text/csv", "region,revenue\nNorth,61\n"),
        ("text", "text/markdown", "# Notes\n"),
    ]


def test_persist_task_result_without_a_workflow_stores_and_warns(
    binder: DocBinder, caplog: pytest.LogCaptureFixture
) -> None:
    run = binder.start_run(ALICE)
    with caplog.at_level(logging.WARNING, logger="docbinder"):
        result = persist_task_result(run, [("a.txt", b"x")], label="task:1")
    [item] = result.items
    assert result.message is None and result.list_reference is None
    assert (
        result.text
        == f"Task result with 1 file (1 bytes)\nStored 'a.txt' (1 bytes)\n  file id: {item.id}"
    )
    assert [r.getMessage() for r in caplog.records] == [
        "task result not attached: no workflow bound; 1 file(s) stay reachable by file id"
    ]


def test_persist_task_result_checks_every_name_before_storing(run: Run) -> None:
    with pytest.raises(InvalidInput, match="file name must not contain NUL"):
        persist_task_result(run, [("ok.txt", b"1"), ("bad\x00.txt", b"2")], label="t")
    with pytest.raises(InvalidInput, match="a task result needs at least one file"):
        persist_task_result(run, [], label="t")
    assert run.list_files() == []


# -- bridged_tool / bridge ------------------------------------------------------------------


def test_bridged_tool_turns_a_host_function_into_a_tool(run: Run, tmp_path: Path) -> None:
    @bridged_tool(verb="Exported", label="exportReport:{name}")
    def export_report(run: Run, quarter: str) -> tuple[str, bytes]:
        return f"report-{quarter}.csv", b"quarter,total\n" + quarter.encode() + b",7\n"

    text = export_report(run, "Q3")

    assert run.workflow is not None
    [message] = run.workflow.messages
    [document] = message.documents
    assert text == block("Exported", "report-Q3.csv", 19, document.id, document.file_id)
    assert message.documents_label == "exportReport:report-Q3.csv"
    assert export_report.__name__ == "export_report"
    assert only_text(run, {"documentList": [f"docItem:{document.id}"]}) == [
        ("text", "text/csv", "quarter,total\nQ3,7\n")
    ]


def test_bridged_tool_accepts_bytes_paths_and_lists(run: Run, tmp_path: Path) -> None:
    path = tmp_path / "photo.png"
    image = png_bytes()
    path.write_bytes(image)

    @bridged_tool(name="raw.bin")
    def make_files(run: Run) -> list[object]:
        return [b"\x00\x01\x02", path, ("readme.txt", "hi")]

    text = make_files(run)

    assert run.workflow is not None
    docs = [m.documents[0] for m in run.workflow.messages]
    assert [m.documents_label for m in run.workflow.messages] == [
        "make_files:raw.bin",
        "make_files:photo.png",
        "make_files:readme.txt",
    ]
    assert text == "\n".join(
        [
            block("Stored", "raw.bin", 3, docs[0].id, docs[0].file_id),
            block("Stored", "photo.png", len(image), docs[1].id, docs[1].file_id),
            block("Stored", "readme.txt", 2, docs[2].id, docs[2].file_id),
        ]
    )
    assert [d.mime_type for d in docs] == ["application/octet-stream", "image/png", "text/plain"]


def test_bridge_refuses_what_is_not_a_file(run: Run, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="got int"):
        bridge(run, 42)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="the tool produced no file"):
        bridge(run, [])
    with pytest.raises(InvalidInput, match="which is not a file"):
        bridge(run, tmp_path)
    result = bridge(run, ("x.txt", b"x"), label="custom")
    assert isinstance(result, ToolResult)
    assert result.references == (result.files[0].reference,)
    assert run.workflow is not None and run.workflow.messages[0].documents_label == "custom"


# -- consuming tools ------------------------------------------------------------------------


def test_consuming_tools_create_no_messages(binder: DocBinder, run: Run) -> None:
    text_item = write_file(run, "notes.md", "Alpha\nbeta gamma\ngamma\n").files[0].item
    render_document(run, REPORT_MD, name="report", formats=("html", "pdf"))
    create_chart(
        run,
        {
            "kind": "line",
            "title": "T",
            "series": [{"name": "s", "labels": [1, 2], "values": [3, 4]}],
        },
    )
    in_memory = len(run.workflow.messages) if run.workflow else -1
    before = stored_message_count(binder, run)

    assert read_file(run, text_item.id) == "Alpha\nbeta gamma\ngamma\n"
    replaced = replace_in_file(run, text_item.id, "gamma", "delta", count=1)
    matches = search_in_file_content(run, "GAMMA")
    listed = list_files(run)
    info = get_file_info(run, text_item.id)

    assert stored_message_count(binder, run) == before == 4
    assert run.workflow is not None and len(run.workflow.messages) == in_memory
    assert replaced.replacements == 1
    assert (
        replaced.text
        == f"Replaced 1 occurrence in 'notes.md' (23 bytes)\n  file id: {text_item.id}"
    )
    assert read_file(run, text_item.id) == "Alpha\nbeta delta\ngamma\n"
    assert [(m.file_name, m.line_number, m.line) for m in matches] == [("notes.md", 3, "gamma")]
    assert all(isinstance(i, FileItem) for i in listed)
    assert [i.file_name for i in listed][-1] == "notes.md"
    assert sorted(i.file_name for i in listed) == ["T.png", "notes.md", "report.html", "report.pdf"]
    assert info == replaced.item


def test_read_file_text_html_pdf_and_refusals(binder: DocBinder, run: Run) -> None:
    html, pdf = render_document(run, REPORT_MD, name="r", formats=("html", "pdf")).files
    assert (
        read_file(run, pdf.item.id)
        == "Quarterly report\nRevenue grew 12 % in Q3.\n• North: 61\n• South: 48"
    )
    assert read_file(run, html.item.id, max_chars=16) == (
        "# Quarterly repo\n[truncated after 16 characters]"
    )
    chart = create_chart(run, {"kind": "pie", "series": [{"labels": ["a"], "values": [1]}]})
    chart_id = chart.files[0].item.id
    with pytest.raises(InvalidInput) as no_text:
        read_file(run, chart_id)
    assert str(no_text.value) == (
        f"file 'chart.png' (image/png) has no text to read; read it with read_documents and "
        f"file:{chart_id} (a file attached to the workflow)"
    )
    with pytest.raises(InvalidInput) as caught:
        read_file(run, html.item.id, max_chars=0)
    assert str(caught.value) == (
        "max_chars: got 0 (int); accepted: a whole number of at least 1, or a string holding "
        "one; example: 1"
    )
    assert read_file(run, html.item.id, max_chars=" 16 ") == (  # type: ignore[arg-type]
        "# Quarterly repo\n[truncated after 16 characters]"
    )
    outsider = binder.start_run(OUTSIDER)
    with pytest.raises(FileItemNotFound, match=f"file {html.item.id} not found"):
        read_file(outsider, html.item.id)


def test_replace_in_file_rules(binder: DocBinder, run: Run) -> None:
    item = write_file(run, "a.txt", b"\xef\xbb\xbfx-x-x").files[0].item
    result = replace_in_file(run, item.id, "x", "yy")
    assert result.replacements == 3
    assert run.read_file(item.id) == b"\xef\xbb\xbfyy-yy-yy"
    with pytest.raises(
        InvalidInput, match=r"the text 'zzz' does not occur in 'a.txt'; nothing was changed"
    ):
        replace_in_file(run, item.id, "zzz", "q")
    with pytest.raises(InvalidInput, match="the text to replace must be a non-empty string"):
        replace_in_file(run, item.id, "", "q")
    with pytest.raises(AccessDenied):
        replace_in_file(binder.start_run(BOB), item.id, "yy", "q")
    chart = create_chart(run, {"kind": "pie", "series": [{"labels": ["a"], "values": [1]}]})
    with pytest.raises(InvalidInput, match="is not a text file"):
        replace_in_file(run, chart.files[0].item.id, "a", "b")
    # write_file refuses non-UTF-8 text names; a file from elsewhere can still be Latin-1.
    latin_bytes = "caf\xe9 au lait ".encode("latin-1") * 3
    latin = run.produce_file("l.txt", latin_bytes, verb="Stored", label="latin").item
    with pytest.raises(InvalidInput, match="is not UTF-8 text"):
        replace_in_file(run, latin.id, "au", "ou")
    assert run.read_file(item.id) == b"\xef\xbb\xbfyy-yy-yy"


def test_search_in_file_content(binder: DocBinder, run: Run) -> None:
    a = write_file(run, "a.txt", "one\nTwo Straße\nthree two\n").files[0].item
    b = write_file(run, "b.json", '{"two": 2}').files[0].item
    create_chart(run, {"kind": "pie", "series": [{"labels": ["two"], "values": [1]}]})

    found = search_in_file_content(run, "TWO")
    assert [(m.file_id, m.line_number, m.line) for m in found] == [
        (b.id, 1, '{"two": 2}'),
        (a.id, 2, "Two Straße"),
        (a.id, 3, "three two"),
    ]
    assert str(found[1]) == f"'a.txt' (file id {a.id}) line 2: Two Straße"
    assert [m.line for m in search_in_file_content(run, "STRASSE")] == ["Two Straße"]
    assert len(search_in_file_content(run, "two", limit=2)) == 2
    assert [m.file_id for m in search_in_file_content(run, "two", file_ids=a.id)] == [a.id, a.id]
    assert search_in_file_content(binder.start_run(OUTSIDER), "two") == []
    with pytest.raises(InvalidInput, match="the search query must be non-empty text"):
        search_in_file_content(run, "  ")
