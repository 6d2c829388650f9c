"""The README's "Async API" example runs as written (under asyncio and trio) and prints what it shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _example() -> str:
    section = README.read_text(encoding="utf-8").split("## Async API\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, "the Async API section has one Python example"
    return blocks[0]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_async_example_runs(tmp_path: Path, backend: str) -> None:
    code = _example()
    if backend == "trio":
        assert "anyio.run(main)" in code
        code = code.replace("anyio.run(main)", 'anyio.run(main, backend="trio")')
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCBINDER_")}
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Wrote 'south.csv' (24 bytes)"
    assert re.fullmatch(r"  documentList ref: docItem:[0-9a-f-]{36}", lines[1])
    assert re.fullmatch(r"  file id: [0-9a-f-]{36}", lines[2])
    assert lines[3:] == ["South,43", "24 bytes streamed back"]
    assert (tmp_path / "docbinder.db").exists() and (tmp_path / "blobs").is_dir()
