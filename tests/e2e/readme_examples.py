"""The README's Python examples as the tests run them: one block per section, run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def python_blocks(heading: str | None = None) -> list[str]:
    """The ```python blocks of the README, or of its section ``## <heading>`` only."""
    text = README.read_text(encoding="utf-8")
    if heading is not None:
        text = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def example(heading: str) -> str:
    """The one Python block of the README section ``## <heading>``."""
    blocks = python_blocks(heading)
    assert len(blocks) == 1, f"section {heading!r} should have one Python example"
    return blocks[0]


def run_script(
    tmp_path: Path,
    code: str,
    *,
    command: Sequence[str] = ("example.py",),
    offline: bool = False,
    env_update: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> str:
    """Write ``code`` to ``tmp_path/example.py``, run ``python <command>`` there; its stdout.

    The environment loses every ``DOCBINDER_*`` variable (the example's own
    configuration counts); ``offline`` also drops ``OPENAI_*`` and points the
    HTTP proxies at a closed loopback port, so any network attempt fails fast.
    Fails the test (with the script's stderr) on a non-zero exit.
    """
    (tmp_path / "example.py").write_text(code, encoding="utf-8")
    dropped: tuple[str, ...] = ("DOCBINDER_", "OPENAI_") if offline else ("DOCBINDER_",)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(dropped) and not (offline and k == "PYTHONWARNINGS")
    }
    if offline:
        env.update({"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"})
    env.update(env_update or {})
    return run_in(tmp_path, [sys.executable, *command], env, timeout=timeout)


def run_in(cwd: Path, argv: Sequence[str], env: Mapping[str, str], *, timeout: float = 180) -> str:
    """Run ``argv`` in ``cwd`` with exactly ``env``; its stdout (text).

    Fails the test with the command's stderr on a non-zero exit; ``timeout``
    in seconds.
    """
    done = subprocess.run(
        list(argv), cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def docbinder_command(bin_dir: Path) -> Path:
    """A ``docbinder`` command in ``bin_dir`` (made if missing) that runs this checkout.

    What a user's activated venv puts on ``PATH``: the examples and shell snippets
    call ``docbinder`` by name.
    """
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "docbinder"
    script.write_text(
        f'#!/bin/sh\nPYTHONPATH="{README.parent}" exec "{sys.executable}" -m docbinder "$@"\n'
    )
    script.chmod(0o755)
    return script
