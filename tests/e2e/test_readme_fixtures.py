"""The README's host test runs under pytest with nothing but docbinder's plugin."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

from tests.e2e.readme_examples import example

PLUGIN = "docbinder.testing.plugin"


def test_the_readme_host_test_passes_with_the_plugin_fixtures(tmp_path: Path) -> None:
    (tmp_path / "test_my_tools.py").write_text(
        example("Test your host with docbinder's fixtures"), encoding="utf-8"
    )
    # An installed docbinder loads the plugin through its pytest11 entry point; an
    # editable install made before the entry point existed needs it named (-p with
    # the same name registers it once either way).
    installed = any(ep.name == PLUGIN for ep in entry_points(group="pytest11"))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        + ([] if installed else ["-p", PLUGIN])
        + ["test_my_tools.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


def test_the_readme_host_test_fails_when_docbinder_breaks_its_promise(tmp_path: Path) -> None:
    """The same file against a binder that lets another mandate read: pytest reports it."""
    (tmp_path / "test_my_tools.py").write_text(
        example("Test your host with docbinder's fixtures"), encoding="utf-8"
    )
    (tmp_path / "conftest.py").write_text(
        "import pytest\n"
        "from docbinder.container import build_binder\n\n\n"
        "class EveryoneMayDoEverything:\n"
        "    name = 'open'\n\n"
        "    def is_allowed(self, principal, action, resource):\n"
        "        return True\n\n\n"
        "@pytest.fixture\n"
        "def docbinder_binder():\n"
        "    return build_binder(database_url='memory://', blob_url='memory://',\n"
        "                        authorizer=EveryoneMayDoEverything())\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", PLUGIN],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout
    assert "test_other_mandates_see_nothing" in done.stdout
