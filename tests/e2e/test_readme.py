"""The README's Python example runs as written and prints what it promises."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.e2e.readme_examples import python_blocks, run_script

README = Path(__file__).resolve().parents[2] / "README.md"


def test_python_example_runs(tmp_path: Path) -> None:
    blocks = python_blocks("Python API")
    assert blocks, "the README has no Python example"
    lines = run_script(tmp_path, blocks[0]).splitlines()
    assert lines[0] == "Wrote 'summary.csv' (24 bytes)"
    assert re.fullmatch(r"  documentList ref: docItem:[0-9a-f-]{36}", lines[1])
    assert re.fullmatch(r"  file id: [0-9a-f-]{36}", lines[2])
    assert lines[3] == "text text/csv region,revenue"
    assert (tmp_path / "docbinder.db").exists() and (tmp_path / "blobs").is_dir()


def test_tools_example_runs(tmp_path: Path) -> None:
    [block] = python_blocks("Tools and the arguments they accept")
    assert run_script(tmp_path, block).splitlines() == [
        "Created chart 'chart.png'",
        "application/json",
        "True the content for 'x.png'",
    ]


def test_workflow_counters_example_runs(tmp_path: Path) -> None:
    blocks = python_blocks("Python API")
    assert len(blocks) == 2
    assert run_script(tmp_path, blocks[1]).splitlines() == [
        "round 2, task 0, action 0",
        "round 2, task 0, action 0",
        "1 1 1",
    ]


def test_quick_start_has_exactly_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)```", quick, flags=re.S)
    assert len(commands) == 2
    assert all(len(c.strip().splitlines()) == 1 for c in commands)
    assert "docbinder demo" in commands[0]
    assert "scripts/test.sh" in commands[1]
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert "scripts/test.sh" in ci


def test_the_s3_block_works_when_pasted_as_is(tmp_path: Path) -> None:
    """The README's S3 block, run by bash on a free port: it waits for the server itself."""
    import contextlib
    import signal
    import socket

    text = README.read_text(encoding="utf-8")
    section = text.split("### S3 (or MinIO, Ceph, R2)", 1)[1]
    block = re.findall(r"```text\n(.*?)```", section, flags=re.S)[0]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    script = block.replace("9123", str(port))
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        "DOCBINDER_HOME": str(tmp_path / "home"),
    }
    process = subprocess.Popen(
        ["bash", "-c", script + "\nstatus=$?\nkill %1 2>/dev/null\nexit $status\n"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=300)
    finally:
        # the server started in the background belongs to the same session
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        process.wait()
    assert process.returncode == 0, stderr[-3000:]
    assert "documentList ref: docItem:" in stdout
