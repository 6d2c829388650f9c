"""The README's LangChain-over-MCP example runs as written, in LangChain's own venv.

The example runs on the LangChain host venv's interpreter (``mcp<2``, no
docbinder) with the adapters' documented default client,
``MultiServerMCPClient(...).get_tools()``, which starts a server process per
call; it starts ``docbinder`` by its command name, which the test puts first on
``PATH`` as a script running this checkout on docbinder's interpreter, with a
temporary ``HOME`` (the example's store is under it). The read in the second
process finds the file of the first by the ``workflow`` handle.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.conftest import backend_unavailable
from tests.e2e.readme_examples import docbinder_command
from tests.hosts.venvs import VenvBuildError, ensure_venv

README = Path(__file__).resolve().parents[2] / "README.md"


def langchain_example() -> str:
    section = README.read_text(encoding="utf-8").split("## Use over MCP", 1)[1].split("\n## ", 1)[0]
    [code] = [
        b
        for b in re.findall(r"```python\n(.*?)```", section, flags=re.S)
        if "MultiServerMCPClient" in b
    ]
    return code


def test_langchain_example_reads_across_server_processes_by_the_handle(tmp_path: Path) -> None:
    try:
        python = ensure_venv("langchain")
    except VenvBuildError as exc:
        backend_unavailable("host venv langchain", str(exc))
    bin_dir = docbinder_command(tmp_path / "bin").parent
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "example.py").write_text(langchain_example(), encoding="utf-8")
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
    assert done.stdout.splitlines() == [
        "Wrote 'findings.md' (27 bytes)",
        "Read 1 document(s); 0 unresolved.",
        "True",  # the read, in another server process, worked in the write's workflow
    ]
    assert (home / ".local/share/docbinder/docbinder.db").exists()
