"""The README's framework examples run as written, offline, and show what they promise."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.readme_examples import example, run_script

README = Path(__file__).resolve().parents[2] / "README.md"
UUID = r"[0-9a-f-]{36}"


def run_example(tmp_path: Path, heading: str) -> str:
    out = run_script(tmp_path, example(heading), offline=True, timeout=300)
    assert (tmp_path / "docbinder.db").exists() and (tmp_path / "blobs").is_dir()
    return out


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
