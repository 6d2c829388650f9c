"""The README's framework examples run as written, offline, and show what they promise."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
UUID = r"[0-9a-f-]{36}"


def example(heading: str) -> str:
    """The Python block of the README section ``## <heading>``."""
    text = README.read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, f"section {heading!r} should have one Python example"
    return blocks[0]


def run_example(tmp_path: Path, heading: str) -> str:
    script = tmp_path / "example.py"
    script.write_text(example(heading), encoding="utf-8")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DOCBINDER_", "OPENAI_")) and k != "PYTHONWARNINGS"
    }
    # Any attempt to reach a server fails fast: the examples must run offline.
    env.update({"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"})
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "docbinder.db").exists() and (tmp_path / "blobs").is_dir()
    return done.stdout


def assert_wrote_then_read(out: str) -> None:
    wrote = out.index("Wrote 'notes.md' (30 bytes)")
    assert re.search(rf"  documentList ref: docItem:{UUID}\n  file id: {UUID}", out)
    assert out.index("Revenue grew 12% in the north.", wrote) > wrote


def test_langchain_example(tmp_path: Path) -> None:
    pytest.importorskip("langgraph")
    out = run_example(tmp_path, "Use with LangChain / LangGraph")
    assert_wrote_then_read(out)
    assert "ai: The notes say revenue grew 12%." in out
    assert re.search(rf"artifact: {{'file_ids': \['{UUID}'\], 'document_ids': \['{UUID}'\]}}", out)


def test_openai_agents_example(tmp_path: Path) -> None:
    pytest.importorskip("agents")
    out = run_example(tmp_path, "Use with the OpenAI Agents SDK")
    assert_wrote_then_read(out)
    assert re.search(
        rf"custom_data: {{'file_ids': \['{UUID}'\], 'document_ids': \['{UUID}'\]}}", out
    )
    assert out.splitlines()[-1] == "The notes say revenue grew 12%."


def test_pydantic_ai_example(tmp_path: Path) -> None:
    pytest.importorskip("pydantic_ai")
    out = run_example(tmp_path, "Use with pydantic-ai")
    assert_wrote_then_read(out)
    assert re.search(rf"metadata: {{'file_ids': \['{UUID}'\], 'document_ids': \['{UUID}'\]}}", out)
    assert out.splitlines()[-1] == "The notes say revenue grew 12%."
