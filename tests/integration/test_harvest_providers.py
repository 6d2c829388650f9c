"""Provider-hosted containers: OpenAI container files and Anthropic code-execution output files,
harvested through the official ``openai`` and ``anthropic`` SDKs.

No network: each SDK's ``base_url`` points at a local HTTP server on 127.0.0.1 (a free
port) that answers with the response shapes the providers document (OpenAI API reference:
Responses, Containers, Container Files; Anthropic docs: code execution tool, Files API).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

import anthropic
import openai
import pytest

from docbinder.application import DocBinder
from docbinder.domain.model import Principal
from docbinder.harvest import harvest, rewrite_links
from docbinder.harvest.anthropic_files import AnthropicCodeExecutionFiles, output_file_ids
from docbinder.harvest.openai_containers import OpenAIContainerFiles, container_files_in_response
from docbinder.toolset import DocbinderToolset
from tests.docs.examples import ROOT, assert_output, parse
from tests.integration.http_live import memory_binder

ALICE = Principal("alice", "acme", "support", ("member",))
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24 + b"chart-bytes" * 2000
CSV = b"region,total\nnorth,10\nsouth,7\n"
NOW = int(datetime(2026, 12, 2, tzinfo=UTC).timestamp())


class Provider(BaseHTTPRequestHandler):
    """Answers like the OpenAI and Anthropic APIs for the routes the tests use."""

    routes: ClassVar[dict[tuple[str, str], tuple[int, str, bytes]]] = {}
    seen: ClassVar[list[tuple[str, str, dict[str, str]]]] = []

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _answer(self, method: str) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        self.seen.append((method, self.path, {k.lower(): v for k, v in self.headers.items()}))
        status, kind, body = self.routes.get(
            (method, parts.path),
            (
                404,
                "application/json",
                json.dumps(
                    {"error": {"message": "no such route", "type": "invalid_request_error"}}
                ).encode(),
            ),
        )
        query = parse_qs(parts.query)
        if (
            parts.path.endswith("/files")
            and "limit" not in query
            and method == "GET"
            and "containers" in parts.path
        ):
            status, body = 400, b'{"error": {"message": "limit expected"}}'
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._answer("GET")

    def do_POST(self) -> None:
        self._answer("POST")


def as_json(value: object, status: int = 200) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(value).encode()


@pytest.fixture
def server() -> Iterator[str]:
    Provider.routes = {}
    Provider.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def binder() -> DocBinder:
    return memory_binder()


def container_file(file_id: str, path: str, size: int, source: str) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "container.file",
        "created_at": NOW,
        "bytes": size,
        "container_id": "cntr_1",
        "path": path,
        "source": source,
    }


def openai_routes() -> dict[tuple[str, str], tuple[int, str, bytes]]:
    """The OpenAI routes: a Responses API result citing a container file, the container's files."""
    files = [
        container_file("cfile_chart", "/mnt/data/chart.png", len(PNG), "assistant"),
        container_file("cfile_in", "/mnt/data/input.csv", 5, "user"),
        container_file("cfile_sum", "/mnt/data/summary.csv", len(CSV), "assistant"),
        container_file("cfile_short", "/mnt/data/cut.bin", 999, "assistant"),
    ]
    return {
        ("POST", "/v1/responses"): as_json(
            {
                "id": "resp_1",
                "object": "response",
                "created_at": NOW,
                "model": "gpt-5",
                "status": "completed",
                "output": [
                    {
                        "type": "code_interpreter_call",
                        "id": "ci_1",
                        "status": "completed",
                        "code": "df.plot()",
                        "container_id": "cntr_1",
                        "outputs": [],
                    },
                    {
                        "type": "message",
                        "id": "msg_1",
                        "role": "assistant",
                        "status": "completed",
                        "content": [
                            {
                                "type": "output_text",
                                "text": "See [the chart](sandbox:/mnt/data/chart.png).",
                                "annotations": [
                                    {
                                        "type": "container_file_citation",
                                        "container_id": "cntr_1",
                                        "file_id": "cfile_chart",
                                        "filename": "chart.png",
                                        "start_index": 4,
                                        "end_index": 45,
                                    }
                                ],
                            }
                        ],
                    },
                ],
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [{"type": "code_interpreter", "container": {"type": "auto"}}],
            }
        ),
        ("GET", "/v1/containers/cntr_1/files"): as_json(
            {
                "object": "list",
                "data": files,
                "first_id": "cfile_chart",
                "last_id": "cfile_short",
                "has_more": False,
            }
        ),
        ("GET", "/v1/containers/cntr_1/files/cfile_chart"): as_json(files[0]),
        ("GET", "/v1/containers/cntr_1/files/cfile_chart/content"): (
            200,
            "application/binary",
            PNG,
        ),
        ("GET", "/v1/containers/cntr_1/files/cfile_sum/content"): (200, "application/binary", CSV),
        ("GET", "/v1/containers/cntr_1/files/cfile_short/content"): (
            200,
            "application/binary",
            b"12",
        ),
    }


