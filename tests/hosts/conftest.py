"""Fixtures of the host rendering tests: each host's driver runs once per test session.

A run's report is kept in a folder shared by all pytest-xdist workers of the
session (beside the workers' own temporary folders), under a file lock, so the
tests of one host reuse one run whichever worker they land on. A host venv that
cannot be built (no network on a machine without the cache) skips the tests
locally and fails them with ``CI=true``, like any other unreachable backend.
"""

from __future__ import annotations

import fcntl
import json
import os
import traceback
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import backend_unavailable
from tests.hosts.harness import BY_NAME, run_host
from tests.hosts.venvs import VenvBuildError


class HostRuns:
    """One report per host for the whole session, run on first use (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def report(self, name: str) -> dict[str, Any]:
        """Host ``name``'s report (:func:`tests.hosts.harness.run_host`), run once per session."""
        path = self.root / f"{name}.json"
        with (self.root / f"{name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not path.exists():
                try:
                    outcome: dict[str, Any] = {"report": run_host(BY_NAME[name], self.root / name)}
                except VenvBuildError as exc:
                    outcome = {"venv_error": str(exc)}
                except Exception:
                    outcome = {"error": traceback.format_exc()}
                path.write_text(json.dumps(outcome))
            outcome = json.loads(path.read_text())
        if "venv_error" in outcome:
            backend_unavailable(f"host venv {BY_NAME[name].venv}", outcome["venv_error"])
        if "error" in outcome:
            pytest.fail(f"{name}: the host run failed:\n{outcome['error']}", pytrace=False)
        report: dict[str, Any] = outcome["report"]
        return report


@pytest.fixture(scope="session")
def host_runs(tmp_path_factory: pytest.TempPathFactory) -> HostRuns:
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the session's folder, shared by its workers
    return HostRuns(base / "host-runs")
