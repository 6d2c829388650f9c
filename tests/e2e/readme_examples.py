"""Running a documented example as a user would: a script in a directory of its own, or ``docbinder`` by name.

The docs' examples themselves are read and run by :mod:`tests.docs.examples`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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
    script.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m docbinder "$@"\n')
    script.chmod(0o755)
    return script