def test_openai_container_files_are_harvested_through_the_sdk(
    server: str, binder: DocBinder
) -> None:
    Provider.routes = openai_routes()
    client = openai.OpenAI(api_key="sk-test", base_url=f"{server}/v1", max_retries=0)
    response = client.responses.create(
        model="gpt-5",
        input="plot it",
        tools=[{"type": "code_interpreter", "container": {"type": "auto"}}],
    )
    assert container_files_in_response(response) == [("cntr_1", "cfile_chart")]

    run = binder.start_new_run(ALICE)
    report = harvest(run, OpenAIContainerFiles(client, "cntr_1"), tool_call_id="ci_1")
    assert [f.path for f in report.harvested] == ["/mnt/data/chart.png", "/mnt/data/summary.csv"]
    assert [(r.path, r.reason) for r in report.refused] == [
        ("/mnt/data/cut.bin", "incomplete: 2 of 999 bytes arrived")
    ]
    chart = report.harvested[0].result.item
    assert chart.sha256 == hashlib.sha256(PNG).hexdigest() and chart.size == len(PNG)
    p = chart.provenance
    assert (p.tool_call_id, p.sandbox_id, p.source_path) == (
        "ci_1",
        "cntr_1",
        "/mnt/data/chart.png",
    )
    assert all(h["authorization"] == "Bearer sk-test" for _m, _p, h in Provider.seen)

    text = response.output[1].content[0].text  # type: ignore[union-attr]
    assert rewrite_links(text, report).text == f"See [the chart]({report.harvested[0].reference})."
    outcome = DocbinderToolset(binder.start_run(ALICE, run.workflow.id)).call(
        "read_documents", {"documentList": [f.reference for f in report.harvested]}
    )
    assert [i.data for i in outcome.images] == [PNG]
    assert "north,10" in outcome.text

    # the files the response cites, by id; an expired container answers 404 and is reported
    cited = harvest(
        run, OpenAIContainerFiles(client, "cntr_1", file_ids=["cfile_chart", "cfile_gone"])
    )
    assert [h.path for h in cited.held] == ["/mnt/data/chart.png"]
    assert cited.refused[0].reason == "not found in the container (expired or deleted)"
    gone = harvest(run, OpenAIContainerFiles(client, "cntr_expired"))
    assert [(r.path, r.reason) for r in gone.refused] == [
        ("cntr_expired", "container not found (expired or deleted)")
    ]


