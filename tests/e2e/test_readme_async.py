"""The README's "Async API" example runs as written (under asyncio and trio) and prints what it shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.readme_examples import example, run_script

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_async_example_runs(tmp_path: Path, backend: str) -> None:
    code = example("Async API")
    if backend == "trio":
        assert "anyio.run(main)" in code
        code = code.replace("anyio.run(main)", 'anyio.run(main, backend="trio")')
    lines = run_script(tmp_path, code).splitlines()
    assert lines[0] == "Wrote 'south.csv' (24 bytes)"
    assert re.fullmatch(r"  documentList ref: docItem:[0-9a-f-]{36}", lines[1])
    assert re.fullmatch(r"  file id: [0-9a-f-]{36}", lines[2])
    assert lines[3:] == ["South,43", "24 bytes streamed back"]
    assert (tmp_path / "docbinder.db").exists() and (tmp_path / "blobs").is_dir()
