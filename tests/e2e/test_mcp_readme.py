"""The README's "Use over MCP" section runs as written.

The examples start ``docbinder mcp`` by its command name, as an installed
package would; the tests put a ``docbinder`` script first on ``PATH`` that runs
this checkout's code, and a temporary ``HOME`` (MCP clients pass the server only
``HOME``, ``PATH`` and a few other variables, so the embedded default lives
under ``HOME``).
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters, stdio_client

from docbinder.integrations.mcp import BearerTokens, token_hash
from tests.e2e.readme_examples import docbinder_command, run_in

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def section() -> str:
    text = README.read_text(encoding="utf-8")
    return text.split("## Use over MCP", 1)[1].split("\n## ", 1)[0]


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section(), flags=re.S)


@pytest.fixture
def user_env(tmp_path: Path) -> dict[str, str]:
    bin_dir = docbinder_command(tmp_path / "bin").parent
    home = tmp_path / "home"
    home.mkdir()
    return {
        "HOME": str(home),
        "PATH": f"{bin_dir}:{Path(sys.executable).parent}:/usr/bin:/bin",
        "LANG": "C.UTF-8",
    }


def without_docbinder_on_path(env: dict[str, str]) -> dict[str, str]:
    """``env`` as a shell whose venv is not activated: no ``docbinder`` command on ``PATH``."""
    return {**env, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}


def run_example(code: str, tmp_path: Path, env: dict[str, str]) -> list[str]:
    example = tmp_path / "example.py"
    example.write_text(code, encoding="utf-8")
    return run_in(tmp_path, [sys.executable, str(example)], env).splitlines()


def test_adk_example_lists_the_tools(tmp_path: Path, user_env: dict[str, str]) -> None:
    pytest.importorskip("google.adk")
    [code] = [b for b in blocks("python") if "McpToolset" in b]
    lines = run_example(code, tmp_path, without_docbinder_on_path(user_env))
    assert lines == [
        str(
            sorted(
                [
                    "create_chart",
                    "get_file_info",
                    "list_documents",
                    "list_files",
                    "read_documents",
                    "read_file",
                    "render_document",
                    "search_in_file_content",
                    "write_file",
                ]
            )
        )
    ]


def test_openai_agents_example_writes_and_reads(tmp_path: Path, user_env: dict[str, str]) -> None:
    pytest.importorskip("agents")
    [code] = [b for b in blocks("python") if "MCPServerStdio" in b]
    lines = run_example(code, tmp_path, without_docbinder_on_path(user_env))
    assert lines[0] == "Wrote 'findings.md' (27 bytes)"
    reference = re.fullmatch(r"  documentList ref: (docItem:[0-9a-f-]{36})", lines[1])
    assert reference
    assert lines[3] == "Read 1 document(s); 0 unresolved."
    assert lines[4].startswith(f"--- {reference[1]} 'findings.md' (text/markdown, 27 bytes")
    assert lines[5:7] == ["# Findings", "North grew 27 %."]
    assert lines[7] == "analyst has 9 docbinder tools"


def test_plain_mcp_client_example_reads_by_reference(
    tmp_path: Path, user_env: dict[str, str]
) -> None:
    [code] = [b for b in blocks("python") if "ClientSession(read, write)" in b]
    lines = run_example(code, tmp_path, without_docbinder_on_path(user_env))
    assert lines[0] == "Wrote 'notes.md' (13 bytes)"
    assert lines[1:3] == ["# Notes", "alpha"]
    assert re.fullmatch(r"documentList ref: docItem:[0-9a-f-]{36}", lines[3])


def test_http_client_example_carries_the_workflow(tmp_path: Path, user_env: dict[str, str]) -> None:
    """The server command and the ``Client(url)`` example, on a free port instead of 8000."""
    [command] = blocks("sh")
    [code] = [b for b in blocks("python") if "Client(URL)" in b]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    assert "--port 8000" in command and "127.0.0.1:8000" in code
    command = command.strip().replace("--port 8000", f"--port {port}")
    server = subprocess.Popen(
        ["sh", "-c", f"exec {command}"],
        env=user_env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, "the README's server command exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the server did not start listening"
                time.sleep(0.1)
        example = code.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
        lines = run_example(example, tmp_path, without_docbinder_on_path(user_env))
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert lines[0] == "Wrote 'notes.md' (13 bytes)"
    assert lines[1:3] == ["# Notes", "alpha"]
    assert re.fullmatch(r"docbinder://documents/[0-9a-f-]{36} True", lines[3])


README_HOME = "/home/alice/.local/share/docbinder"


def test_desktop_client_configuration_serves_the_store_the_cli_uses(
    tmp_path: Path, user_env: dict[str, str]
) -> None:
    [config_text] = blocks("json")
    server = json.loads(config_text)["mcpServers"]["docbinder"]
    store = tmp_path / "store"
    args = [str(store) if arg == README_HOME else arg for arg in server["args"]]
    assert args[:2] == ["--home", str(store)] and args[-1] == "mcp"
    # The user's shell has a data directory the client does not pass on; its CLI, given
    # the same global options, attaches a file the server must see.
    shell = {**user_env, "XDG_DATA_HOME": str(tmp_path / "shell-data")}
    notes = tmp_path / "notes.txt"
    notes.write_text("from the shell\n", encoding="utf-8")

    def cli(*command: str) -> Any:
        done = subprocess.run(
            [server["command"], *args[:-1], "--json", *command],
            env=shell,
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(done.stdout)

    # As the README says: the file goes into a workflow, which the conversation names.
    workflow = cli("workflow", "new")["id"]
    file_id = cli("attach", "--workflow", workflow, str(notes))["fileId"]

    async def main() -> tuple[str, str]:
        params = StdioServerParameters(command=server["command"], args=args, env=user_env)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            seen = await session.call_tool(
                "get_file_info", {"file_id": file_id, "workflow": workflow}
            )
            written = await session.call_tool("write_file", {"name": "a.txt", "content": "hi"})
            info = await session.call_tool(
                "get_file_info", {"file_id": written.content[0].text.split("file id: ")[1]}
            )
            return str(seen.content[0].text), str(info.content[0].text)

    seen, info = anyio.run(main)
    assert "notes.txt" in seen and "created by: alice" in seen
    assert "created by: alice" in info


def test_token_file_example_loads(tmp_path: Path) -> None:
    [toml_text] = blocks("toml")
    filled = toml_text.replace("<64 hex digits>", token_hash("s3cret"))
    path = tmp_path / "tokens.toml"
    path.write_text(filled, encoding="utf-8")
    assert tomllib.loads(filled)["tokens"][0]["user"] == "alice"
    tokens = BearerTokens.load(path)

    access = anyio.run(tokens.verify_token, "s3cret")
    assert access is not None
    principal = tokens.principal_for(access)
    assert principal is not None
    assert (principal.user_id, principal.mandate_id, principal.feature_instance_id) == (
        "alice",
        "acme",
        "support",
    )
    assert anyio.run(tokens.verify_token, "wrong") is None
