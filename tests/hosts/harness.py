"""Runs one host's driver against ``docbinder mcp`` and reduces what its model saw to facts.

The server always runs on docbinder's own interpreter, on a new home (SQLite +
local disk) per run: over stdio behind :mod:`tests.hosts.wiretap` (so every
raw result is on record), or as ``docbinder mcp --transport streamable-http``
on 127.0.0.1. The driver runs on the host's venv (:mod:`tests.hosts.venvs`) and
prints its report (``drivers/hostlib.py``); :func:`facts` turns the report plus
the raw results into the cells of the expectation table
(:mod:`tests.hosts.expectations`).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.hosts.venvs import ensure_venv

HERE = Path(__file__).resolve().parent
DRIVERS = HERE / "drivers"
WIRETAP = HERE / "wiretap.py"

DRIVER_TIMEOUT = 300.0
"""Longest one driver run may take, in seconds (server starts included)."""

URI_PREFIX = "docbinder://documents/"
PRODUCE_TEXT = "documentList ref: docItem:"
CONSUME_TEXT = re.compile(r"Read (\d+) document\(s\);")

sys.path.insert(0, str(DRIVERS))
import hostlib  # noqa: E402  (the drivers' shared module: the conversation and its markers)

NOTES_MARK = hostlib.NOTES.splitlines()[1]


@dataclass(frozen=True)
class Host:
    """One way a host's own MCP client reaches docbinder.

    ``venv`` names the requirement file (``None``: docbinder's own interpreter),
    ``driver`` the script under ``drivers/``, ``options`` the driver's
    configuration besides the server, ``transport`` ``"stdio"`` or ``"http"``.
    """

    name: str
    venv: str | None
    driver: str
    options: dict[str, Any] = field(default_factory=dict)
    transport: str = "stdio"
    title: str = ""


HOSTS: tuple[Host, ...] = (
    Host("mcp-sdk-stdio", None, "drive_mcp_sdk.py", title="MCP SDK `Client`, stdio"),
    Host(
        "mcp-sdk-http",
        None,
        "drive_mcp_sdk.py",
        {"mode": "auto"},
        "http",
        "MCP SDK `Client(url)`, sessionless HTTP",
    ),
    Host(
        "mcp-sdk-http-legacy",
        None,
        "drive_mcp_sdk.py",
        {"mode": "legacy"},
        "http",
        'MCP SDK `Client(url, mode="legacy")`, HTTP session',
    ),
    Host(
        "openai-agents",
        "openai-agents",
        "drive_openai_agents.py",
        title="OpenAI Agents SDK `MCPServerStdio`",
    ),
    Host(
        "openai-agents-structured",
        "openai-agents",
        "drive_openai_agents.py",
        {"structured": True},
        title="OpenAI Agents SDK, `use_structured_content=True`",
    ),
    Host("pydantic-ai", "pydantic-ai", "drive_pydantic_ai.py", title="pydantic-ai `MCPToolset`"),
    Host(
        "langchain",
        "langchain",
        "drive_langchain.py",
        {"client": "default"},
        title="LangChain `MultiServerMCPClient.get_tools()` (default)",
    ),
    Host(
        "langchain-session",
        "langchain",
        "drive_langchain.py",
        {"client": "session"},
        title="LangChain `client.session()` + `load_mcp_tools`",
    ),
    Host("adk", "adk", "drive_adk.py", title="Google ADK `McpToolset`"),
)
BY_NAME = {host.name: host for host in HOSTS}


def docbinder_command(home: Path, *args: str) -> list[str]:
    """``docbinder`` on this interpreter, on ``home``, as alice of mandate acme."""
    return [
        sys.executable,
        "-m",
        "docbinder",
        "--home",
        str(home),
        "--user",
        "alice",
        "--mandate",
        "acme",
        *args,
    ]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def http_server(home: Path) -> Iterator[str]:
    """``docbinder mcp --transport streamable-http`` on a free loopback port; yields its URL."""
    port = _free_port()
    process = subprocess.Popen(
        docbinder_command(home, "mcp", "--transport", "streamable-http", "--port", str(port)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=_clean_env(),
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                assert process.stderr is not None
                raise RuntimeError(f"the MCP server exited: {process.stderr.read().decode()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the MCP server did not start listening") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


def _clean_env() -> dict[str, str]:
    """This environment without docbinder's settings, the venv and the path of this checkout."""
    drop = {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("DOCBINDER_")}
    env["OTEL_SDK_DISABLED"] = "true"
    return env


def run_host(host: Host, work: Path) -> dict[str, Any]:
    """Run ``host``'s driver once in ``work``; its report with the raw results under ``wire``.

    Raises :class:`RuntimeError` with the driver's stderr when it fails or
    exceeds :data:`DRIVER_TIMEOUT`; :class:`~tests.hosts.venvs.VenvBuildError`
    when the host's venv cannot be built.
    """
    work.mkdir(parents=True, exist_ok=True)
    home, wire_dir = work / "home", work / "wire"
    python = sys.executable if host.venv is None else str(ensure_venv(host.venv))
    config = dict(host.options)
    with _server_for(host, home, wire_dir) as target:
        config.update(target)
        command = [python, str(DRIVERS / host.driver), json.dumps(config)]
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=DRIVER_TIMEOUT,
                env=_clean_env(),
                cwd=work,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise RuntimeError(f"{host.name}: the driver took over {DRIVER_TIMEOUT} s") from exc
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(
            f"{host.name}: the driver failed ({done.returncode}):\n{done.stderr[-6000:]}"
        )
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if "wire" not in report:
        calls, tools = read_wire(wire_dir)
        report["wire"] = match_calls(report["steps"], calls)
        report.setdefault("tools", tools)
    return report


@contextmanager
def _server_for(host: Host, home: Path, wire_dir: Path) -> Iterator[dict[str, Any]]:
    if host.transport == "http":
        with http_server(home) as url:
            yield {"url": url}
    else:
        yield {
            "server": [
                sys.executable,
                str(WIRETAP),
                str(wire_dir),
                "--",
                *docbinder_command(home, "mcp"),
            ]
        }


def read_wire(wire_dir: Path) -> tuple[list[dict[str, Any]], list[Any]]:
    """The ``tools/call`` exchanges in the tap's logs (time order) and the last ``tools/list`` tools.

    Each exchange is ``{"t", "name", "arguments", "result"}``; ``result`` is the
    ``CallToolResult`` or ``None`` when the server answered with a JSON-RPC error
    or not at all.
    """
    calls: list[dict[str, Any]] = []
    tools: list[Any] = []
    for log in sorted(wire_dir.glob("wire-*.jsonl")):
        requests: dict[Any, dict[str, Any]] = {}
        for line in log.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            message = entry["msg"]
            if entry["dir"] == "c2s" and "method" in message and "id" in message:
                requests[message["id"]] = {"t": entry["t"], **message}
            elif entry["dir"] == "s2c" and "id" in message and message["id"] in requests:
                request = requests.pop(message["id"])
                if request["method"] == "tools/list":
                    tools = (message.get("result") or {}).get("tools", tools)
                elif request["method"] == "tools/call":
                    params = request.get("params") or {}
                    calls.append(
                        {
                            "t": request["t"],
                            "name": params.get("name"),
                            "arguments": params.get("arguments") or {},
                            "result": message.get("result"),
                        }
                    )
        for request in requests.values():  # asked, never answered
            if request["method"] == "tools/call":
                params = request.get("params") or {}
                calls.append(
                    {
                        "t": request["t"],
                        "name": params.get("name"),
                        "arguments": params.get("arguments") or {},
                        "result": None,
                    }
                )
    calls.sort(key=lambda c: c["t"])
    return calls, tools


def match_calls(steps: list[dict[str, Any]], calls: list[dict[str, Any]]) -> list[Any]:
    """For each step, the raw result of the server call it made (``None``: it never reached the server).

    A step matches the first unused call of its tool with the same ``name``
    argument (the two ``write_file`` steps differ by it).
    """
    unused = list(calls)
    matched: list[Any] = []
    for step in steps:
        found = next(
            (
                c
                for c in unused
                if c["name"] == step["tool"]
                and c["arguments"].get("name") == step["arguments"].get("name")
            ),
            None,
        )
        if found is not None:
            unused.remove(found)
        matched.append(found["result"] if found else None)
    return matched


# -- facts ------------------------------------------------------------------------------------


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _contains_value(haystack: Any, needle: Any) -> bool:
    """Whether ``needle`` is ``haystack``, nested in it, or JSON text in it that parses to it."""
    if haystack == needle:
        return True
    if isinstance(haystack, dict):
        return any(_contains_value(v, needle) for v in haystack.values())
    if isinstance(haystack, list):
        return any(_contains_value(v, needle) for v in haystack)
    if isinstance(haystack, str) and haystack[:1] in "[{":
        try:
            return _contains_value(json.loads(haystack), needle)
        except ValueError:
            return False
    return False


def sent_ids(result: Any) -> list[str]:
    """The ``docItem:`` references and file ids a raw result names: what the model must get.

    From the result's ``_meta`` (``docbinder/documentIds``, ``docbinder/fileIds``), else from
    the files or documents of its ``structuredContent``.
    """
    if not isinstance(result, dict):
        return []
    meta = result.get("_meta") or {}
    if meta.get("docbinder/fileIds") or meta.get("docbinder/documentIds"):
        documents = [f"docItem:{d}" for d in meta.get("docbinder/documentIds") or []]
        return [*documents, *(meta.get("docbinder/fileIds") or [])]
    structured = result.get("structuredContent") or {}
    entries = [*structured.get("files", []), *structured.get("documents", [])]
    return [
        value
        for entry in entries
        if isinstance(entry, dict)
        for value in (entry.get("documentRef"), entry.get("fileId"))
        if isinstance(value, str)
    ]


def _step_facts(step: dict[str, Any], result: Any) -> dict[str, Any]:
    view = step["view"]
    texts: list[str] = view["texts"]
    seen = "\n".join([*texts, *_strings(view["raw"])])
    structured = result.get("structuredContent") if isinstance(result, dict) else None
    text_blocks = " ".join(
        b.get("text", "") for b in (result or {}).get("content", []) if isinstance(b, dict)
    )
    read = CONSUME_TEXT.search(text_blocks)
    ids = sent_ids(result)
    return {
        "ok": isinstance(result, dict) and not result.get("isError", False),
        "ids": bool(ids) and all(i in seen for i in ids),
        "text": any(PRODUCE_TEXT in t or CONSUME_TEXT.search(t) for t in texts),
        "image": any(i.get("mime_type") == "image/png" for i in view["images"]),
        "image_as_text": any(hostlib.PNG_B64 in t for t in texts),
        "resource_link": URI_PREFIX in seen,
        "structured": structured is not None
        and (_contains_value(view["raw"], structured) or _contains_value(texts, structured)),
        "handle": hostlib.handle([view]) is not None,
        "notes": NOTES_MARK in seen,
        "resolved": int(read[1]) if read else 0,
        "sent_resource_link": any(
            isinstance(b, dict) and b.get("type") == "resource_link"
            for b in (result or {}).get("content", [])
        ),
        "sent_structured": structured is not None,
    }


def server_has_handles(tools: list[Any]) -> bool:
    """Whether the listed tools take a ``workflow`` handle or declare an ``outputSchema``."""
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        properties = (tool.get("inputSchema") or {}).get("properties") or {}
        if "workflow" in properties or tool.get("outputSchema"):
            return True
    return False


def facts(report: dict[str, Any]) -> dict[str, Any]:
    """The cells of one run: ``produce.*`` (the Markdown write), ``png.ok``, ``consume.*`` (the read)."""
    steps, wire = report["steps"], report["wire"]
    names = ["produce", "png", "consume"]
    if [s["tool"] for s in steps] != ["write_file", "write_file", "read_documents"]:
        raise AssertionError(f"the scripted conversation did not run as written: {steps!r}")
    cells: dict[str, Any] = {}
    for name, step, result in zip(names, steps, wire, strict=True):
        for key, value in _step_facts(step, result).items():
            cells[f"{name}.{key}"] = value
    return cells
