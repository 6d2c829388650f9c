"""The generated reference pages are what the code says today (``python scripts/docs_reference.py``)."""

from __future__ import annotations

import attrs
import pytest

from docbinder import config
from scripts import docs_reference


@pytest.mark.parametrize("page", list(docs_reference.PAGES), ids=lambda p: p.name)
def test_the_reference_page_is_generated_from_the_current_code(page) -> None:  # type: ignore[no-untyped-def]
    current = page.read_text(encoding="utf-8")
    assert current == docs_reference.PAGES[page](), "run python scripts/docs_reference.py"


def test_every_setting_has_a_docstring_and_a_row() -> None:
    rows = {r["setting"].strip("`"): r for r in docs_reference.settings_rows()}
    assert list(rows) == list(config.SETTING_NAMES)
    assert set(config.SETTING_NAMES) == {f.name for f in attrs.fields(config.Settings)} - {
        "sources"
    }
    assert rows["extract_max_bytes"]["default"] == "`52428800` (50 MiB)"
    assert rows["s3_whole_bucket"]["environment"] == "`DOCBINDER_S3_WHOLE_BUCKET`"


def test_a_setting_without_a_docstring_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config, "SETTING_NAMES", (*config.SETTING_NAMES, "home_without_doc"))
    with pytest.raises(LookupError, match="home_without_doc"):
        docs_reference.settings_rows()


def test_the_cli_reference_names_every_command_and_the_environment_it_reads() -> None:
    page = docs_reference.cli_reference()
    for command in (
        "docbinder demo",
        "docbinder workflow advance",
        "docbinder files rm",
        "docbinder mcp",
    ):
        assert f"`{command}`" in page
    assert ("DOCBINDER_MANDATE", "--mandate", "docbinder") in docs_reference.cli_environment()
