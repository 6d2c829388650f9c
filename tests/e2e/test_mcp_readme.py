"""The MCP guide's configuration snippets do what the guide says.

The guide's examples run with every other example (``tests/docs``); the desktop
client's JSON and the token file are data, checked here: the desktop client starts
``docbinder mcp`` by its command name, as an installed package would; the test puts a
``docbinder`` script first on ``PATH`` that runs this checkout's code, and a temporary
``HOME`` (MCP clients pass the server only ``HOME``, ``PATH`` and a few other
variables, so the embedded default lives under ``HOME``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters, stdio_client

from docbinder.integrations.mcp import BearerTokens, token_hash
from tests.docs.examples import parse
from tests.e2e.readme_examples import docbinder_command

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guides" / "mcp.md"


def blocks(language: str) -> list[str]:
    return [b.text for b in parse(GUIDE).blocks if b.language == language]


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

    # As the MCP guide says: the file goes into a workflow, which the conversation names.
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
