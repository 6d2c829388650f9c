"""``docbinder mcp`` driven by the official MCP client, in both protocol eras.

Every test starts the real command in a subprocess on the embedded default
(SQLite + local disk in a temporary home): over stdio through the SDK's
``stdio_client``, over streamable HTTP on 127.0.0.1 through its
``streamable_http_client``; with the handshake (``ClientSession.initialize``)
and with the sessionless revision (``mcp.Client`` of a URL or of
``StdioServerParameters``, which probes ``server/discover``).
"""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("mcp")

from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from docbinder.integrations.mcp import token_hash
from tests.integration.frameworks import PNG
from tests.integration.shapes import CALLS, RECORD
from tests.unit.test_tools_fixtures import png_bytes

ROOT = Path(__file__).resolve().parents[2]
DOC_REF = re.compile(r"docItem:([0-9a-f-]{36})")
FILE_ID = re.compile(r"file id: ([0-9a-f-]{36})")

BASE_TOOLS = [
    "write_file",
    "render_document",
    "create_chart",
    "read_documents",
    "list_documents",
    "read_file",
    "search_in_file_content",
    "get_file_info",
    "list_files",
]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCBINDER_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _command(home: Path, *args: str, user: str = "alice", mandate: str = "acme") -> list[str]:
    return [
        sys.executable,
        "-m",
        "docbinder",
        "--home",
        str(home),
        "--user",
        user,
        "--mandate",
        mandate,
        *args,
    ]


