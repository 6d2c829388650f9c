"""The MCP server through the SDK's own ``mcp.Client`` (both protocol eras).

In-process (``Client(server.server)``: the process is the conversation) and
over streamable HTTP served by uvicorn in a thread (``Client(url)``: the
sessionless revision by default, ``mode="legacy"`` for the handshake), on the
in-memory binder. The command-line transports are in ``tests/e2e/test_mcp.py``;
these tests cover workflow handles, result shapes, caps, per-principal limits
and token handling.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import re
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

import uvicorn
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import TextResourceContents
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from docbinder.application import DocBinder, Run
from docbinder.domain.errors import ConfigurationError, StorageError
from docbinder.domain.model import Principal
from docbinder.integrations.mcp import (
    BearerTokens,
    DocbinderMcpServer,
    check_http_host,
    is_loopback,
    read_handle,
    token_hash,
)
from docbinder.tools import TaskResult, persist_task_result
from docbinder.tools.datasources import LocalDirectorySource
from docbinder.tools.images import GeneratedImage
from docbinder.toolset import (
    ERROR_SCHEMA,
    HANDLE_SENTENCE,
    OUTPUT_SCHEMAS,
    file_info_text,
)
from tests.integration.shapes import CALLS, CHARTJS, PNG_URI, check_stored
from tests.unit.conftest import make_memory_binder
from tests.unit.test_tools_fixtures import ALICE, png_bytes

OUTSIDER = Principal("eve", "m2", None, roles=("admin",))
BOB = Principal("bob", "m1", "f1", roles=("member",))  # reads alice's workflows, may not add
CAROL = Principal("carol", "m1", "f2", roles=("member",))  # same mandate, other feature instance
MODES = ["legacy", "auto"]
UNKNOWN = "00000000-0000-4000-8000-0000000000aa"
DOC_REF = re.compile(r"docItem:[0-9a-f-]{36}")


@pytest.fixture
def binder() -> DocBinder:
    return make_memory_binder()


def run_client(server: DocbinderMcpServer, mode: str, body: Any) -> Any:
    async def main() -> Any:
        async with Client(server.server, mode=mode) as client:
            return await body(client)

    return anyio.run(main)


def first_text(result: Any) -> str:
    return str(result.content[0].text)


def workflow_of(result: Any) -> str | None:
    """The workflow a result names, checked to be the same in its text block and structure."""
    line = result.content[1].text
    assert line.startswith("workflow: "), line
    named = None if line.startswith("workflow: none") else line.removeprefix("workflow: ")
    assert result.structured_content["workflow"] == named
    return named


def links(result: Any) -> list[Any]:
    return [c for c in result.content if c.type == "resource_link"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LiveHttp:
    """``server.http_app()`` served by uvicorn on 127.0.0.1 in a thread of this process."""

    def __init__(self, server: DocbinderMcpServer, tokens: BearerTokens | None = None) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}/mcp"
        app = server.http_app(host="127.0.0.1", port=port, tokens=tokens)
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        self.uvicorn = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.uvicorn.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.uvicorn.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)

    def client(self, mode: str = "auto", token: str | None = None, **headers: str) -> Client:
        """An SDK client of this server (``mode`` as ``Client``'s), with a bearer token."""
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        http = create_mcp_http_client(headers=headers or None)
        return Client(streamable_http_client(self.url, http_client=http), mode=mode)

    def stop(self) -> None:
        self.uvicorn.should_exit = True
        self.thread.join(timeout=30)


def serve(server: DocbinderMcpServer, tokens: BearerTokens | None = None) -> Iterator[LiveHttp]:
    live = LiveHttp(server, tokens)
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture
def http(binder: DocBinder) -> Iterator[LiveHttp]:
    yield from serve(DocbinderMcpServer(binder, ALICE))


def over(live: LiveHttp, body: Callable[..., Awaitable[Any]], *modes: str) -> Any:
    """Run ``body(client, ...)`` with one client of ``live`` per mode, all open at once."""

    async def main() -> Any:
        clients = [live.client(mode) for mode in modes]
        for client in clients:
            await client.__aenter__()
        try:
            return await body(*clients)
        finally:
            for client in reversed(clients):
                await client.__aexit__(None, None, None)

    return anyio.run(main)


@pytest.mark.parametrize("mode", MODES)
def test_one_workflow_per_process_shared_by_its_calls(binder: DocBinder, mode: str) -> None:
    server = DocbinderMcpServer(binder, ALICE)

    async def body(client: Client) -> tuple[Any, Any, Any]:
        before = await client.call_tool("list_documents", {})
        written = await client.call_tool("write_file", {"name": "a.txt", "content": "a"})
        listed = await client.call_tool("list_documents", {})
        return before, written, listed

    before, written, listed = run_client(server, mode, body)
    assert workflow_of(before) is None  # a consuming call starts no workflow
    assert first_text(before) == (
        "No workflow is active in this run, so there are no documents to list. To list a "
        "workflow's documents, pass the `workflow` id you got from the call that produced the "
        "file (the `workflow:` line of its answer) as the `workflow` argument."
    )
    assert binder.list_workflows(ALICE)[0].id == workflow_of(written) == workflow_of(listed)
    [workflow] = binder.list_workflows(ALICE)
    ref = DOC_REF.search(first_text(written))
    assert ref and ref[0] in first_text(listed)
    assert first_text(listed).splitlines()[0] == f"Active workflow: {workflow.id}"


@pytest.mark.parametrize("mode", MODES)
def test_resource_reads_are_capped(binder: DocBinder, mode: str) -> None:
    server = DocbinderMcpServer(binder, ALICE, max_resource_bytes=10)

    async def body(client: Client) -> None:
        small = await client.call_tool("write_file", {"name": "small.txt", "content": "0123456789"})
        big = await client.call_tool("write_file", {"name": "big.txt", "content": "0123456789A"})
        [small_link], [big_link] = links(small), links(big)
        [content] = (await client.read_resource(small_link.uri)).contents
        assert content.text == "0123456789"
        with pytest.raises(MCPError, match="has 11 bytes, more than the 10-byte limit"):
            await client.read_resource(big_link.uri)
        with pytest.raises(MCPError, match="unknown resource URI"):
            await client.read_resource("file:///etc/passwd")

    run_client(server, mode, body)


def test_images_over_the_cap_are_named_not_sent(binder: DocBinder) -> None:
    png = png_bytes(size=32)
    server = DocbinderMcpServer(binder, ALICE, max_image_bytes=len(png) - 1)

    async def body(client: Client) -> Any:
        written = await client.call_tool(
            "write_file",
            {"name": "p.png", "content": base64.b64encode(png).decode(), "encoding": "base64"},
        )
        ref = re.search(r"docItem:[0-9a-f-]{36}", first_text(written))
        assert ref
        return await client.call_tool("read_documents", {"documentList": [ref[0]]})

    read = run_client(server, "legacy", body)
    assert [c.type for c in read.content] == ["text", "text"]  # the answer, its workflow
    assert f"is larger than the {len(png) - 1}-byte limit for images" in first_text(read)


@pytest.mark.parametrize("mode", MODES)
def test_joining_a_workflow_and_refusing_one_out_of_reach(binder: DocBinder, mode: str) -> None:
    workflow_id = binder.start_new_run(ALICE).context.workflow_id
    assert workflow_id is not None

    async def joined(client: Client) -> str:
        return first_text(await client.call_tool("list_documents", {}))

    listed = run_client(DocbinderMcpServer(binder, ALICE, workflow_id=workflow_id), mode, joined)
    assert listed.splitlines()[0] == f"Active workflow: {workflow_id}"

    async def refused(client: Client) -> Any:
        result = await client.call_tool("write_file", {"name": "x.txt", "content": "x"})
        with pytest.raises(MCPError, match="not found"):
            await client.list_resources()
        return result

    outsider = DocbinderMcpServer(binder, OUTSIDER, workflow_id=workflow_id)
    result = run_client(outsider, mode, refused)
    assert result.is_error
    assert first_text(result) == f"workflow {workflow_id} not found"
    assert result.structured_content == {
        "workflow": None,
        "error": f"workflow {workflow_id} not found",
    }
    assert binder.list_files(OUTSIDER) == []


@pytest.mark.parametrize("mode", MODES)
def test_tool_list_carries_schemas_and_hints(binder: DocBinder, mode: str) -> None:
    server = DocbinderMcpServer(binder, ALICE)

    async def body(client: Client) -> Any:
        return (await client.list_tools()).tools

    tools = {t.name: t for t in run_client(server, mode, body)}
    # only the arguments a call must have are required (hosts check before they send)
    assert tools["write_file"].input_schema["required"] == ["name", "content"]
    assert tools["read_file"].input_schema["required"] == ["file_id"]
    assert tools["list_documents"].input_schema["required"] == []
    Draft202012Validator(tools["write_file"].input_schema).validate({"name": "a", "content": "b"})
    for tool in tools.values():
        workflow = tool.input_schema["properties"]["workflow"]
        assert workflow["type"] == ["string", "null"]
        assert "workflow" not in tool.input_schema["required"]
        assert tool.description.endswith(HANDLE_SENTENCE)
        assert tool.output_schema == OUTPUT_SCHEMAS[tool.name]
        Draft202012Validator.check_schema(tool.output_schema)
    assert tools["write_file"].annotations.read_only_hint is False
    assert tools["list_files"].annotations.read_only_hint is True
    assert tools["read_documents"].input_schema["properties"]["documentList"].get("type") is None
    content = tools["write_file"].input_schema["properties"]["content"]
    assert {"type": "object", "additionalProperties": True} in content["anyOf"]
    assert "data:image/png;base64," in content["description"]


# -- tolerant arguments ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_model_shaped_arguments_through_the_mcp_client(binder: DocBinder, mode: str) -> None:
    """Issue 20 over MCP: each shape passes the published schema and is stored as meant."""
    run = binder.start_new_run(ALICE)
    server = DocbinderMcpServer(binder, ALICE, workflow_id=run.context.workflow_id)

    async def body(client: Client) -> dict[str, tuple[str, bool]]:
        schemas = {t.name: t.input_schema for t in (await client.list_tools()).tools}
        results: dict[str, tuple[str, bool]] = {}
        for key, tool, arguments in CALLS:
            Draft202012Validator(schemas[tool]).validate(arguments)
            result = await client.call_tool(tool, arguments)
            results[key] = (first_text(result), bool(result.is_error))
        return results

    check_stored(run, run_client(server, mode, body))


def test_a_flattened_chart_spec_and_loose_consuming_arguments(binder: DocBinder) -> None:
    server = DocbinderMcpServer(binder, ALICE)

    async def body(client: Client) -> tuple[Any, Any, Any]:
        chart = await client.call_tool("create_chart", {**CHARTJS, "name": "revenue.png"})
        listed = await client.call_tool("list_files", {"limit": "1"})
        searched = await client.call_tool(
            "search_in_file_content", {"query": "x", "file_ids": "a, b", "limit": "5"}
        )
        return chart, listed, searched

    chart, listed, searched = run_client(server, "legacy", body)
    assert first_text(chart).startswith("Created chart 'revenue.png' (")
    assert first_text(listed).startswith("1 file(s), newest first:")
    assert searched.is_error and first_text(searched) == "file a not found"


# -- read_file and get_file_info by reference ------------------------------------------------


def _task_result(binder: DocBinder) -> tuple[Run, TaskResult]:
    """A workflow of ALICE with one message of three files labelled ``q3``."""
    run = binder.start_new_run(ALICE)
    result = persist_task_result(
        run,
        [("notes.md", b"# Notes\nalpha"), ("rows.csv", b"a,b\n1,2"), ("p.png", png_bytes())],
        label="q3",
    )
    return run, result


@pytest.mark.parametrize("mode", MODES)
def test_file_tools_take_a_doc_item_reference(binder: DocBinder, mode: str) -> None:
    run, result = _task_result(binder)
    server = DocbinderMcpServer(binder, ALICE, workflow_id=run.context.workflow_id)
    ref = result.references[0]
    note = result.items[0]
    sloppy = f" `DocItem: {ref.split(':')[1]}`. "

    async def body(client: Client) -> list[Any]:
        return [
            await client.call_tool("read_file", {"file_id": ref}),
            await client.call_tool("read_file", {"file_id": sloppy, "max_chars": 3}),
            await client.call_tool("read_file", {"file_id": ref.split(":")[1]}),  # bare doc id
            await client.call_tool("get_file_info", {"file_id": ref}),
            await client.call_tool("get_file_info", {"file_id": f"file:{note.id}"}),
        ]

    read, cut, bare, info, by_file = run_client(server, mode, body)
    assert not any(r.is_error for r in (read, cut, bare, info, by_file))
    assert first_text(read) == first_text(bare) == "# Notes\nalpha"
    assert read.meta["docbinder/fileIds"] == [note.id]
    assert read.meta["docbinder/documentIds"] == [ref.split(":")[1]]
    assert first_text(cut) == "# N\n[truncated after 3 characters]"
    assert first_text(info) == f"documentList ref: {ref}\n{file_info_text(note)}"
    assert first_text(by_file) == file_info_text(note)  # one file:<id> is a file id


@pytest.mark.parametrize("mode", MODES)
def test_a_doc_list_reference_answers_for_each_of_its_files(binder: DocBinder, mode: str) -> None:
    run, result = _task_result(binder)
    server = DocbinderMcpServer(binder, ALICE, workflow_id=run.context.workflow_id)
    label = result.list_reference
    assert label is not None
    notes, rows, png = result.items
    refs = result.references

    async def body(client: Client) -> list[Any]:
        return [
            await client.call_tool("read_file", {"file_id": label}),
            await client.call_tool("read_file", {"file_id": label, "max_chars": 10}),
            await client.call_tool("get_file_info", {"file_id": label}),
            await client.call_tool("read_file", {"file_id": f"{refs[1]}, docItem:nope"}),
        ]

    read, capped, info, partly = run_client(server, mode, body)
    assert not any(r.is_error for r in (read, capped, info, partly))
    assert first_text(read).splitlines() == [
        f"3 file(s) match {label}, each under a header:",
        f"--- {refs[0]} 'notes.md' (text/markdown, {notes.size} bytes, file id {notes.id}) ---",
        "# Notes",
        "alpha",
        f"--- {refs[1]} 'rows.csv' (text/csv, {rows.size} bytes, file id {rows.id}) ---",
        "a,b",
        "1,2",
        f"--- {refs[2]} 'p.png' (image/png, {png.size} bytes, file id {png.id}) ---",
        f"[no text: 'p.png' is image/png; read it with read_documents and {refs[2]}]",
    ]
    assert read.meta["docbinder/fileIds"] == [notes.id, rows.id, png.id]
    assert read.meta["docbinder/documentIds"] == [r.split(":")[1] for r in refs]
    capped_lines = first_text(capped).splitlines()
    assert capped_lines[2:5] == ["# Notes", "al", "[truncated after 10 characters]"]
    assert capped_lines[5:] == [
        f"[2 more file(s) not read: this answer already holds max_chars=10 characters; "
        f"read them one at a time with read_file, the next: {refs[1]}, {refs[2]}]"
    ]
    blocks = first_text(info).split("\n\n")
    assert blocks == [
        f"3 file(s) match {label}:",
        *(
            f"documentList ref: {ref}\n{file_info_text(item)}"
            for ref, item in zip(refs, result.items, strict=True)
        ),
    ]
    lines = first_text(partly).splitlines()
    assert lines[0] == f"1 file(s) match {refs[1]}, docItem:nope, each under a header:"
    assert lines[-2] == (
        "Unresolved: docItem:nope (not_in_workflow): no document with this reference in the "
        "active workflow"
    )
    assert lines[-1].startswith("Valid references: ") and refs[0] in lines[-1]


@pytest.mark.parametrize("mode", MODES)
def test_references_from_elsewhere_resolve_to_nothing_and_leak_nothing(
    binder: DocBinder, mode: str
) -> None:
    _run, result = _task_result(binder)
    notes = result.items[0]
    doc_item, label = result.references[0], result.list_reference
    assert label is not None
    references = [doc_item, label, f"file:{notes.id}", notes.id]

    async def body(client: Client) -> list[Any]:
        return [
            await client.call_tool(tool, {"file_id": reference})
            for reference in references
            for tool in ("read_file", "get_file_info")
        ]

    def own_workflow(principal: Principal) -> DocbinderMcpServer:
        workflow_id = binder.start_new_run(principal).context.workflow_id
        return DocbinderMcpServer(binder, principal, workflow_id=workflow_id)

    # another tenant, in its own workflow: nothing of alice's, whatever the shape
    answers = run_client(own_workflow(OUTSIDER), mode, body)
    # the same user in another workflow: her file ids work, the references do not
    elsewhere = run_client(own_workflow(ALICE), mode, body)
    for answer in [*answers, *elsewhere[:4]]:
        message = first_text(answer)
        assert answer.is_error, message
        assert "\n" not in message and "Traceback" not in message
        assert "notes.md" not in message and "alpha" not in message
        assert notes.id not in message or message == f"file {notes.id} not found"
    for answer in answers[:2] + elsewhere[:2]:
        assert first_text(answer) == (
            f"no document found for {doc_item}: {doc_item} (not_in_workflow): no document with "
            "this reference in the active workflow. Valid references: none (the active "
            "workflow has no readable documents)"
        )
    for answer in answers[2:4] + elsewhere[2:4]:
        assert first_text(answer).startswith(f"no document found for {label}: {label} (")
    # A file id reaches only files of the call's workflow: elsewhere it is an unknown id,
    # for another tenant and for the same user in another workflow alike.
    assert [first_text(a) for a in answers[4:]] == [f"file {notes.id} not found"] * 4
    assert [first_text(a) for a in elsewhere[4:]] == [f"file {notes.id} not found"] * 4


@pytest.mark.parametrize("mode", MODES)
def test_file_ids_answer_only_inside_the_workflow(binder: DocBinder, mode: str) -> None:
    server = DocbinderMcpServer(binder, ALICE)
    # a file of the user outside any workflow, readable by her everywhere else
    stored = binder.start_run(ALICE).store_file("old.txt", b"kept").item

    async def body(client: Client) -> list[Any]:
        written = await client.call_tool("write_file", {"name": "new.txt", "content": "fresh"})
        [new_id] = written.meta["docbinder/fileIds"]
        return [
            await client.call_tool("read_file", {"file_id": new_id}),
            await client.call_tool("get_file_info", {"file_id": f"file:{new_id}"}),
            await client.call_tool("read_file", {"file_id": stored.id}),
            await client.call_tool("get_file_info", {"file_id": stored.id}),
            await client.call_tool("read_file", {"file_id": UNKNOWN}),
            await client.call_tool("read_file", {"file_id": "not-a-file"}),
            await client.call_tool("read_file", {"file_id": "docItem:bad/id"}),
            await client.call_tool("list_files", {}),
            await client.call_tool("search_in_file_content", {"query": "kept"}),
            await client.call_tool(
                "search_in_file_content", {"query": "kept", "file_ids": [stored.id]}
            ),
        ]

    answers = run_client(server, mode, body)
    read, info, outside, outside_info, unknown, absent, rejected, listed, found, named = answers
    [new_id] = read.meta["docbinder/fileIds"]
    assert first_text(read) == "fresh" and read.meta["docbinder/documentIds"] == []
    assert first_text(info) == file_info_text(binder.get_file(ALICE, new_id))
    # outside the workflow: the very words of an id that names nothing
    for answer in (outside, outside_info, named):
        assert answer.is_error
        assert first_text(answer) == first_text(unknown).replace(UNKNOWN, stored.id)
        assert "old.txt" not in first_text(answer) and "kept" not in first_text(answer)
    assert first_text(unknown) == f"file {UNKNOWN} not found"
    assert absent.is_error and first_text(absent) == "file not-a-file not found"
    assert rejected.is_error
    assert first_text(rejected).startswith("no document found for 'docItem:bad/id': ")
    assert "(rejected_input): not a usable document reference: invalid_id" in first_text(rejected)
    assert [f["fileId"] for f in listed.structured_content["files"]] == [new_id]
    assert first_text(found) == "No line contains 'kept'."


# -- result shapes -----------------------------------------------------------------------------


def check_result(schemas: dict[str, Any], name: str, result: Any) -> None:
    """``result`` of tool ``name`` validates against the tool's declared ``outputSchema``."""
    schema = ERROR_SCHEMA if result.is_error else schemas[name]
    Draft202012Validator(schema).validate(result.structured_content)


@pytest.mark.parametrize("mode", MODES)
def test_every_result_validates_against_its_output_schema(binder: DocBinder, mode: str) -> None:
    run, task = _task_result(binder)
    server = DocbinderMcpServer(binder, ALICE, workflow_id=run.context.workflow_id)
    label = task.list_reference
    assert label is not None
    notes = task.items[0]

    async def body(client: Client) -> list[tuple[str, Any]]:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        calls: list[tuple[str, dict[str, Any]]] = [
            (tool, arguments) for _key, tool, arguments in CALLS
        ]
        calls += [
            ("write_file", {"name": "a.md", "content": "# A"}),
            ("read_documents", {"documentList": [*task.references, "docItem:nope", "%%"]}),
            ("read_documents", {"documentList": task.references[0]}),
            ("list_documents", {}),
            ("read_file", {"file_id": notes.id}),
            ("read_file", {"file_id": label, "max_chars": 4}),
            ("read_file", {"file_id": f"{task.references[0]}, docItem:nope"}),
            ("search_in_file_content", {"query": "alpha"}),
            ("search_in_file_content", {"query": "no such line"}),
            ("get_file_info", {"file_id": notes.id}),
            ("get_file_info", {"file_id": label}),
            ("list_files", {"limit": 2}),
            ("read_file", {"file_id": UNKNOWN}),
            ("no_such_tool", {}),
        ]
        answered = []
        for tool, arguments in calls:
            result = await client.call_tool(tool, arguments)
            if tool in schemas:
                check_result(schemas, tool, result)
            answered.append((tool, result))
        return answered

    answered = run_client(server, mode, body)
    assert all(workflow_of(result) == run.context.workflow_id for _, result in answered)
    read = next(r for t, r in answered if t == "read_documents").structured_content
    assert [d["documentRef"] for d in read["documents"]] == list(task.references)
    assert read["documents"][0]["text"] == "# Notes\nalpha"
    assert read["documents"][2]["text"].startswith("[image 'p.png' (image/png, ")
    assert [(m["reference"], m["reason"]) for m in read["unresolved"]] == [
        ("docItem:nope", "not_in_workflow"),
        ("'%%'", "rejected_input"),  # the raw value as the parser shows it
    ]
    assert {v["documentRef"] for v in read["validReferences"]} >= set(task.references)
    info = [r for t, r in answered if t == "get_file_info"][1].structured_content
    assert [f["documentRef"] for f in info["files"]] == list(task.references)
    assert info["files"][0]["sha256"] == notes.sha256 and info["more"] == 0
    capped = [r for t, r in answered if t == "read_file"][1].structured_content
    assert capped["text"].splitlines()[2:4] == ["# No", "[truncated after 4 characters]"]
    failed = answered[-2][1]
    assert failed.is_error and failed.structured_content == {
        "workflow": run.context.workflow_id,
        "error": f"file {UNKNOWN} not found",
    }


@pytest.mark.parametrize("mode", MODES)
def test_a_producing_result_carries_text_link_and_structure(binder: DocBinder, mode: str) -> None:
    server = DocbinderMcpServer(binder, ALICE)

    async def body(client: Client) -> tuple[Any, Any]:
        written = await client.call_tool(
            "write_file", {"name": "notes.md", "content": "# N\nalpha"}
        )
        [link] = links(written)
        return written, await client.read_resource(link.uri)

    written, read = run_client(server, mode, body)
    [workflow] = binder.list_workflows(ALICE)
    [message] = binder.list_messages(ALICE, workflow.id)
    [document] = message.documents
    item = binder.get_file(ALICE, document.file_id)
    assert [c.type for c in written.content] == ["text", "text", "resource_link"]
    assert first_text(written) == (
        f"Wrote 'notes.md' (9 bytes)\n  documentList ref: docItem:{document.id}\n"
        f"  file id: {item.id}"
    )
    assert workflow_of(written) == workflow.id
    [link] = links(written)
    assert str(link.uri) == f"docbinder://documents/{document.id}?workflow={workflow.id}"
    assert (link.name, link.mime_type, link.size) == ("notes.md", "text/markdown", 9)
    assert link.annotations is not None and link.annotations.audience == ["user", "assistant"]
    assert written.structured_content == {
        "workflow": workflow.id,
        "files": [
            {
                "documentRef": f"docItem:{document.id}",
                "fileId": item.id,
                "name": "notes.md",
                "mimeType": "text/markdown",
                "size": 9,
                "sha256": item.sha256,
                "version": None,
            }
        ],
    }
    Draft202012Validator(OUTPUT_SCHEMAS["write_file"]).validate(written.structured_content)
    [content] = read.contents
    assert content.text == "# N\nalpha" and content.mime_type == "text/markdown"
    if mode == "auto":  # the sessionless revision carries cache hints
        assert (read.ttl_ms, read.cache_scope) == (24 * 60 * 60 * 1000, "private")


class _Painter:
    """An image generator for the tests: ``n`` small PNGs of different colours."""

    def generate(self, prompt: str, *, n: int = 1, size: str = "512x512") -> list[GeneratedImage]:
        return [GeneratedImage(png_bytes(color=(10 * k, 90, 160))) for k in range(n)]


PRODUCING_CALLS: tuple[tuple[str, dict[str, Any], int], ...] = (
    ("write_file", {"name": "notes.md", "content": "# N\nalpha"}, 1),
    ("write_file", {"name": "p.png", "content": PNG_URI}, 1),
    ("render_document", {"markdown": "# Plan\n\nShip.", "name": "plan", "formats": "pdf, html"}, 2),
    ("create_chart", {"spec": CHARTJS, "name": "sales.png"}, 1),
    ("download_from_data_source", {"service": "inbox", "path": "rows.csv"}, 1),
    ("generate_image", {"prompt": "a square", "n": 2}, 2),
)
"""Every producing tool, with the number of files its call stores."""


@pytest.mark.parametrize(
    "transport", ["in-process legacy", "in-process auto", "http auto", "http legacy"]
)
def test_every_producing_tool_links_each_file_and_each_link_reads_back(
    binder: DocBinder, tmp_path: Path, transport: str
) -> None:
    """Each producing result validates against its ``outputSchema`` and has one ``resource_link``
    per stored file, whose ``resources/read`` gives that file's bytes; over HTTP the links are
    read by a second client of the same principal (another conversation, no handle)."""
    (tmp_path / "rows.csv").write_bytes(b"region,total\nnorth,10\n")
    server = DocbinderMcpServer(
        binder,
        ALICE,
        data_sources={"inbox": LocalDirectorySource(tmp_path)},
        image_generator=_Painter(),
    )
    kind, mode = transport.split()

    async def produce(client: Client) -> list[tuple[str, Any]]:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        produced = []
        for tool, arguments, _count in PRODUCING_CALLS:
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, (tool, first_text(result))
            check_result(schemas, tool, result)
            produced.append((tool, result))
        return produced

    async def read_back(client: Client, produced: list[tuple[str, Any]]) -> list[list[Any]]:
        return [
            [(await client.read_resource(link.uri)).contents[0] for link in links(result)]
            for _tool, result in produced
        ]

    if kind == "in-process":

        async def both(client: Client) -> tuple[Any, Any]:
            produced = await produce(client)
            return produced, await read_back(client, produced)

        produced, contents = run_client(server, mode, both)
    else:
        live = LiveHttp(server)
        try:

            async def apart(writer: Client, reader: Client) -> tuple[Any, Any]:
                produced = await produce(writer)
                return produced, await read_back(reader, produced)

            produced, contents = over(live, apart, mode, mode)
        finally:
            live.stop()

    for (tool, result), read, (_, _, count) in zip(
        produced, contents, PRODUCING_CALLS, strict=True
    ):
        workflow = workflow_of(result)
        files = result.structured_content["files"]
        assert len(files) == len(links(result)) == len(read) == count, tool
        for file, link, content in zip(files, links(result), read, strict=True):
            document_id = file["documentRef"].removeprefix("docItem:")
            assert str(link.uri) == f"docbinder://documents/{document_id}?workflow={workflow}"
            assert (link.name, link.mime_type, link.size) == (
                file["name"],
                file["mimeType"],
                file["size"],
            ), tool
            assert link.annotations is not None and link.annotations.audience == [
                "user",
                "assistant",
            ]
            data = (
                content.text.encode()
                if isinstance(content, TextResourceContents)
                else base64.b64decode(content.blob)
            )
            assert hashlib.sha256(data).hexdigest() == file["sha256"], (tool, file["name"])
            assert content.mime_type == file["mimeType"]


# -- workflow handles --------------------------------------------------------------------------


def test_sessionless_conversations_never_share_a_workflow(http: LiveHttp) -> None:
    async def body(a: Client, b: Client) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        seen["alpha"] = await a.call_tool("write_file", {"name": "alpha.md", "content": "alpha"})
        seen["bravo"] = await b.call_tool("write_file", {"name": "bravo.md", "content": "bravo"})
        handle_a, handle_b = workflow_of(seen["alpha"]), workflow_of(seen["bravo"])
        alpha = DOC_REF.search(first_text(seen["alpha"]))
        bravo = DOC_REF.search(first_text(seen["bravo"]))
        assert alpha and bravo
        seen["a_list"] = await a.call_tool("list_documents", {"workflow": handle_a})
        seen["b_list"] = await b.call_tool("list_documents", {"workflow": handle_b})
        seen["a_bare_list"] = await a.call_tool("list_documents", {})
        seen["a_reads_b"] = await a.call_tool(
            "read_documents", {"documentList": [bravo[0]], "workflow": handle_a}
        )
        seen["b_reads_a"] = await b.call_tool(
            "read_file", {"file_id": alpha[0], "workflow": handle_b}
        )
        seen["b_label"] = await b.call_tool(
            "read_documents", {"documentList": ["docList:writeFile:alpha.md"], "workflow": handle_b}
        )
        seen["a_bare_read"] = await a.call_tool("read_documents", {"documentList": [alpha[0]]})
        seen["a_own"] = await a.call_tool(
            "read_documents", {"documentList": [alpha[0]], "workflow": handle_a}
        )
        seen["resources"] = [(await c.list_resources()).resources for c in (a, b)]
        [link] = links(seen["alpha"])
        seen["a_resource"] = await a.read_resource(link.uri)
        # the document's id alone names no workflow: another conversation reads nothing
        bare_uri = str(link.uri).split("?")[0]
        for reader in (a, b):
            with pytest.raises(MCPError, match="not found"):
                await reader.read_resource(bare_uri)
        # a second producing call without handle is a new conversation: a new workflow
        seen["again"] = await a.call_tool("write_file", {"name": "c.md", "content": "c"})
        seen["joined"] = await a.call_tool(
            "write_file", {"name": "d.md", "content": "d", "workflow": f"workflow: {handle_a}"}
        )
        seen["a_list2"] = await a.call_tool("list_documents", {"workflow": handle_a})
        return seen

    seen = over(http, body, "auto", "auto")
    handle_a, handle_b = workflow_of(seen["alpha"]), workflow_of(seen["bravo"])
    assert handle_a and handle_b and handle_a != handle_b
    a_list, b_list = first_text(seen["a_list"]), first_text(seen["b_list"])
    assert "alpha.md" in a_list and "bravo.md" not in a_list
    assert "bravo.md" in b_list and "alpha.md" not in b_list
    assert [d["name"] for d in seen["a_list"].structured_content["documents"]] == ["alpha.md"]
    bare = seen["a_bare_list"]
    assert workflow_of(bare) is None and bare.structured_content["documents"] == []
    assert "pass the `workflow` id you got" in bare.structured_content["notice"]
    assert "(not_in_workflow)" in first_text(seen["a_reads_b"])
    assert "bravo" not in first_text(seen["a_reads_b"]).split("Unresolved:")[0]
    assert seen["b_reads_a"].is_error and "alpha" not in first_text(seen["b_reads_a"])
    assert seen["b_label"].structured_content["documents"] == []
    bare_read = seen["a_bare_read"]
    lines = first_text(bare_read).splitlines()
    assert lines[1].endswith("(no_active_workflow): no workflow is bound to this run")
    assert lines[-1] == (
        "References resolve in a workflow and this call has none: pass the `workflow` id you "
        "got from the call that produced the file (the `workflow:` line of its answer) as the "
        "`workflow` argument."
    )
    assert bare_read.structured_content["notice"] == lines[-1]
    assert "alpha" in seen["a_own"].structured_content["documents"][0]["text"]
    assert seen["resources"] == [[], []]  # lists do not vary per connection
    [content] = seen["a_resource"].contents
    assert content.text == "alpha"
    assert workflow_of(seen["again"]) not in (handle_a, handle_b)
    assert workflow_of(seen["joined"]) == handle_a
    names = [d["name"] for d in seen["a_list2"].structured_content["documents"]]
    assert names == ["d.md", "alpha.md"]


def test_sessionless_resource_lists_are_the_same_for_every_connection(binder: DocBinder) -> None:
    """On the sessionless revision ``resources/list`` does not vary per connection: every
    client of a principal gets the documents of the configured workflow, whatever workflow its
    own calls work in; a legacy session lists its conversation's."""
    run, _task = _task_result(binder)
    configured = run.context.workflow_id
    live = LiveHttp(DocbinderMcpServer(binder, ALICE, workflow_id=configured))
    try:

        async def body(a: Client, b: Client, legacy: Client) -> dict[str, Any]:
            seen: dict[str, Any] = {"before": await a.list_resources()}
            other = binder.start_new_run(ALICE).context.workflow_id
            # b works in another workflow by its handle; a and legacy write in the configured one
            seen["b wrote"] = await b.call_tool(
                "write_file", {"name": "b.md", "content": "b", "workflow": other}
            )
            seen["a wrote"] = await a.call_tool("write_file", {"name": "a.md", "content": "a"})
            seen["legacy joins"] = await legacy.call_tool("list_documents", {"workflow": other})
            seen["lists"] = [await c.list_resources() for c in (a, b)]
            seen["legacy list"] = await legacy.list_resources()
            return seen

        seen = over(live, body, "auto", "auto", "legacy")
    finally:
        live.stop()
    assert workflow_of(seen["a wrote"]) == configured
    other = workflow_of(seen["b wrote"])
    assert other not in (None, configured)
    names = [r.name for r in seen["before"].resources]
    assert sorted(names) == ["notes.md", "p.png", "rows.csv"]
    first, second = seen["lists"]
    assert first.resources == second.resources
    assert {r.name for r in first.resources} == {*names, "a.md"}
    assert all(str(r.uri).endswith(f"?workflow={configured}") for r in first.resources)
    assert first.cache_scope == second.cache_scope == "private"
    assert [r.name for r in seen["legacy list"].resources] == ["b.md"]  # its session's workflow


async def file_tool_answers(client: Client, file_id: str, handle: str | None) -> dict[str, Any]:
    """What every file-level tool answers ``client`` for ``file_id`` (with ``handle``, if any)."""
    carried = {"workflow": handle} if handle else {}
    calls = {
        "read_file": ("read_file", {"file_id": file_id}),
        "read_file file:": ("read_file", {"file_id": f"file:{file_id}"}),
        "get_file_info": ("get_file_info", {"file_id": file_id}),
        "search named": ("search_in_file_content", {"query": "alpha", "file_ids": [file_id]}),
        "search": ("search_in_file_content", {"query": "alpha"}),
        "list_files": ("list_files", {}),
    }
    return {
        key: await client.call_tool(tool, {**arguments, **carried})
        for key, (tool, arguments) in calls.items()
    }


NAMED = ("read_file", "read_file file:", "get_file_info", "search named")
"""The probes that name the file id: an error, worded as for an unknown id, outside the workflow."""


def check_kept_apart(theirs: dict[str, Any], unknown: dict[str, Any], file_id: str) -> None:
    """``theirs`` (probes of another conversation's ``file_id``) tell nothing of that file."""
    for key in NAMED:
        assert theirs[key].is_error, key
        assert first_text(theirs[key]) == first_text(unknown[key]).replace(UNKNOWN, file_id), key
    for result in theirs.values():  # neither the file's name nor its text
        for told in (first_text(result), str(result.structured_content)):
            assert "alpha.md" not in told and "secret" not in told, told
    assert first_text(theirs["search"]) == "No line contains 'alpha'."
    assert file_id not in {f["fileId"] for f in theirs["list_files"].structured_content["files"]}


@pytest.mark.parametrize("modes", [("auto", "auto"), ("legacy", "legacy")])
def test_two_conversations_never_see_each_others_files_in_any_tool(
    http: LiveHttp, modes: tuple[str, str]
) -> None:
    """Two conversations of one principal, sessionless (each with its handle) or two legacy
    sessions: every file-level tool answers for the other's file id as for an unknown id."""

    async def body(a: Client, b: Client) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        alpha = await a.call_tool("write_file", {"name": "alpha.md", "content": "alpha secret"})
        bravo = await b.call_tool("write_file", {"name": "bravo.md", "content": "bravo"})
        handle_a, handle_b = workflow_of(alpha), workflow_of(bravo)
        seen["ids"] = alpha.meta["docbinder/fileIds"][0], bravo.meta["docbinder/fileIds"][0]
        seen["handles"] = handle_a, handle_b
        seen["b"] = await file_tool_answers(b, seen["ids"][0], handle_b)
        seen["b unknown"] = await file_tool_answers(b, UNKNOWN, handle_b)
        seen["a"] = await file_tool_answers(a, seen["ids"][0], handle_a)
        seen["b bare"] = await file_tool_answers(b, seen["ids"][0], None)
        return seen

    seen = over(http, body, *modes)
    alpha_id, bravo_id = seen["ids"]
    check_kept_apart(seen["b"], seen["b unknown"], alpha_id)
    listed = seen["b"]["list_files"].structured_content["files"]
    assert [f["fileId"] for f in listed] == [bravo_id]
    # the conversation that wrote the file reaches it by its id, in every tool
    own = seen["a"]
    assert first_text(own["read_file"]) == first_text(own["read_file file:"]) == "alpha secret"
    assert not own["get_file_info"].is_error and "alpha.md" in first_text(own["get_file_info"])
    assert "alpha secret" in first_text(own["search named"]) == first_text(own["search"])
    assert [f["fileId"] for f in own["list_files"].structured_content["files"]] == [alpha_id]
    bare = seen["b bare"]
    if modes[0] == "legacy":  # the session is the conversation: its workflow, without handle
        check_kept_apart(bare, seen["b unknown"], alpha_id)
        return
    # sessionless, no handle: no workflow, and one line that says to pass it
    hint = "pass the `workflow` id you got from the call that produced the file"
    for key in ("read_file", "read_file file:", "get_file_info"):
        assert bare[key].is_error and hint in first_text(bare[key]), first_text(bare[key])
        assert first_text(bare[key]).startswith(f"{key.split()[0]} answers only for the files")
    for key in ("search named", "search", "list_files"):
        result = bare[key]
        assert not result.is_error and hint in first_text(result)
        assert result.structured_content["notice"] == first_text(result)
        assert workflow_of(result) is None


@pytest.mark.parametrize("mode", MODES)
def test_a_handle_joins_its_workflow_in_a_conversation(binder: DocBinder, mode: str) -> None:
    first = DocbinderMcpServer(binder, ALICE)
    written = run_client(
        first,
        mode,
        lambda c: c.call_tool("write_file", {"name": "a.txt", "content": "a"}),
    )
    handle = workflow_of(written)
    ref = DOC_REF.search(first_text(written))
    assert handle and ref

    async def body(client: Client) -> tuple[Any, Any, Any]:
        joined = await client.call_tool("list_documents", {"workflow": handle})
        later = await client.call_tool("read_documents", {"documentList": [ref[0]]})
        more = await client.call_tool("write_file", {"name": "b.txt", "content": "b"})
        return joined, later, more

    # another server process of the same store: the conversation joins the handle's workflow
    joined, later, more = run_client(DocbinderMcpServer(binder, ALICE), mode, body)
    assert workflow_of(joined) == workflow_of(later) == workflow_of(more) == handle
    assert "a.txt" in first_text(joined)
    assert later.structured_content["documents"][0]["text"] == "a"
    assert len(binder.list_workflows(ALICE)) == 1


@pytest.mark.parametrize(
    ("value", "handle"),
    [
        (None, None),
        ("", None),
        ("  ", None),
        ("abc-1", "abc-1"),
        (" `workflow: abc-1` ", "abc-1"),
        ("Workflow:abc-1", "abc-1"),
        ('"abc-1"', "abc-1"),
    ],
)
def test_a_handle_is_read_as_a_model_copies_it(value: Any, handle: str | None) -> None:
    assert read_handle(value) == handle


def test_a_handle_that_is_not_text_is_a_tool_error(binder: DocBinder) -> None:
    result = run_client(
        DocbinderMcpServer(binder, ALICE),
        "auto",
        lambda c: c.call_tool("list_documents", {"workflow": 42}),
    )
    assert result.is_error and workflow_of(result) is None
    assert first_text(result).startswith("the `workflow` argument must be text")


def test_legacy_http_sessions_keep_their_workflow_and_a_handle_joins(http: LiveHttp) -> None:
    async def body(one: Client, two: Client) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        seen["one"] = await one.call_tool("write_file", {"name": "one.txt", "content": "1"})
        seen["two"] = await two.call_tool("write_file", {"name": "two.txt", "content": "2"})
        seen["one_list"] = await one.call_tool("list_documents", {})
        seen["two_list"] = await two.call_tool("list_documents", {})
        seen["one_resources"] = (await one.list_resources()).resources
        handle = workflow_of(seen["one"])
        seen["two_joins"] = await two.call_tool("list_documents", {"workflow": handle})
        seen["two_after"] = await two.call_tool("list_documents", {})
        return seen

    seen = over(http, body, "legacy", "legacy")
    one, two = workflow_of(seen["one"]), workflow_of(seen["two"])
    assert one and two and one != two
    assert workflow_of(seen["one_list"]) == one and workflow_of(seen["two_list"]) == two
    assert "two.txt" not in first_text(seen["one_list"])
    assert [r.name for r in seen["one_resources"]] == ["one.txt"]
    assert workflow_of(seen["two_joins"]) == workflow_of(seen["two_after"]) == one
    assert "one.txt" in first_text(seen["two_after"])


@pytest.mark.parametrize("mode", MODES)
def test_a_handle_out_of_reach_is_refused_like_an_unknown_id(binder: DocBinder, mode: str) -> None:
    written = run_client(
        DocbinderMcpServer(binder, ALICE),
        mode,
        lambda c: c.call_tool("write_file", {"name": "secret.txt", "content": "alice only"}),
    )
    handle = workflow_of(written)
    assert handle

    async def body(client: Client) -> list[tuple[str, Any]]:
        answers = []
        for workflow in (handle, UNKNOWN):
            for tool, arguments in (
                ("list_documents", {}),
                ("read_documents", {"documentList": ["docList:writeFile:secret.txt"]}),
                ("write_file", {"name": "x.txt", "content": "x"}),
            ):
                result = await client.call_tool(tool, {**arguments, "workflow": workflow})
                answers.append((workflow, result))
        return answers

    for stranger in (OUTSIDER, CAROL):  # another tenant; another feature instance of the mandate
        answers = run_client(DocbinderMcpServer(binder, stranger), mode, body)
        for (workflow, theirs), (_, unknown) in zip(answers[:3], answers[3:], strict=True):
            assert theirs.is_error and unknown.is_error
            assert first_text(theirs) == first_text(unknown).replace(UNKNOWN, workflow)
            assert theirs.structured_content == {"workflow": None, "error": first_text(theirs)}
            assert "secret" not in first_text(theirs)
        assert first_text(answers[0][1]) == (
            f"workflow {handle} not found; pass the id of a `workflow:` line of this "
            "conversation, or leave `workflow` out to start a new workflow"
        )
        assert binder.list_files(stranger) == []

    # a principal who may read the workflow but not add to it: refused before anything is stored
    refused = run_client(
        DocbinderMcpServer(binder, BOB),
        mode,
        lambda c: c.call_tool("write_file", {"name": "x.txt", "content": "x", "workflow": handle}),
    )
    assert refused.is_error and workflow_of(refused) == handle
    assert "you may read workflow" in first_text(refused)
    assert [f.file_name for f in binder.list_files(BOB)] == ["secret.txt"]

    # joining it to read does not make it the conversation's: a later write without
    # handle stores, in a workflow of its own, as the refusal said it would
    async def joined(client: Client) -> tuple[Any, Any]:
        read = await client.call_tool("list_documents", {"workflow": handle})
        return read, await client.call_tool("write_file", {"name": "own.txt", "content": "o"})

    read, own = run_client(DocbinderMcpServer(binder, BOB), mode, joined)
    assert workflow_of(read) == handle and "secret.txt" in first_text(read)
    assert not own.is_error and workflow_of(own) not in (None, handle)
    assert "own.txt" in [f.file_name for f in binder.list_files(BOB)]


def test_no_principal_evicts_another(binder: DocBinder) -> None:
    tokens = BearerTokens({token_hash("alice"): ALICE, token_hash("eve"): OUTSIDER})
    server = DocbinderMcpServer(
        binder, ALICE, max_runs_per_principal=2, max_conversations_per_principal=2
    )
    bound: list[Principal] = []
    start_run = binder.start_run

    def counting_start_run(principal: Principal, workflow_id: str | None = None) -> Run:
        bound.append(principal)
        return start_run(principal, workflow_id)

    binder.start_run = counting_start_run  # type: ignore[method-assign]
    live = LiveHttp(server, tokens)
    try:

        async def main() -> tuple[Any, Any, Any]:
            async with live.client("legacy", "alice") as alice:
                written = await alice.call_tool("write_file", {"name": "a.txt", "content": "a"})
                handle = workflow_of(written)
                # eve fills her limits many times over: sessions, handles, made-up session ids
                for n in range(6):
                    async with live.client("legacy", "eve") as eve:
                        await eve.call_tool("write_file", {"name": f"{n}.txt", "content": "e"})
                    async with live.client("auto", "eve", **{"Mcp-Session-Id": f"x{n}"}) as eve:
                        made = await eve.call_tool("write_file", {"name": "m.txt", "content": "m"})
                        await eve.call_tool("list_documents", {"workflow": workflow_of(made)})
                del bound[:]
                listed = await alice.call_tool("list_documents", {})
                async with live.client("auto", "alice") as modern:
                    by_handle = await modern.call_tool("list_documents", {"workflow": handle})
                return written, listed, by_handle

        written, listed, by_handle = anyio.run(main)
    finally:
        live.stop()
        binder.start_run = start_run  # type: ignore[method-assign]
    assert workflow_of(listed) == workflow_of(by_handle) == workflow_of(written)
    assert "a.txt" in first_text(listed)
    assert ALICE not in bound  # her session's workflow and her run were kept
    assert len(binder.list_workflows(OUTSIDER)) == 12


# -- error texts -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_error_texts_name_no_storage_internals(
    binder: DocBinder, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = DocbinderMcpServer(binder, ALICE)
    secret = "sqlite:////srv/secret/docbinder.db"

    async def body(client: Client) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        written = await client.call_tool("write_file", {"name": "n.md", "content": "# N"})
        handle = workflow_of(written)
        [link] = links(written)
        item = binder.get_file(ALICE, written.structured_content["files"][0]["fileId"])
        binder.blobs.delete(item.blob_key)
        seen["key"], seen["store"] = item.blob_key, binder.blobs.url
        seen["read_file"] = await client.call_tool("read_file", {"file_id": item.id})
        seen["read_documents"] = await client.call_tool(
            "read_documents", {"documentList": [DOC_REF.findall(first_text(written))[0]]}
        )
        with pytest.raises(MCPError) as missing:
            await client.read_resource(link.uri)
        seen["resource"] = str(missing.value)

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise StorageError(f"metadata store failed: {secret} is locked")

        monkeypatch.setattr(binder, "list_files", broken)
        monkeypatch.setattr(binder, "resolve", broken)
        seen["list_files"] = await client.call_tool("list_files", {"workflow": handle})
        with pytest.raises(MCPError) as faulty:
            await client.read_resource(link.uri)
        seen["faulty_resource"] = str(faulty.value)
        return seen

    seen = run_client(server, mode, body)
    texts = [
        first_text(seen["read_file"]),
        first_text(seen["read_documents"]),
        seen["resource"],
        first_text(seen["list_files"]),
        seen["faulty_resource"],
    ]
    for text in texts:
        assert seen["key"] not in text and seen["store"] not in text and "secret" not in text
    assert first_text(seen["read_file"]).startswith("the stored bytes of this file are missing")
    assert "(blob_missing)" in first_text(seen["read_documents"])
    assert "the stored bytes of this file are missing" in seen["resource"]
    assert first_text(seen["list_files"]).startswith("the store could not complete this request")
    assert "the store could not complete this request" in seen["faulty_resource"]


# -- HTTP host and bearer tokens ------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("192.168.1.5", False),
        ("example.org", False),
    ],
)
def test_only_loopback_serves_without_tokens(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
    if loopback:
        check_http_host(host, None)
    else:
        with pytest.raises(ConfigurationError, match="refusing to serve MCP on non-loopback"):
            check_http_host(host, None)
        check_http_host(host, BearerTokens({token_hash("t"): ALICE}))


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tokens.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "has no [[tokens]] entries"),
        ("tokens = 3", "has no [[tokens]] entries"),
        ('[[tokens]]\nsha256 = "abc"\nuser = "a"\nmandate = "m"\n', "sha256 must be 64 hex"),
        (f'[[tokens]]\nsha256 = "{"a" * 64}"\nmandate = "m"\n', "user and mandate are required"),
        (
            f'[[tokens]]\nsha256 = "{"a" * 64}"\nuser = "a"\nmandate = "m"\nrole = "admin"\n',
            "unknown keys: role",
        ),
        (
            f'[[tokens]]\nsha256 = "{"a" * 64}"\nuser = "a"\nmandate = "m"\n'
            f'[[tokens]]\nsha256 = "{"A" * 64}"\nuser = "b"\nmandate = "m"\n',
            "repeats a token hash",
        ),
        ("[[tokens]\n", "not valid TOML"),
    ],
)
def test_token_file_errors_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        BearerTokens.load(_write(tmp_path, text))


