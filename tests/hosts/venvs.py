"""One cached virtual environment per MCP host, built from its pinned requirement file.

Each host of the rendering tests runs in its own venv (``requirements/<name>.txt``,
every package pinned), never in docbinder's: LangChain's MCP adapters need
``mcp<2`` while docbinder needs ``mcp>=2``, and a host must see only its own
packages. A venv is built once and kept under the user cache directory
(``~/.cache/docbinder/test-host-venvs`` on Linux; ``DOCBINDER_TEST_HOST_VENVS``
moves it), outside the repository tree, in a folder named by the host and a
hash of its requirement file, the Python version and the platform: a changed
pin or interpreter builds a new one. Builds are serialised by a file lock, so
parallel test workers (pytest-xdist) build each venv once; a build that did not
finish leaves no ``ready`` marker and is redone.

``python -m tests.hosts.venvs`` builds every venv ahead of a test run and prints
how long each build took.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import platformdirs

REQUIREMENTS = Path(__file__).resolve().parent / "requirements"
HOSTS = tuple(sorted(p.stem for p in REQUIREMENTS.glob("*.txt")))
"""The host venvs there are: one per requirement file."""

BUILD_TIMEOUT = 900.0
"""Longest a venv build may take, in seconds, before it counts as failed."""


class VenvBuildError(RuntimeError):
    """A host venv could not be built (pip's output is in the message)."""


def cache_root() -> Path:
    """Where the host venvs are kept (``DOCBINDER_TEST_HOST_VENVS`` or the user cache dir)."""
    configured = os.environ.get("DOCBINDER_TEST_HOST_VENVS")
    if configured:
        return Path(configured)
    return platformdirs.user_cache_path("docbinder") / "test-host-venvs"


def venv_key(name: str) -> str:
    """16 hex digits of SHA-256 over the requirement file, the Python version and the platform."""
    digest = hashlib.sha256((REQUIREMENTS / f"{name}.txt").read_bytes())
    digest.update(f"{sys.implementation.name}-{platform.python_version()}".encode())
    digest.update(f"{sys.platform}-{platform.machine()}".encode())
    return digest.hexdigest()[:16]


def venv_dir(name: str) -> Path:
    """The folder of host ``name``'s venv for this interpreter."""
    return cache_root() / f"{name}-{venv_key(name)}"


def python_of(venv: Path) -> Path:
    """The interpreter inside ``venv``."""
    return venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def build_info(name: str) -> dict[str, object] | None:
    """What the ``ready`` marker of host ``name``'s venv records, or ``None`` if not built."""
    marker = venv_dir(name) / "ready"
    return json.loads(marker.read_text()) if marker.exists() else None


def ensure_venv(name: str) -> Path:
    """The interpreter of host ``name``'s venv, built first if it is not in the cache.

    Raises :class:`VenvBuildError` when ``venv`` or ``pip install -r`` fails
    (no network, a pin that does not resolve) or takes longer than
    :data:`BUILD_TIMEOUT`.
    """
    target = venv_dir(name)
    if (target / "ready").exists():
        return python_of(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with (target.parent / f"{target.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / "ready").exists():
            _build(name, target)
    return python_of(target)


def _build(name: str, target: Path) -> None:
    if target.exists():  # a build that stopped half-way
        shutil.rmtree(target)
    started = time.monotonic()
    base = getattr(sys, "_base_executable", sys.executable)
    steps = [
        [base, "-m", "venv", str(target)],
        [
            str(python_of(target)),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-input",
            "-r",
            str(REQUIREMENTS / f"{name}.txt"),
        ],
    ]
    for step in steps:
        try:
            done = subprocess.run(
                step, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False
            )
        except subprocess.TimeoutExpired as exc:
            shutil.rmtree(target, ignore_errors=True)
            raise VenvBuildError(
                f"{name}: {step[2:4]} took more than {BUILD_TIMEOUT:.0f} s"
            ) from exc
        if done.returncode != 0:
            shutil.rmtree(target, ignore_errors=True)
            raise VenvBuildError(
                f"{name}: {' '.join(step[2:4])} failed ({done.returncode}):\n"
                f"{done.stdout[-2000:]}{done.stderr[-4000:]}"
            )
    seconds = round(time.monotonic() - started, 1)
    info = {"host": name, "key": venv_key(name), "python": sys.version, "build_seconds": seconds}
    (target / "ready").write_text(json.dumps(info))


def main(argv: list[str]) -> int:
    """Build the named host venvs (all without arguments); print each one's build time."""
    for name in argv or HOSTS:
        cached = build_info(name) is not None
        started = time.monotonic()
        python = ensure_venv(name)
        took = time.monotonic() - started
        info = build_info(name) or {}
        state = "cached" if cached else f"built in {info.get('build_seconds', round(took, 1))} s"
        print(f"{name}: {state}: {python}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
