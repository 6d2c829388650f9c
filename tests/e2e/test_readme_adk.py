"""The README's "Use with Google ADK" example runs as written, with ADK's Runner.

The example talks to Gemini; here ADK's model registry hands the agent a
scripted model instead (the only change; no network), which calls the
example's tool the way Gemini would and then answers. Everything else — the
Runner, the session service, the tool context, the artifact service on
SQLite + local disk in the working directory — runs exactly as printed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

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
    text = README.read_text(encoding="utf-8")
    section = text.split("## Use with Google ADK", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, "the ADK section should have exactly one Python example"
    (tmp_path / "example.py").write_text(blocks[0], encoding="utf-8")
    (tmp_path / "wrapper.py").write_text(WRAPPER, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCBINDER_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "wrapper.py", "example.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "agent: Noted.",
        "artifacts: ['note.md']",
        "note.md: ship on Friday",
    ]
    assert (tmp_path / "docbinder.db").exists() and (tmp_path / "blobs").is_dir()