def test_tokens_map_to_principals(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        f'[[tokens]]\nsha256 = "{token_hash("one")}"\nuser = "alice"\nmandate = "m1"\n'
        f'feature_instance = "f1"\n'
        f'[[tokens]]\nsha256 = "{token_hash("two")}"\nuser = "eve"\nmandate = "m2"\n'
        'roles = ["admin"]\n',
    )
    tokens = BearerTokens.load(path)
    one = anyio.run(tokens.verify_token, "one")
    two = anyio.run(tokens.verify_token, "two")
    assert one is not None and two is not None
    assert tokens.principal_for(one) == Principal("alice", "m1", "f1", roles=("member",))
    assert tokens.principal_for(two) == Principal("eve", "m2", None, roles=("admin",))
    assert one.token == ""  # the token itself is not kept
    assert anyio.run(tokens.verify_token, "three") is None
    with pytest.raises(ConfigurationError, match="cannot read"):
        BearerTokens.load(tmp_path / "absent.toml")


# -- command-line checks before serving ----------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["mcp", "--transport", "sse"], "--transport must be stdio or streamable-http, got 'sse'"),
        (["mcp", "--tokens", "t.toml"], "--tokens applies to --transport streamable-http only"),
        (["mcp", "--source", "inbox"], "--source must look like NAME=DIRECTORY, got 'inbox'"),
        (
            ["mcp", "--port", "0", "--transport", "streamable-http"],
            "--port must be from 1 to 65535",
        ),
    ],
)
def test_cli_refuses_bad_options_before_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    from typer.testing import CliRunner

    from docbinder.cli.main import app

    for key in [k for k in os.environ if k.startswith("DOCBINDER_")]:
        monkeypatch.delenv(key)
    logger = logging.getLogger("docbinder")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    try:
        done = CliRunner().invoke(app, ["--home", str(tmp_path / "home"), *args])
    finally:
        logger.handlers[:], logger.level, logger.propagate = saved
    assert done.exit_code == 1
    assert message in done.output


