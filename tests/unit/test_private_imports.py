"""No module of docbinder uses another module's private (``_name``) names (ADR 0050).

A name that starts with one underscore belongs to the module that defines it:
other modules import public names only, whether with ``from m import _x``, a
relative import, or ``m._x`` on an imported module. A private *module*
(``integrations/_rendering.py``) belongs to its package: modules of that package
may import it, others may not. Dunder names (``__version__``) are public.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import docbinder

ROOT = Path(docbinder.__file__).resolve().parent


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_module(dotted: str) -> bool:
    """Whether ``dotted`` (``docbinder.x.y``) is a module or package of docbinder."""
    parts = dotted.split(".")
    if parts[0] != "docbinder":
        return False
    path = ROOT.joinpath(*parts[1:])
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _owner(dotted: str) -> str:
    """The package a module belongs to (``docbinder.a.b`` -> ``docbinder.a``)."""
    return dotted.rpartition(".")[0]


def _module_may_use(importer: str, module: str) -> bool:
    """A private module is usable from its own package (and the packages inside it)."""
    parts = module.split(".")
    for depth, part in enumerate(parts):
        if _is_private(part):
            package = ".".join(parts[:depth])
            if not (importer == package or importer.startswith(package + ".")):
                return False
    return True


def _absolute(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer if is_package else _owner(importer)
    for _ in range(node.level - 1):
        base = _owner(base)
    return f"{base}.{node.module}" if node.module else base


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; ``None`` for anything but names and attributes."""
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    names.append(node.id)
    return names[::-1]


def private_uses(importer: str, source: str, *, is_package: bool = False) -> list[str]:
    """Every use in ``source`` (the module ``importer``) of another module's private name."""
    tree = ast.parse(source)
    found: list[str] = []
    modules: dict[str, str] = {}  # local name -> the docbinder module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = _absolute(importer, is_package, node)
            if not _is_module(module):
                continue
            if not _module_may_use(importer, module):
                found.append(f"{importer}:{node.lineno} imports from private module {module}")
            for alias in node.names:
                target = f"{module}.{alias.name}"
                if _is_module(target):
                    if not _module_may_use(importer, target):
                        found.append(f"{importer}:{node.lineno} imports private module {target}")
                    modules[alias.asname or alias.name] = target
                elif _is_private(alias.name):
                    found.append(f"{importer}:{node.lineno} imports {target}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if not _is_module(alias.name):
                    continue
                if not _module_may_use(importer, alias.name):
                    found.append(f"{importer}:{node.lineno} imports private module {alias.name}")
                if alias.asname:
                    modules[alias.asname] = alias.name
                else:
                    modules[alias.name.split(".")[0]] = alias.name.split(".")[0]
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        chain = _dotted(node)
        if chain is None or chain[0] not in modules:
            continue
        module = modules[chain[0]]
        for name in chain[1:]:
            if _is_module(f"{module}.{name}"):
                module = f"{module}.{name}"
                if not _module_may_use(importer, module):
                    found.append(f"{importer}:{node.lineno} uses private module {module}")
                    break
                continue
            if _is_private(name) and module != importer:
                found.append(f"{importer}:{node.lineno} uses {module}.{name}")
            break
    return sorted(set(found))


def _modules() -> list[tuple[str, Path, bool]]:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = ["docbinder", *path.relative_to(ROOT).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found.append((".".join(parts), path, is_package))
    return found


def test_no_module_of_docbinder_uses_another_modules_private_names() -> None:
    found: list[str] = []
    for module, path, is_package in _modules():
        found.extend(private_uses(module, path.read_text(encoding="utf-8"), is_package=is_package))
    assert found == []


@pytest.mark.parametrize(
    "source",
    [
        "from docbinder.domain.parsing.raw import _bounded_repr\n",
        "from docbinder.domain.parsing.raw import plain, _bounded_repr as br\n",
        "from .raw import _bounded_repr\n",
        "from docbinder.domain.parsing import raw\nraw._bounded_repr('x', 1)\n",
        "import docbinder.domain.parsing.raw as raw\nraw._bounded_repr('x', 1)\n",
        "import docbinder.domain.parsing.raw\ndocbinder.domain.parsing.raw._bounded_repr('x', 1)\n",
        "from docbinder.container import _plugin\n",
        "from docbinder.integrations._rendering import artifact\n",
        "from docbinder.integrations import _rendering\n",
    ],
)
def test_the_check_sees_each_way_of_reaching_a_private_name(source: str) -> None:
    assert private_uses("docbinder.domain.parsing.walker", source) != []


@pytest.mark.parametrize(
    ("importer", "source"),
    [
        ("docbinder.domain.parsing.walker", "from docbinder.domain.parsing.raw import plain\n"),
        ("docbinder.domain.parsing.walker", "from .raw import plain\n"),
        ("docbinder.domain.parsing.walker", "from docbinder import __name__ as n\n"),
        ("docbinder.domain.parsing.walker", "import json\njson._default_encoder\n"),
        ("docbinder.integrations.langchain", "from docbinder.integrations._rendering import a\n"),
        ("docbinder.integrations.mcp.server", "from docbinder.integrations import _rendering\n"),
    ],
)
def test_the_check_lets_public_names_and_a_packages_own_private_modules_pass(
    importer: str, source: str
) -> None:
    assert private_uses(importer, source) == []
