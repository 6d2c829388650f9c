"""The README's "Use with Google ADK" example runs as written, with ADK's Runner.

The example talks to Gemini; here ADK's model registry hands the agent a
scripted model instead (the only change; no network), which calls the
example's tool the way Gemini would and then answers. Everything else — the
Runner, the session service, the tool context, the artifact service on
SQLite + local disk in the working directory — runs exactly as printed.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.e2e.readme_examples import example, run_script

ROOT = Path(__file__).resolve().parents[2]

WRAPPER = """
import runpy
import sys

from google.adk.models.registry import LLMRegistry

from tests.integration.adk_scripted import ScriptedModel, call, say


def scripted(model: str) -> ScriptedModel:
    assert model == "gemini-2.5-flash", model
    return ScriptedModel(
        model=model, script=[call("save_note", text="ship on Friday"), say("Noted.")]
    )


LLMRegistry.new_llm = staticmethod(scripted)
runpy.run_path(sys.argv[1], run_name="__main__")
"""


def test_adk_example_runs(tmp_path: Path) -> None:
    (tmp_path / "wrapper.py").write_text(WRAPPER, encoding="utf-8")
    stdout = run_script(
        tmp_path,
        example("Use with Google ADK"),
        command=("wrapper.py", "example.py"),
        env_update={"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
    )
    assert stdout.splitlines() == [
        "agent: Noted.",
        "artifacts: ['note.md']",
        "note.md: ship on Friday",
    ]
    assert (tmp_path / "docbinder.db").exists() and (tmp_path / "blobs").is_dir()