@pytest.mark.parametrize("mode", MODES)
def test_a_tools_call_the_client_cancels_stops_its_conversion(
    binder: DocBinder, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Issue 31: a client that disconnects does not stop its conversion. The SDK's client
    # abandons the call (notifications/cancelled); the server kills the converter.
    import multiprocessing

    from tests import documents

    server = DocbinderMcpServer(binder, ALICE)
    slow = base64.b64encode(documents.slow_docx(100_000)).decode()  # minutes of mammoth
    caplog.set_level(logging.INFO, logger="docbinder.adapters.extract.extractor")

    async def body(client: Client) -> bool:
        written = await client.call_tool(
            "write_file", {"name": "slow.docx", "content": slow, "encoding": "base64"}
        )
        ref = DOC_REF.search(first_text(written))
        assert ref
        with anyio.CancelScope() as scope:

            async def cancel_when_the_converter_runs() -> None:
                while not multiprocessing.active_children():
                    await anyio.sleep(0.01)
                await anyio.sleep(0.3)
                scope.cancel()

            async with anyio.create_task_group() as group:
                group.start_soon(cancel_when_the_converter_runs)
                await client.call_tool("read_documents", {"documentList": [ref[0]]})
        with anyio.fail_after(20):  # the conversion alone would take 30 s
            while "cancelled: the caller is gone" not in caplog.text:
                await anyio.sleep(0.05)
        return scope.cancelled_caught

    assert run_client(server, mode, body)
    assert "cancelled: the caller is gone" in caplog.text


def test_a_connection_closed_during_a_tools_call_stops_its_conversion(
    binder: DocBinder, caplog: pytest.LogCaptureFixture
) -> None:
    # The client goes away with the call in flight: its connection (here the in-process
    # streams) closes without a cancel notification, and the server's handler is cancelled.
    import multiprocessing

    from tests import documents

    server = DocbinderMcpServer(binder, ALICE)
    slow = base64.b64encode(documents.slow_docx(100_000)).decode()
    caplog.set_level(logging.INFO, logger="docbinder.adapters.extract.extractor")
    outcome: list[BaseException] = []

    async def main() -> None:
        async with anyio.create_task_group() as outer:
            async with Client(server.server, mode="legacy") as client:
                written = await client.call_tool(
                    "write_file", {"name": "slow.docx", "content": slow, "encoding": "base64"}
                )
                ref = DOC_REF.search(first_text(written))
                assert ref

                async def call() -> None:
                    try:
                        await client.call_tool("read_documents", {"documentList": [ref[0]]})
                    except Exception as exc:  # the connection went away under the call
                        outcome.append(exc)

                outer.start_soon(call)
                while not multiprocessing.active_children():
                    await anyio.sleep(0.01)
                await anyio.sleep(0.3)
            # the client is closed here, the call still waiting for its answer
            with anyio.fail_after(20):  # the conversion alone would take 30 s
                while "cancelled: the caller is gone" not in caplog.text:
                    await anyio.sleep(0.05)
            outer.cancel_scope.cancel()

    anyio.run(main)
    assert "cancelled: the caller is gone" in caplog.text


def _raw_tools_call(
    http: Any, url: str, headers: dict[str, str], meta: dict[str, Any], call_id: int, **call: Any
) -> Any:
    """A ``tools/call`` as a raw HTTP request (``httpx``), sent but not yet read."""
    routing = {} if not meta else {"Mcp-Method": "tools/call", "Mcp-Name": call["name"]}
    body = {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": {**call, **meta}}
    return http.send(
        http.build_request("POST", url, json=body, headers={**headers, **routing}), stream=True
    )


@pytest.mark.parametrize("era", ["legacy session", "sessionless"])
def test_a_client_that_disconnects_over_http_stops_its_conversion(
    binder: DocBinder, era: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Issue 31 over the real HTTP face: the client closes its connection while its
    # read_documents converts, and sends no cancel notification. A legacy session's
    # request runs in the session's task, which the SDK does not cancel when the
    # connection closes: the converter went on for its whole 30 s budget.
    import multiprocessing

    import httpx

    from tests import documents
    from tests.integration.mcp_http import ACCEPT, INITIALIZE, LEGACY_VERSION

    caplog.set_level(logging.INFO, logger="docbinder.adapters.extract.extractor")
    live = LiveHttp(DocbinderMcpServer(binder, ALICE))
    try:
        with httpx.Client(timeout=60) as http:
            meta: dict[str, Any] = {}
            if era == "legacy session":
                opened = http.post(live.url, json=INITIALIZE, headers=ACCEPT)
                headers = {
                    **ACCEPT,
                    "Mcp-Session-Id": opened.headers["mcp-session-id"],
                    "MCP-Protocol-Version": LEGACY_VERSION,
                }
                initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                http.post(live.url, json=initialized, headers=headers)
            else:
                (version,) = MODERN_PROTOCOL_VERSIONS
                headers = {**ACCEPT, "MCP-Protocol-Version": version}
                meta = {
                    "_meta": {
                        "io.modelcontextprotocol/protocolVersion": version,
                        "io.modelcontextprotocol/clientCapabilities": {},
                        "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "0"},
                    }
                }
            slow = base64.b64encode(documents.slow_docx(100_000)).decode()
            arguments = {"name": "slow.docx", "content": slow, "encoding": "base64"}
            written = _raw_tools_call(
                http, live.url, headers, meta, 2, name="write_file", arguments=arguments
            )
            answer = written.read().decode()
            written.close()
            ref = DOC_REF.search(answer)
            handle = re.search(r"workflow: ([0-9a-f-]{36})", answer)
            assert ref and handle, answer
            reading = _raw_tools_call(
                http,
                live.url,
                headers,
                meta,
                3,
                name="read_documents",
                arguments={"documentList": [ref[0]], "workflow": handle[1]},
            )
            assert reading.status_code == 200
            deadline = time.monotonic() + 30
            while not multiprocessing.active_children():
                assert time.monotonic() < deadline, "no converter process started"
                time.sleep(0.01)
            time.sleep(0.3)
            reading.close()  # the client goes away: the connection closes, nothing else
            closed = time.monotonic()
        while multiprocessing.active_children() and time.monotonic() - closed < 10:
            time.sleep(0.02)
        stopped_after = time.monotonic() - closed
    finally:
        live.stop()
    assert stopped_after < 5, f"the converter ran on {stopped_after:.1f} s after the disconnect"
    assert "cancelled: the caller is gone" in caplog.text


@pytest.mark.parametrize("mode", MODES)
def test_provenance_names_the_request_and_shows_in_structured_content(
    binder: DocBinder, mode: str
) -> None:
    """The JSON-RPC id of ``tools/call`` is the call id; ``get_file_info`` shows the provenance (B9)."""
    server = DocbinderMcpServer(binder, ALICE)

    async def body(client: Client) -> tuple[Any, Any, Any]:
        source = await client.call_tool("write_file", {"name": "data.csv", "content": "a,b\n1,2"})
        handle = workflow_of(source)
        [link] = links(source)
        reference = "docItem:" + str(link.uri).rsplit("/", 1)[1].split("?")[0]
        await client.call_tool("read_documents", {"documentList": reference, "workflow": handle})
        chart = await client.call_tool(
            "write_file", {"name": "chart.txt", "content": "bars", "workflow": handle}
        )
        [chart_link] = links(chart)
        chart_ref = "docItem:" + str(chart_link.uri).rsplit("/", 1)[1].split("?")[0]
        info = await client.call_tool("get_file_info", {"file_id": chart_ref, "workflow": handle})
        return source, chart, info

    _source, _chart, info = run_client(server, mode, body)
    [workflow] = binder.list_workflows(ALICE)
    [first, second] = binder.list_messages(ALICE, workflow.id)
    source_item = binder.get_file(ALICE, first.documents[0].file_id)
    chart_item = binder.get_file(ALICE, second.documents[0].file_id)
    call_id = chart_item.provenance.tool_call_id
    assert chart_item.provenance.tool == "write_file"
    assert call_id is not None and call_id != source_item.provenance.tool_call_id
    assert chart_item.provenance.parents == (source_item.id,)
    assert chart_item.provenance.workflow_id == workflow.id
    [described] = info.structured_content["files"]
    assert described["provenance"] == {
        "tool": "write_file",
        "toolCallId": call_id,
        "argsSha256": chart_item.provenance.args_sha256,
        "runId": chart_item.provenance.run_id,
        "workflowId": workflow.id,
        "messageId": second.id,
        "model": None,
        "parents": [source_item.id],
        "sandboxId": None,
        "sourcePath": None,
    }
    assert source_item.provenance.message_id == first.id
    Draft202012Validator(OUTPUT_SCHEMAS["get_file_info"]).validate(info.structured_content)
    assert f"made from file(s): {source_item.id}" in first_text(info)
    assert f"message: {second.id}" in first_text(info)