def anthropic_routes() -> dict[tuple[str, str], tuple[int, str, bytes]]:
    """The Anthropic routes: a message with code execution output files, the Files API."""
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [
            {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "bash_code_execution",
                "input": {"command": "python plot.py"},
            },
            {
                "type": "bash_code_execution_tool_result",
                "tool_use_id": "srvtoolu_1",
                "content": {
                    "type": "bash_code_execution_result",
                    "stdout": "saved",
                    "stderr": "",
                    "return_code": 0,
                    "content": [
                        {"type": "bash_code_execution_output", "file_id": "file_chart"},
                        {"type": "bash_code_execution_output", "file_id": "file_table"},
                        {"type": "bash_code_execution_output", "file_id": "file_gone"},
                    ],
                },
            },
            {"type": "text", "text": "Chart: /tmp/outputs/chart.png", "citations": None},
        ],
        "container": {"id": "container_011", "expires_at": "2026-12-02T01:00:00Z"},
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 20},
    }

    def metadata(file_id: str, name: str, mime: str, size: int) -> tuple[int, str, bytes]:
        return as_json(
            {
                "id": file_id,
                "type": "file",
                "filename": name,
                "mime_type": mime,
                "size_bytes": size,
                "created_at": "2026-12-02T00:00:00Z",
                "downloadable": True,
            }
        )

    return {
        ("POST", "/v1/messages"): as_json(message),
        ("GET", "/v1/files/file_chart"): metadata("file_chart", "chart.png", "image/png", len(PNG)),
        ("GET", "/v1/files/file_chart/content"): (200, "application/octet-stream", PNG),
        ("GET", "/v1/files/file_table"): metadata("file_table", "table.csv", "text/csv", len(CSV)),
        ("GET", "/v1/files/file_table/content"): (200, "application/octet-stream", CSV),
        ("GET", "/v1/files/file_gone"): as_json(
            {"type": "error", "error": {"type": "not_found_error", "message": "File not found"}},
            404,
        ),
    }


def test_anthropic_code_execution_files_are_harvested_through_the_sdk(
    server: str, binder: DocBinder
) -> None:
    Provider.routes = anthropic_routes()
    client = anthropic.Anthropic(api_key="sk-ant-test", base_url=server, max_retries=0)
    reply = client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=1024,
        messages=[{"role": "user", "content": "plot it"}],
        tools=[{"type": "code_execution_20250825", "name": "code_execution"}],
    )
    assert output_file_ids(reply) == ["file_chart", "file_table", "file_gone"]
    source = AnthropicCodeExecutionFiles.from_message(client, reply)
    assert source.sandbox_id == "container_011"

    run = binder.start_new_run(ALICE)
    report = harvest(run, source, tool_call_id="srvtoolu_1")
    assert [f.path for f in report.harvested] == ["chart.png", "table.csv"]
    assert [(r.path, r.reason) for r in report.refused] == [
        ("file_gone", "not found in the Files API (expired or deleted)")
    ]
    table = report.harvested[1].result.item
    assert table.sha256 == hashlib.sha256(CSV).hexdigest() and table.mime_type == "text/csv"
    p = table.provenance
    assert (p.tool_call_id, p.sandbox_id, p.source_path) == (
        "srvtoolu_1",
        "container_011",
        "table.csv",
    )
    assert all("anthropic-version" in h for _m, _p, h in Provider.seen)
    downloads = [path for method, path, _h in Provider.seen if path.endswith("/content")]
    assert downloads == ["/v1/files/file_chart/content", "/v1/files/file_table/content"]

    outcome = DocbinderToolset(binder.start_run(ALICE, run.workflow.id)).call(
        "read_documents", {"documentList": "docList:codeOutput:table.csv"}
    )
    assert not outcome.is_error and "south,7" in outcome.text


def test_the_guides_provider_example_runs_against_the_local_server(
    server: str, tmp_path: Path
) -> None:
    """The example of docs/guides/code-execution.md, run as written, with the SDKs' base URLs on the server."""
    page = ROOT / "docs" / "guides" / "code-execution.md"
    [block] = [
        b
        for b in parse(page).blocks
        if b.directive("tested-by") == "tests/integration/test_harvest_providers.py"
    ]
    Provider.routes = {**openai_routes(), **anthropic_routes()}
    script = tmp_path / "example.py"
    script.write_text(block.text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.update(
        OPENAI_API_KEY="sk-test",
        OPENAI_BASE_URL=f"{server}/v1",
        ANTHROPIC_API_KEY="sk-ant-test",
        ANTHROPIC_BASE_URL=server,
        DOCBINDER_HOME=str(tmp_path / "home"),
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert block.output is not None
    assert_output(block.output, done.stdout, f"{page.name} {block.where}")
