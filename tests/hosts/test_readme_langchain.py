"""The LangChain guide's LangChain-over-MCP example runs as written, in LangChain's own venv.

The example runs on the LangChain host venv's interpreter (``mcp<2``, no
docbinder) with the adapters' documented default client,
``MultiServerMCPClient(...).get_tools()``, which starts a server process per
call; it starts ``docbinder`` by its command name, which the test puts first on
``PATH`` as a script running this checkout on docbinder's interpreter, with a
temporary ``HOME`` (the example's store is under it). The read in the second
process finds the file of the first by the ``workflow`` handle.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import backend_unavailable
from tests.docs.examples import Block, assert_output, parse
from tests.e2e.readme_examples import docbinder_command
from tests.hosts.venvs import VenvBuildError, ensure_venv

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "langchain.md"


def langchain_example() -> Block:
    """The guide's example and the output it shows."""
    [block] = [
        b
        for b in parse(GUIDE).blocks
        if b.language == "python" and "MultiServerMCPClient" in b.text
    ]
    assert block.output is not None
    return block


def test_langchain_example_reads_across_server_processes_by_the_handle(tmp_path: Path) -> None:
    try:
        python = ensure_venv("langchain")
    except VenvBuildError as exc:
        backend_unavailable("host venv langchain", str(exc))
    bin_dir = docbinder_command(tmp_path / "bin").parent
    home = tmp_path / "home"
    home.mkdir()
    example = langchain_example()
    (tmp_path / "example.py").write_text(example.text, encoding="utf-8")
    done = subprocess.run(
        [str(python), "example.py"],
        cwd=tmp_path,
        env={"HOME": str(home), "PATH": f"{bin_dir}:/usr/bin:/bin", "LANG": "C.UTF-8"},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert example.output is not None
    # the last line: the read, in another server process, worked in the write's workflow
    assert_output(example.output, done.stdout, "the LangChain guide's example over MCP")
    assert (home / ".local/share/docbinder/docbinder.db").exists()
