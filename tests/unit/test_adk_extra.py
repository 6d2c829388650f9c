"""Importing the ADK integration without google-adk names the pip extra."""

from __future__ import annotations

import importlib
import sys

import pytest

from docbinder.domain.errors import MissingExtra


def test_missing_google_adk_raises_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "docbinder.integrations.adk", raising=False)
    # A None entry makes "import google.adk..." raise ImportError, as without the package.
    monkeypatch.setitem(sys.modules, "google.adk", None)
    monkeypatch.setitem(sys.modules, "google.adk.artifacts", None)
    with pytest.raises(MissingExtra, match=r"pip install -e '\.\[adk\]'"):
        importlib.import_module("docbinder.integrations.adk")
    monkeypatch.delitem(sys.modules, "docbinder.integrations.adk", raising=False)