@asynccontextmanager
async def stdio_session(home: Path, *args: str) -> AsyncIterator[ClientSession]:
    command = _command(home, "mcp", *args)
    params = StdioServerParameters(command=command[0], args=command[1:], env=_env(), cwd=str(ROOT))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with (
        create_mcp_http_client(headers=headers) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class HttpServer:
    """``docbinder mcp --transport streamable-http`` in a subprocess on 127.0.0.1."""

    def __init__(self, home: Path, *args: str, user: str = "alice") -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.process = subprocess.Popen(
            _command(
                home,
                "mcp",
                "--transport",
                "streamable-http",
                "--port",
                str(self.port),
                *args,
                user=user,
            ),
            env=_env(),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                assert self.process.stderr is not None
                pytest.fail(f"server exited: {self.process.stderr.read().decode()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    pytest.fail("the MCP server did not start listening")
                time.sleep(0.1)

    def stop(self) -> str:
        """Stop the server; what it wrote on stderr, its log."""
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        log = ""
        if self.process.stderr is not None:
            log = self.process.stderr.read().decode("utf-8", "replace")
            self.process.stderr.close()
        return log


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    directory = tmp_path / "inbox"
    directory.mkdir()
    (directory / "figures.csv").write_text("region,revenue\nNorth,61\nSouth,48\n")
    return directory


@pytest.fixture
def http_server(home: Path) -> Iterator[HttpServer]:
    server = HttpServer(home)
    yield server
    server.stop()


def text(result: Any) -> str:
    assert result.content and result.content[0].type == "text"
    return str(result.content[0].text)


def ok(result: Any) -> str:
    assert not result.is_error, text(result)
    return text(result)


def file_id(result: Any) -> str:
    match = FILE_ID.search(text(result))
    assert match, text(result)
    return match[1]


def workflow_of(result: Any) -> str:
    """The workflow id of the ``workflow: <id>`` block of a result (and its structure)."""
    line = str(result.content[1].text)
    assert re.fullmatch(r"workflow: [0-9a-f-]{36}", line), line
    workflow = line.removeprefix("workflow: ")
    assert result.structured_content["workflow"] == workflow
    return workflow


def doc_ref(result_text: str) -> str:
    match = DOC_REF.search(result_text)
    assert match, result_text
    return match[0]


# -- the shared scenario ---------------------------------------------------------------------


async def produce_and_consume(session: ClientSession, home: Path) -> None:
    """Tools and resources end to end: write, read back in sloppy shapes, PDF, PNG, misses, errors."""
    written = ok(
        await session.call_tool("write_file", {"name": "notes.md", "content": "# Notes\nalpha"})
    )
    assert written.startswith("Wrote 'notes.md' (13 bytes)\n  documentList ref: docItem:")
    ref = doc_ref(written)
    document_id = ref.removeprefix("docItem:")

    for shape in (
        f'```json\n["{ref}"]\n```',
        {"documents": [{"id": document_id, "name": "notes.md"}]},
        document_id.upper(),
    ):
        read = await session.call_tool("read_documents", {"documentList": shape})
        body = ok(read)
        assert body.splitlines()[0] == "Read 1 document(s); 0 unresolved.", shape
        assert "# Notes\nalpha" in body

    # PDF: rendered, then read as page text and as a resource blob
    rendered = ok(
        await session.call_tool(
            "render_document",
            {"markdown": "# Plan\n\nShip the bridge in May.", "name": "plan", "formats": ["pdf"]},
        )
    )
    pdf_ref = doc_ref(rendered)
    pdf_read = ok(await session.call_tool("read_documents", {"documentList": [pdf_ref]}))
    assert "(application/pdf," in pdf_read and "[page 1]" in pdf_read
    assert "Ship the bridge in May." in pdf_read

    # PNG: written as base64, read back as MCP image content
    png = png_bytes((10, 120, 200), size=8)
    png_written = ok(
        await session.call_tool(
            "write_file",
            {"name": "dot.png", "content": base64.b64encode(png).decode(), "encoding": "base64"},
        )
    )
    png_read = await session.call_tool(
        "read_documents", {"documentList": f"[{doc_ref(png_written)}]"}
    )
    assert not png_read.is_error
    [image] = [c for c in png_read.content if c.type == "image"]
    assert image.mime_type == "image/png"
    assert base64.b64decode(image.data) == png

    # an unresolved reference: reason and the valid references
    missing = "docItem:00000000-0000-4000-8000-000000000000"
    miss = ok(await session.call_tool("read_documents", {"documentList": [ref, missing]}))
    lines = miss.splitlines()
    assert lines[0] == "Read 1 document(s); 1 unresolved."
    assert (
        f"Unresolved: {missing} (not_in_workflow): no document with this reference in the "
        "active workflow"
    ) in lines
    assert lines[-1].startswith("Valid references: ") and ref in lines[-1]

    # resources: every document listed with MIME type and size; text and blob reads
    listing = await session.list_resources()
    by_name = {r.name: r for r in listing.resources}
    assert {"notes.md", "plan.pdf", "dot.png"} <= set(by_name)
    assert str(by_name["notes.md"].uri).startswith(f"docbinder://documents/{document_id}?workflow=")
    assert (by_name["notes.md"].mime_type, by_name["notes.md"].size) == ("text/markdown", 13)
    assert (by_name["dot.png"].mime_type, by_name["dot.png"].size) == ("image/png", len(png))
    [note] = (await session.read_resource(by_name["notes.md"].uri)).contents
    assert note.text == "# Notes\nalpha"
    [pdf] = (await session.read_resource(by_name["plan.pdf"].uri)).contents
    assert base64.b64decode(pdf.blob).startswith(b"%PDF")
    [dot] = (await session.read_resource(by_name["dot.png"].uri)).contents
    assert base64.b64decode(dot.blob) == png
    [template] = (await session.list_resource_templates()).resource_templates
    assert template.uri_template == "docbinder://documents/{documentId}{?workflow}"
    with pytest.raises(MCPError, match="not found"):
        await session.read_resource(f"docbinder://documents/{missing.removeprefix('docItem:')}")

    # arguments as a model shapes them (issue 20), read back through the tools
    results = {key: await session.call_tool(tool, args) for key, tool, args in CALLS}
    assert [k for k, r in results.items() if r.is_error] == ["wrong"]
    assert "is not a PNG image" in text(results["wrong"])
    data = ok(await session.call_tool("read_file", {"file_id": file_id(results["json"])}))
    assert json.loads(data) == RECORD
    rows = ok(await session.call_tool("read_file", {"file_id": file_id(results["csv"])}))
    assert rows == "region,revenue\r\nNorth,61\r\n"
    images = await session.call_tool(
        "read_documents",
        {"documentList": [doc_ref(text(results["chart"])), doc_ref(text(results["png"]))]},
    )
    chart_png, uri_png = [base64.b64decode(c.data) for c in images.content if c.type == "image"]
    assert chart_png.startswith(b"\x89PNG") and uri_png == PNG
    assert re.findall(r"Rendered '(plan\.\w+)'", text(results["formats"])) == [
        "plan.pdf",
        "plan.html",
    ]

    # tool errors: one line, no traceback, no internal path
    for name, arguments in (
        ("read_file", {"file_id": "00000000-0000-4000-8000-00000000beef"}),
        ("read_file", {"file_id": "x", "path": "/etc/passwd"}),
        ("write_file", {"name": "a.txt", "content": "x", "encoding": "hex"}),
        ("create_chart", {"kind": "pie", "series": []}),
        ("no_such_tool", {}),
    ):
        failed = await session.call_tool(name, arguments)
        assert failed.is_error, (name, arguments)
        message = text(failed)
        assert "\n" not in message and "Traceback" not in message
        assert str(home) not in message and str(ROOT) not in message


# -- stdio -----------------------------------------------------------------------------------


def test_stdio_tools_resources_and_errors(home: Path, inbox: Path) -> None:
    async def main() -> None:
        async with stdio_session(home, "--source", f"inbox={inbox}") as session:
            tools = (await session.list_tools()).tools
            assert [t.name for t in tools] == [
                "write_file",
                "download_from_data_source",
                *BASE_TOOLS[1:],
            ]
            for tool in tools:
                assert tool.description and tool.input_schema["type"] == "object"
            read_documents = next(t for t in tools if t.name == "read_documents")
            assert read_documents.annotations is not None
            assert read_documents.annotations.read_only_hint is True

            downloaded = ok(
                await session.call_tool(
                    "download_from_data_source", {"service": "inbox", "path": "figures.csv"}
                )
            )
            assert downloaded.startswith("Downloaded 'figures.csv' (")
            await produce_and_consume(session, home)

            workflows = ok(await session.call_tool("list_documents", {})).splitlines()[0]
            assert re.fullmatch(r"Active workflow: [0-9a-f-]{36}", workflows)

    anyio.run(main)


def test_stdio_joins_the_given_workflow(home: Path) -> None:
    created = subprocess.run(
        _command(home, "--json", "workflow", "new"),
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    workflow_id = json.loads(created.stdout)["id"]

    async def main() -> tuple[str, str]:
        async with stdio_session(home, "--workflow", workflow_id) as session:
            written = ok(await session.call_tool("write_file", {"name": "a.txt", "content": "a"}))
            listed = ok(await session.call_tool("list_documents", {}))
        return written, listed

    written, listed = anyio.run(main)
    assert listed.splitlines()[0] == f"Active workflow: {workflow_id}"
    assert doc_ref(written) in listed
    shown = subprocess.run(
        _command(home, "--json", "workflow", "show", workflow_id),
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert doc_ref(written).removeprefix("docItem:") in shown.stdout


def test_stdio_refuses_a_workflow_the_caller_may_not_read(home: Path) -> None:
    done = subprocess.run(
        _command(home, "mcp", "--workflow", "00000000-0000-4000-8000-000000000000"),
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert done.stderr.strip() == ("error: workflow 00000000-0000-4000-8000-000000000000 not found")


def test_stdio_server_with_an_empty_environment_serves_the_store_named_by_home(
    tmp_path: Path,
) -> None:
    """The client passes no variables (the SDK adds only HOME, PATH, USER, ...): the
    user's XDG_DATA_HOME and DOCBINDER_* stay behind, ``--home`` names the store."""
    store = tmp_path / "store"
    notes = tmp_path / "notes.txt"
    notes.write_text("from the shell\n", encoding="utf-8")
    shell = {**_env(), "XDG_DATA_HOME": str(tmp_path / "shell-data")}

    def cli(*args: str) -> Any:
        done = subprocess.run(
            [*_command(store, "--json", *args)],
            env=shell,
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(done.stdout)

    # Over MCP a file is reached in its workflow: the shell attaches it to one.
    workflow = cli("workflow", "new")["id"]
    attached_id = cli("attach", "--workflow", workflow, str(notes))["fileId"]
    log = tmp_path / "server.log"

    async def file_info(args: list[str], env: dict[str, str]) -> tuple[bool, str]:
        # ``python -m`` from the checkout runs this checkout's code without PYTHONPATH.
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "docbinder", *args, "mcp"], env=env, cwd=str(ROOT)
        )
        with log.open("w", encoding="utf-8") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                info = await session.call_tool(
                    "get_file_info", {"file_id": attached_id, "workflow": workflow}
                )
        return info.is_error, text(info)

    identity = ["--user", "alice", "--mandate", "acme"]
    failed, info = anyio.run(file_info, ["--home", str(store), *identity], {})
    assert not failed, info
    assert "notes.txt" in info
    assert log.read_text(encoding="utf-8").splitlines()[0] == (
        "docbinder MCP server on stdio as user alice of mandate acme; "
        f"metadata sqlite:///{store / 'docbinder.db'}, blobs {(store / 'blobs').as_uri()}; "
        "workflow: a new one at the first producing call"
    )
    # Without the option the same client reaches the platform default under HOME: not the
    # store the shell's CLI wrote to.
    bare_home = tmp_path / "client-home"
    failed, info = anyio.run(file_info, identity, {"HOME": str(bare_home)})
    assert failed and "not found" in info
    assert f"metadata sqlite:///{bare_home}{os.sep}" in log.read_text(encoding="utf-8")


# -- streamable HTTP -------------------------------------------------------------------------


def test_http_tools_resources_and_errors(http_server: HttpServer, home: Path) -> None:
    async def main() -> None:
        async with http_session(http_server.url) as session:
            assert [t.name for t in (await session.list_tools()).tools] == BASE_TOOLS
            await produce_and_consume(session, home)

    anyio.run(main)


def test_http_concurrent_sessions_get_their_own_workflows(http_server: HttpServer) -> None:
    results: dict[str, tuple[str, str, str]] = {}

    async def one(name: str, started: anyio.Event, other: anyio.Event) -> None:
        async with http_session(http_server.url) as session:
            written = ok(
                await session.call_tool("write_file", {"name": f"{name}.txt", "content": name})
            )
            started.set()
            await other.wait()  # both sessions are open at the same time
            listed = ok(await session.call_tool("list_documents", {}))
            results[name] = (written, listed, "")
            peer = "b" if name == "a" else "a"
            while peer not in results:
                await anyio.sleep(0.01)
            foreign = doc_ref(results[peer][0])
            read = ok(await session.call_tool("read_documents", {"documentList": [foreign]}))
            results[name] = (written, listed, read)

    async def main() -> None:
        a_started, b_started = anyio.Event(), anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(one, "a", a_started, b_started)
            group.start_soon(one, "b", b_started, a_started)

    anyio.run(main)
    (a_written, a_listed, a_read), (b_written, b_listed, b_read) = results["a"], results["b"]
    a_workflow, b_workflow = a_listed.splitlines()[0], b_listed.splitlines()[0]
    assert a_workflow.startswith("Active workflow: ") and a_workflow != b_workflow
    assert doc_ref(a_written) in a_listed and doc_ref(b_written) not in a_listed
    assert doc_ref(b_written) in b_listed and doc_ref(a_written) not in b_listed
    assert f"Unresolved: {doc_ref(b_written)} (not_in_workflow)" in a_read
    assert f"Unresolved: {doc_ref(a_written)} (not_in_workflow)" in b_read


def test_stdio_handles_carry_a_workflow_across_server_processes(home: Path) -> None:
    """A host that starts a new server process per call (LangChain's default client) keeps
    its files: each answer names the workflow, the next process joins it by that handle."""

    def params(mandate: str = "acme") -> StdioServerParameters:
        command = _command(home, "mcp", mandate=mandate)
        return StdioServerParameters(
            command=command[0], args=command[1:], env=_env(), cwd=str(ROOT)
        )

    async def call(mode: str, tool: str, arguments: dict[str, Any]) -> Any:
        async with Client(params(), mode=mode) as client:  # one server process per call
            return await client.call_tool(tool, arguments)

    async def read_link(uri: str, mandate: str = "acme") -> Any:
        """``resources/read`` as the first and only request of a new server process."""
        async with Client(params(mandate)) as client:
            try:
                return await client.read_resource(uri)
            except MCPError as exc:
                return str(exc)

    async def main() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        seen["written"] = await call(
            "legacy", "write_file", {"name": "notes.md", "content": "# Notes\nalpha"}
        )
        handle = workflow_of(seen["written"])
        ref = doc_ref(text(seen["written"]))
        seen["read"] = await call(
            "auto", "read_documents", {"documentList": [ref], "workflow": handle}
        )
        seen["more"] = await call(
            "legacy", "write_file", {"name": "more.md", "content": "more", "workflow": handle}
        )
        seen["bare"] = await call("auto", "read_documents", {"documentList": [ref]})
        other = await call("auto", "write_file", {"name": "other.md", "content": "other"})
        seen["bare_handle"] = workflow_of(other)
        seen["listed"] = await call("auto", "list_documents", {"workflow": handle})
        [link] = [c for c in seen["written"].content if c.type == "resource_link"]
        uri = str(link.uri)
        seen["resource"] = await read_link(uri)
        seen["tenant"] = await read_link(uri, mandate="globex")
        document_id = uri.removeprefix("docbinder://documents/").split("?")[0]
        seen["other_workflow"] = await read_link(uri.replace(handle, seen["bare_handle"]))
        seen["unknown"] = await read_link(uri.replace(document_id, "0" * 8 + document_id[8:]))
        return seen

    seen = anyio.run(main)
    handle = workflow_of(seen["written"])
    assert "# Notes\nalpha" in ok(seen["read"]) and workflow_of(seen["read"]) == handle
    assert workflow_of(seen["more"]) == handle
    assert "(no_active_workflow)" in ok(seen["bare"])
    assert "pass the `workflow` id you got" in ok(seen["bare"]).splitlines()[-1]
    listed = ok(seen["listed"])
    assert "notes.md" in listed and "more.md" in listed
    # the link names its workflow: a new process reads it without joining first (ADR 0062)
    assert str(next(c for c in seen["written"].content if c.type == "resource_link").uri).endswith(
        f"?workflow={handle}"
    )
    [content] = seen["resource"].contents
    assert content.text == "# Notes\nalpha"
    # another tenant, another workflow in the URI, an unknown id: one answer, nothing read
    refusals = [seen["tenant"], seen["other_workflow"], seen["unknown"]]
    assert all(isinstance(r, str) and "not found" in r for r in refusals), refusals
    assert len({r.split(" not found")[1] for r in refusals}) == 1


def test_stdio_conversations_reach_only_their_own_workflows_files(home: Path) -> None:
    """Two stdio processes on one store are two conversations of one user: neither reaches
    the other's files by file id in any tool, until it joins that workflow by its handle."""

    async def main() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with stdio_session(home) as a:
            seen["alpha"] = await a.call_tool(
                "write_file", {"name": "alpha.md", "content": "alpha secret"}
            )
        alpha_id, handle_a = file_id(seen["alpha"]), workflow_of(seen["alpha"])
        command = _command(home, "mcp")
        params = StdioServerParameters(
            command=command[0], args=command[1:], env=_env(), cwd=str(ROOT)
        )
        async with Client(params) as b:
            seen["bravo"] = await b.call_tool("write_file", {"name": "bravo.md", "content": "b"})
            handle_b = workflow_of(seen["bravo"])
            for carried in (handle_b, handle_a):
                for tool, arguments in (
                    ("read_file", {"file_id": alpha_id}),
                    ("get_file_info", {"file_id": alpha_id}),
                    ("search_in_file_content", {"query": "secret", "file_ids": [alpha_id]}),
                    ("search_in_file_content", {"query": "secret"}),
                    ("list_files", {}),
                ):
                    seen[(carried, tool, len(arguments))] = await b.call_tool(
                        tool, {**arguments, "workflow": carried}
                    )
        return seen

    seen = anyio.run(main)
    alpha_id, handle_a = file_id(seen["alpha"]), workflow_of(seen["alpha"])
    handle_b = workflow_of(seen["bravo"])
    for tool, count in (("read_file", 1), ("get_file_info", 1), ("search_in_file_content", 2)):
        theirs = seen[(handle_b, tool, count)]
        assert theirs.is_error and text(theirs) == f"file {alpha_id} not found", tool
    assert ok(seen[(handle_b, "search_in_file_content", 1)]) == "No line contains 'secret'."
    assert "alpha.md" not in ok(seen[(handle_b, "list_files", 0)])
    # joined by its handle, the other process reaches the file as its writer did
    assert ok(seen[(handle_a, "read_file", 1)]) == "alpha secret"
    assert "alpha.md" in ok(seen[(handle_a, "get_file_info", 1)])
    assert "alpha secret" in ok(seen[(handle_a, "search_in_file_content", 2)])
    assert "alpha.md" in ok(seen[(handle_a, "list_files", 0)])


def test_http_sessionless_conversations_stay_apart(http_server: HttpServer) -> None:
    """Two conversations of ``Client(url)`` (the 2026-07-28 revision, no session) on one
    server: each has its own workflow, named in every answer, and sees only its files."""

    async def main() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with Client(http_server.url) as a, Client(http_server.url) as b:
            seen["alpha"] = await a.call_tool("write_file", {"name": "alpha.md", "content": "a"})
            seen["bravo"] = await b.call_tool("write_file", {"name": "bravo.md", "content": "b"})
            for name, client in (("alpha", a), ("bravo", b)):
                seen[f"{name} list"] = await client.call_tool(
                    "list_documents", {"workflow": workflow_of(seen[name])}
                )
            seen["a reads bravo"] = await a.call_tool(
                "read_documents",
                {
                    "documentList": [doc_ref(text(seen["bravo"]))],
                    "workflow": workflow_of(seen["alpha"]),
                },
            )
            seen["resources"] = (await a.list_resources()).resources
            alpha_id, handle_b = file_id(seen["alpha"]), workflow_of(seen["bravo"])
            for tool, arguments in (
                ("read_file", {"file_id": alpha_id}),
                ("get_file_info", {"file_id": f"file:{alpha_id}"}),
                ("search_in_file_content", {"query": "a", "file_ids": [alpha_id]}),
                ("list_files", {}),
                ("search_in_file_content", {"query": "a"}),
            ):
                seen[f"b {tool} {sorted(arguments)}"] = await b.call_tool(
                    tool, {**arguments, "workflow": handle_b}
                )
        return seen

    seen = anyio.run(main)
    alpha_id = file_id(seen["alpha"])
    probes = {key: value for key, value in seen.items() if key.startswith("b ")}
    for key, result in probes.items():
        assert alpha_id not in text(result) or text(result) == f"file {alpha_id} not found", key
        assert "alpha.md" not in text(result), key
    assert text(probes["b read_file ['file_id']"]) == f"file {alpha_id} not found"
    assert "bravo.md" in ok(probes["b list_files []"])
    assert ok(probes["b search_in_file_content ['query']"]) == "No line contains 'a'."
    assert workflow_of(seen["alpha"]) != workflow_of(seen["bravo"])
    alpha_list, bravo_list = ok(seen["alpha list"]), ok(seen["bravo list"])
    assert "1 document(s)" in alpha_list and "alpha.md" in alpha_list
    assert "1 document(s)" in bravo_list and "bravo.md" in bravo_list
    assert "(not_in_workflow)" in ok(seen["a reads bravo"])
    assert seen["resources"] == []


def test_http_storage_faults_are_in_the_server_log_and_not_in_the_answers(home: Path) -> None:
    """A missing blob answers the client with a fixed sentence; the server's log (stderr, at
    the default verbosity) has the cause. The first log line says where workflows come from."""
    server = HttpServer(home)
    blobs = home / "blobs"
    content = "".join(f"row {n} of a report too large for the inline tier\n" for n in range(2000))

    async def main() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with Client(server.url) as client:
            written = await client.call_tool("write_file", {"name": "big.txt", "content": content})
            [file] = written.structured_content["files"]
            handle = written.structured_content["workflow"]
            [blob] = blobs.glob(f"*/{file['fileId']}")  # the local disk store's file of the blob
            blob.unlink()
            seen["read_file"] = await client.call_tool(
                "read_file", {"file_id": file["fileId"], "workflow": handle}
            )
            [link] = [c for c in written.content if c.type == "resource_link"]
            with pytest.raises(MCPError) as missing:
                await client.read_resource(link.uri)
            seen["resource"] = str(missing.value)
            seen["file id"] = file["fileId"]
        return seen

    try:
        seen = anyio.run(main)
    finally:
        log = server.stop()
    answers = [text(seen["read_file"]), seen["resource"]]
    for answer in answers:
        assert "the stored bytes of this file are missing" in answer
        assert str(blobs) not in answer and blobs.as_uri() not in answer
    assert seen["read_file"].is_error
    lines = log.splitlines()
    assert lines[0].endswith(
        "workflow: a new one per session, and per sessionless producing call without `workflow`"
    )
    faults = [line for line in lines[1:] if "failed" in line and seen["file id"] in line]
    assert any("tool read_file failed" in line for line in faults), log
    assert any("MCP request failed" in line for line in faults), log


def test_non_loopback_host_without_tokens_is_refused(home: Path) -> None:
    done = subprocess.run(
        _command(home, "mcp", "--transport", "streamable-http", "--host", "0.0.0.0"),
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert done.stderr.startswith(
        "error: refusing to serve MCP on non-loopback host '0.0.0.0' without bearer tokens"
    )


@pytest.fixture
def token_server(home: Path, tmp_path: Path) -> Iterator[HttpServer]:
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        "[[tokens]]\n"
        f'sha256 = "{token_hash("alice-token")}"\n'
        'user = "alice"\nmandate = "acme"\nroles = ["member"]\n\n'
        "[[tokens]]\n"
        f'sha256 = "{token_hash("eve-token")}"\n'
        'user = "eve"\nmandate = "other"\nroles = ["admin"]\n'
    )
    # the CLI identity (mallory) must not be what a token request acts as
    server = HttpServer(home, "--tokens", str(tokens), user="mallory")
    yield server
    server.stop()


def test_http_bearer_tokens(token_server: HttpServer) -> None:
    url = token_server.url
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "0"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    with httpx.Client(trust_env=False) as raw:
        assert raw.post(url, json=initialize, headers=headers).status_code == 401
        wrong = {**headers, "Authorization": "Bearer not-a-token"}
        assert raw.post(url, json=initialize, headers=wrong).status_code == 401

    async def main() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with http_session(url, "alice-token") as alice:
            produced = await alice.call_tool(
                "write_file", {"name": "secret.txt", "content": "acme only"}
            )
            written, handle = ok(produced), workflow_of(produced)
            file_id = FILE_ID.search(written)
            assert file_id
            seen["file id"] = file_id[1]
            seen["info"] = ok(await alice.call_tool("get_file_info", {"file_id": file_id[1]}))
            [resource] = (await alice.list_resources()).resources
            async with http_session(url, "eve-token") as eve:
                seen["bare read_file"] = await eve.call_tool("read_file", {"file_id": file_id[1]})
                ok(await eve.call_tool("write_file", {"name": "own.txt", "content": "eve's"}))
                seen["read_file"] = await eve.call_tool("read_file", {"file_id": file_id[1]})
                seen["files"] = ok(await eve.call_tool("list_files", {}))
                seen["documents"] = ok(
                    await eve.call_tool("read_documents", {"documentList": [doc_ref(written)]})
                )
                for workflow in (handle, "00000000-0000-4000-8000-000000000000"):
                    seen[workflow == handle] = await eve.call_tool(
                        "list_documents", {"workflow": workflow}
                    )
                seen["resources"] = (await eve.list_resources()).resources
                with pytest.raises(MCPError, match="not found"):
                    await eve.read_resource(resource.uri)
        return seen

    seen = anyio.run(main)
    assert "created by: alice" in seen["info"]
    assert seen["read_file"].is_error
    assert text(seen["read_file"]) == f"file {seen['file id']} not found"
    # before eve's first file her session has no workflow: the answer says to pass one
    assert seen["bare read_file"].is_error and "secret" not in text(seen["bare read_file"])
    assert text(seen["bare read_file"]).startswith("read_file answers only for the files of")
    assert "own.txt" in seen["files"] and "secret" not in seen["files"]
    assert "(not_in_workflow)" in seen["documents"]  # not a document of eve's workflow
    theirs, unknown = text(seen[True]), text(seen[False])  # alice's handle, an unknown one
    assert seen[True].is_error and seen[False].is_error
    assert theirs.split(" ", 2)[2] == unknown.split(" ", 2)[2]
    assert theirs.startswith("workflow ") and "secret" not in theirs
    assert [r.name for r in seen["resources"]] == ["own.txt"]


def test_ctrl_c_stops_the_stdio_server_while_its_input_stays_open(home: Path) -> None:
    """A terminal's Ctrl-C ends the server at once (exit 130), not at the next input line."""
    import signal

    process = subprocess.Popen(
        _command(home, "mcp"),
        env=_env(),
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stderr is not None and process.stdin is not None
        assert process.stdout is not None
        first = process.stderr.readline()
        assert b"docbinder MCP server on stdio" in first
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "terminal", "version": "1"},
            },
        }
        process.stdin.write(json.dumps(hello).encode() + b"\n")
        process.stdin.flush()
        assert b'"id":1' in process.stdout.readline().replace(b" ", b"")  # serving, reading input
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 130
        assert b"error: interrupted" in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        assert process.stdin is not None
        process.stdin.close()
