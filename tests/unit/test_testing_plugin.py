"""docbinder.testing: the plugin's fixtures, its registration, and imports that stay lazy."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from docbinder.application import DocBinder, Run
from docbinder.domain.model import Principal
from docbinder.testing.plugin import PrincipalFactory

ROOT = Path(__file__).resolve().parents[2]


def test_the_run_fixture_is_bound_to_a_fresh_workflow(
    docbinder_run: Run, docbinder_principal: Principal
) -> None:
    assert docbinder_run.workflow is not None and docbinder_run.workflow.messages == ()
    assert docbinder_run.principal == docbinder_principal
    produced = docbinder_run.produce_file("a.txt", b"abc")
    assert [p.text for p in docbinder_run.get_content(produced.reference).parts] == ["abc"]


def test_the_memory_binder_starts_empty(
    docbinder_binder: DocBinder, docbinder_principal: Principal
) -> None:
    assert docbinder_binder.blobs.url == "memory://"
    assert list(docbinder_binder.blobs.keys()) == []
    assert docbinder_binder.list_files(docbinder_principal) == []


def test_the_sqlite_binder_lives_under_the_tests_temporary_directory(
    docbinder_sqlite_binder: DocBinder, docbinder_principal: Principal, tmp_path: Path
) -> None:
    home = tmp_path / "docbinder-home"
    assert docbinder_sqlite_binder.blobs.url == (home / "blobs").as_uri()
    run = docbinder_sqlite_binder.start_new_run(docbinder_principal)
    run.produce_file("a.txt", b"abc")
    assert (home / "docbinder.db").is_file()
    assert [f.file_name for f in docbinder_sqlite_binder.list_files(docbinder_principal)] == [
        "a.txt"
    ]


def test_the_principal_factory_fills_in_defaults(
    docbinder_principal_factory: PrincipalFactory,
) -> None:
    assert docbinder_principal_factory() == Principal("user-1", "mandate-1", None, ("member",))
    assert docbinder_principal_factory("bob", "m2", "fi-1", ["admin"]) == Principal(
        "bob", "m2", "fi-1", ("admin",)
    )


def test_pyproject_registers_the_plugin_under_its_module_name() -> None:
    """Same name and module: listing it in pytest_plugins too never registers it twice."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["entry-points"]["pytest11"] == {
        "docbinder.testing.plugin": "docbinder.testing.plugin"
    }
    assert project["optional-dependencies"]["testing"] == ["pytest>=8", "hypothesis>=6.100"]


def test_importing_docbinder_imports_neither_pytest_nor_the_suites() -> None:
    code = (
        "import sys, docbinder, docbinder.container, docbinder.application\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('pytest', '_pytest', 'hypothesis')"
        " or m.startswith('docbinder.testing')]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=120)


def test_the_plugin_loads_without_importing_the_suites() -> None:
    code = (
        "import sys, docbinder.testing.plugin\n"
        "assert 'hypothesis' not in sys.modules\n"
        "assert not [m for m in sys.modules if m.endswith('_suite')]\n"
        "from docbinder.testing import BlobStoreContract\n"
        "assert 'docbinder.testing.blob_suite' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=120)


_LEAK_CHECK = """
import os

import pytest

seen = []


@pytest.mark.parametrize("i", range(3))
def test_uses_the_binders(docbinder_sqlite_binder, docbinder_run, docbinder_principal, i):
    run = docbinder_sqlite_binder.start_new_run(docbinder_principal)
    run.produce_file(f"a{i}.md", b"x" * 100_000)
    assert len(docbinder_sqlite_binder.list_files(docbinder_principal)) == 1
    docbinder_run.produce_file("b.md", b"y")
    seen.append((docbinder_sqlite_binder, docbinder_run.binder))


def _open_files():
    names = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            names.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    return names


def test_zz_the_earlier_binders_were_closed():
    assert len(seen) == 3
    assert [f for f in _open_files() if "docbinder-home" in f] == []
    assert all(sqlite.closed and memory.closed for sqlite, memory in seen)
"""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd (Linux)")
def test_the_binder_fixtures_close_their_binders_when_the_test_ends(tmp_path: Path) -> None:
    """Without the close, every earlier test's SQLite file stays open (fds pile up)."""
    (tmp_path / "test_leak.py").write_text(_LEAK_CHECK, encoding="utf-8")
    # -p names the plugin as the entry point does (registered once either way), so
    # the check also runs where the package's entry points are not installed.
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["-p", "docbinder.testing.plugin", "test_leak.py"]
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run(
        command,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout
