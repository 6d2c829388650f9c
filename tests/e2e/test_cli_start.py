"""What a command loads at start, and how the command line's modules depend on each other.

Speed itself is a benchmark (``bench/bench_cli_start.py``); these tests pin what
makes it: ``--version`` loads no command, a command on a migrated home loads
neither the migrations (Alembic) nor dependency-injector's wiring (FastAPI),
the converters or the integrations, and the CLI's modules form no circle.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

NEVER_ON_A_MIGRATED_HOME = (
    "alembic",
    "docbinder.adapters.sql.migration",
    "dependency_injector.containers",
    "dependency_injector.wiring",
    "fastapi",
    "docbinder.integrations",
    "docbinder.tools",
    "docbinder.toolset",
    "mcp",
    "pypdf",
    "markitdown",
    "openpyxl",
)
"""Modules ``docbinder files ls`` does not need once the schema is at head."""


def _imported(*args: str, home: Path | None = None) -> tuple[set[str], str]:
    """The modules ``python -m docbinder ARGS`` imported (``-X importtime``), and its stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCBINDER_")}
    env["PYTHONPATH"] = str(ROOT)
    argv = [sys.executable, "-X", "importtime", "-m", "docbinder"]
    if home is not None:
        argv += ["--home", str(home), "--user", "alice"]
    done = subprocess.run(
        [*argv, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    modules = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return modules, done.stdout


def _loaded(modules: set[str], package: str) -> list[str]:
    return sorted(m for m in modules if m == package or m.startswith(package + "."))


def test_version_loads_no_command_and_no_library_module() -> None:
    modules, stdout = _imported("--version")
    assert stdout.startswith("docbinder ")
    for package in ("typer", "click", "rich", "docbinder.application", "docbinder.cli.main"):
        assert not _loaded(modules, package), package


def test_import_docbinder_loads_none_of_its_modules() -> None:
    code = (
        "import docbinder, sys; print(sorted(m for m in sys.modules if m.startswith('docbinder.')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert done.stdout.strip() == "[]"


NEVER_ON_AN_EMPTY_HOME = (
    *NEVER_ON_A_MIGRATED_HOME,
    "sqlalchemy",
    "dependency_injector",
    "docbinder.container",
    "docbinder.adapters",
    "docbinder.application.binder",
    "pydantic",
)
"""Modules ``docbinder files ls`` does not need before anything was stored (ADR 0063)."""


def test_files_ls_on_an_empty_home_creates_nothing_and_builds_no_binder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    modules, stdout = _imported("files", "ls", home=home)
    assert stdout == "no files\n"
    assert not home.exists()  # a mistyped --home leaves no database behind
    for package in NEVER_ON_AN_EMPTY_HOME:
        assert not _loaded(modules, package), package
    _, stdout = _imported("workflow", "ls", "--json", home=home)
    assert stdout == "[]\n"
    assert not home.exists()


def test_the_first_write_migrates_an_empty_home_then_ls_loads_no_migrations(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    first, _ = _imported("workflow", "new", home=home)
    assert _loaded(first, "alembic")  # the embedded default migrates on first use
    assert (home / "docbinder.db").is_file()
    again, stdout = _imported("files", "ls", home=home)
    assert stdout == "no files\n"
    for package in NEVER_ON_A_MIGRATED_HOME:
        assert not _loaded(again, package), package


def test_a_home_behind_head_is_migrated_on_first_use(tmp_path: Path) -> None:
    from docbinder.adapters.sql import current_revision, head_revision, migrate

    home = tmp_path / "home"
    home.mkdir()
    url = f"sqlite:///{home / 'docbinder.db'}"
    migrate(url, "0003")
    assert current_revision(url) == "0003"
    modules, stdout = _imported("files", "ls", home=home)
    assert stdout == "no files\n"
    assert _loaded(modules, "alembic")
    assert current_revision(url) == head_revision()


def test_head_revision_known_without_alembic_is_alembics_head() -> None:
    from docbinder.adapters.sql import head_revision
    from docbinder.adapters.sql.revision import HEAD_REVISION

    assert head_revision() == HEAD_REVISION


# ---------------------------------------------------------------- the CLI's own imports

CLI = ROOT / "docbinder" / "cli"

COMMAND_MODULES = (
    "attach",
    "demo",
    "doctor",
    "files",
    "gc",
    "resolve",
    "serve",
    "store",
    "workflow",
)
"""One module per command or group; ``main`` assembles them."""


def _cli_imports() -> dict[str, set[str]]:
    """Module of ``docbinder.cli`` -> the modules of ``docbinder.cli`` it imports (anywhere in it)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(CLI.glob("*.py")):
        name = path.stem
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module == "docbinder.cli":
                    found.update(a.name for a in node.names if (CLI / f"{a.name}.py").exists())
                elif node.module.startswith("docbinder.cli."):
                    found.add(node.module.split(".")[2])
        found.discard(name)
        graph[name] = found
    return graph


def test_command_modules_import_no_other_command_module_nor_main() -> None:
    graph = _cli_imports()
    for name in COMMAND_MODULES:
        others = graph[name] & {*COMMAND_MODULES, "main"}
        assert not others, f"docbinder.cli.{name} imports {sorted(others)}"
    shared = set(graph) - {*COMMAND_MODULES, "main", "__init__"}
    for name in shared:
        assert not graph[name] & {*COMMAND_MODULES, "main"}, name


def test_the_cli_modules_form_no_circle() -> None:
    graph = _cli_imports()

    def circle_from(start: str) -> list[str] | None:
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in graph.get(node, ()):
                if nxt == start:
                    return [*path, nxt]
                if nxt not in path:
                    stack.append((nxt, [*path, nxt]))
        return None

    circles = [c for c in (circle_from(name) for name in graph) if c]
    assert not circles, " -> ".join(circles[0])


@pytest.mark.parametrize(
    "path",
    [
        *sorted(CLI.glob("*.py")),
        ROOT / "docbinder" / "config.py",
        ROOT / "docbinder" / "container.py",
    ],
    ids=lambda p: p.name,
)
def test_no_private_name_is_imported_from_another_module(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    private = [
        f"{node.module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("docbinder")
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]
    assert not private


def test_the_help_lists_the_commands_in_their_order() -> None:
    from typer.testing import CliRunner

    from docbinder.cli.main import app

    shown = CliRunner().invoke(app, ["--help"]).stdout
    order = [
        "demo",
        "attach",
        "resolve",
        "gc",
        "migrate",
        "doctor",
        "mcp",
        "workflow",
        "files",
        "store",
    ]
    positions = [shown.index(f"│ {name} ") for name in order]
    assert all(a < b for a, b in pairwise(positions))


def test_a_command_leaves_the_database_file_whole_for_a_plain_copy(tmp_path: Path) -> None:
    import shutil
    import sqlite3

    home = tmp_path / "home"
    _imported("workflow", "new", home=home)
    assert not (home / "docbinder.db-wal").exists()  # the log was folded into the file
    copy = tmp_path / "copy.db"
    shutil.copyfile(home / "docbinder.db", copy)  # the database file alone, as cp would
    with sqlite3.connect(copy) as conn:
        assert conn.execute("SELECT count(*) FROM workflows").fetchone() == (1,)


def test_a_workflow_named_on_a_home_without_a_database_is_not_found_and_nothing_is_made(
    tmp_path: Path,
) -> None:
    home = tmp_path / "mistyped"
    note = tmp_path / "note.md"
    note.write_text("hello")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCBINDER_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "docbinder", "--home", str(home), "attach", str(note), "-w", "wf-1"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 1
    assert f"workflow wf-1 not found: no database at {home / 'docbinder.db'} yet" in done.stderr
    assert not home.exists()
