"""The pytest-plugin guide's host test fails when docbinder breaks the promise it checks.

That it passes as shown is checked with the guide's other examples (``tests/docs``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.docs.examples import ROOT, parse

PLUGIN = "docbinder.testing.plugin"


def test_the_readme_host_test_fails_when_docbinder_breaks_its_promise(tmp_path: Path) -> None:
    """The guide's test file against a binder that lets another mandate read: pytest reports it."""
    [test_file] = [
        b.text
        for b in parse(ROOT / "docs" / "guides" / "pytest-plugin.md").blocks
        if b.directive("file") == "test_my_tools.py"
    ]
    (tmp_path / "test_my_tools.py").write_text(test_file, encoding="utf-8")
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
