"""Each framework integration needs its pip extra, and says so by name when it is missing."""

from __future__ import annotations

import importlib
import sys

import pytest

from docbinder.domain.errors import MissingExtra

CASES = [
    ("docbinder.integrations.langchain", "langchain_core", "langchain"),
    ("docbinder.integrations.openai_agents", "agents", "openai-agents"),
    ("docbinder.integrations.pydantic_ai", "pydantic_ai", "pydantic-ai"),
]


@pytest.mark.parametrize(("module", "package", "extra"), CASES)
def test_import_without_the_framework_names_the_pip_command(
    monkeypatch: pytest.MonkeyPatch, module: str, package: str, extra: str
) -> None:
    pytest.importorskip(package)
    for name in list(sys.modules):
        if name in (package, module) or name.startswith(f"{package}."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, package, None)  # what an uninstalled package looks like

    with pytest.raises(MissingExtra) as raised:
        importlib.import_module(module)

    assert f"pip install -e '.[{extra}]'" in str(raised.value)
    assert raised.value.extra == extra
    assert isinstance(raised.value, ImportError)


@pytest.mark.parametrize(("module", "package", "extra"), CASES)
def test_import_with_the_framework_works(module: str, package: str, extra: str) -> None:
    pytest.importorskip(package)
    assert callable(importlib.import_module(module).render_tool)
