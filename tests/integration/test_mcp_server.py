"""The MCP server in-process, through the SDK's own ``mcp.Client`` (both protocol eras).

The end-to-end transports are in ``tests/e2e/test_mcp.py``; these tests cover
the caps, workflow binding and token handling on the in-memory binder.
"""

from __future__ import annotations

import base64
import logging
import os
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from jsonschema import Draft202012Validator
from mcp import Client
from mcp.shared.exceptions import MCPError

from docbinder.application import DocBinder, Run
from docbinder.domain.errors import ConfigurationError
from docbinder.domain.model import Principal
from docbinder.integrations.mcp import (
    BearerTokens,
    DocbinderMcpServer,
    check_http_host,
    is_loopback,
    token_hash,
)
from docbinder.tools import TaskResult, persist_task_result
from docbinder.toolset import file_info_text
from tests.integration.shapes import CALLS, CHARTJS, check_stored
from tests.unit.conftest import make_memory_binder
from tests.unit.test_tools_fixtures import ALICE, png_bytes

OUTSIDER = Principal("eve", "m2", None, roles=("admin",))
MODES = ["legacy", "auto"]


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


@pytest.mark.parametrize("mode", MODES)
def test_one_workflow_per_session_shared_by_its_calls(binder: DocBinder, mode: str) -> None:
    server = DocbinderMcpServer(binder, ALICE)

    async def body(client: Client) -> tuple[str, str]:
        written = await client.call_tool("write_file", {"name": "a.txt", "content": "a"})
        listed = await client.call_tool("list_documents", {})
        return first_text(written), first_text(listed)

    written, listed = run_client(server, mode, body)
    ref = re.search(r"docItem:[0-9a-f-]{36}", written)
    assert ref and ref[0] in listed
    [workflow] = binder.list_workflows(ALICE)
    assert listed.splitlines()[0] == f"Active workflow: {workflow.id}"


@pytest.mark.parametrize("mode", MODES)
def test_resource_reads_are_capped(binder: DocBinder, mode: str) -> None:
    server = DocbinderMcpServer(binder, ALICE, max_resource_bytes=10)

    async def body(client: Client) -> None:
        await client.call_tool("write_file", {"name": "small.txt", "content": "0123456789"})
        await client.call_tool("write_file", {"name": "big.txt", "content": "0123456789A"})
        resources = {r.name: r for r in (await client.list_resources()).resources}
        [small] = (await client.read_resource(resources["small.txt"].uri)).contents
        assert small.text == "0123456789"
        with pytest.raises(MCPError, match="has 11 bytes, more than the 10-byte limit"):
            await client.read_resource(resources["big.txt"].uri)
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
    assert [c.type for c in read.content] == ["text"]
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
    assert binder.list_files(OUTSIDER) == []


def test_tool_list_carries_schemas_and_hints(binder: DocBinder) -> None:
    server = DocbinderMcpServer(binder, ALICE)

    async def body(client: Client) -> Any:
        return (await client.list_tools()).tools

    tools = {t.name: t for t in run_client(server, "legacy", body)}
    assert tools["write_file"].input_schema["required"] == ["name", "content", "encoding"]
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

    # another tenant, in its own workflow: nothing of alice's, whatever the shape
    answers = run_client(DocbinderMcpServer(binder, OUTSIDER), mode, body)
    # the same user in another workflow: her file ids work, the references do not
    elsewhere = run_client(DocbinderMcpServer(binder, ALICE), mode, body)
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
    assert [first_text(a) for a in answers[4:]] == [f"file {notes.id} not found"] * 4
    assert [first_text(a) for a in elsewhere[4:]] == ["# Notes\nalpha", file_info_text(notes)] * 2


@pytest.mark.parametrize("mode", MODES)
def test_plain_file_ids_work_as_before(binder: DocBinder, mode: str) -> None:
    server = DocbinderMcpServer(binder, ALICE)
    # a file of the user outside the session's workflow
    stored = binder.start_run(ALICE).store_file("old.txt", b"kept").item

    async def body(client: Client) -> list[Any]:
        return [
            await client.call_tool("read_file", {"file_id": stored.id}),
            await client.call_tool("get_file_info", {"file_id": stored.id}),
            await client.call_tool("read_file", {"file_id": "not-a-file"}),
            await client.call_tool("read_file", {"file_id": "docItem:bad/id"}),
        ]

    read, info, absent, rejected = run_client(server, mode, body)
    assert first_text(read) == "kept" and read.meta["docbinder/documentIds"] == []
    assert first_text(info) == file_info_text(binder.get_file(ALICE, stored.id))
    assert absent.is_error and first_text(absent) == "file not-a-file not found"
    assert rejected.is_error
    assert first_text(rejected).startswith("no document found for 'docItem:bad/id': ")
    assert "(rejected_input): not a usable document reference: invalid_id" in first_text(rejected)


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
