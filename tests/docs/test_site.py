"""The rules of the README and the docs site that a reader relies on, and the runner's own rules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scripts.link_adrs import bare_mentions
from tests.docs.examples import (
    DOCS,
    ROOT,
    _transcript,
    _without_install_steps,
    assert_output,
    check_install_line,
    example_documents,
    parse,
)

README = ROOT / "README.md"
PAGES = [p for p in DOCS.rglob("*.md") if p.relative_to(DOCS).parts[0] != "adr"]


# -- the README -----------------------------------------------------------------------------


def test_the_readme_is_read_in_a_minute() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 150


def test_the_readme_draws_the_flow_as_a_mermaid_diagram() -> None:
    [diagram] = [b for b in parse(README).blocks if b.language == "mermaid"]
    for step in ("FileItem", "ChatDocument", "ChatMessage", "docItem:", "documentList", "content"):
        assert step in diagram.text, step


def test_the_readme_names_the_symptom_it_solves() -> None:
    text = README.read_text(encoding="utf-8")
    assert "0 valid ContentParts" in text and '{"id": "report.pdf"}' in text


def test_the_quick_start_is_two_commands_each_with_what_it_prints() -> None:
    section = README.read_text(encoding="utf-8").split("## Quick start", 1)[1].split("\n## ", 1)[0]
    quick = [b for b in parse(README).blocks if b.language == "console" and b.text in section]
    assert len(quick) == 2
    demo, tests = quick
    [demo_command], [demo_output] = _transcript(demo.text)
    assert demo_command.startswith("python3 -m venv .venv && ") and " demo " in demo_command
    assert demo.directive("installed") is not None and demo_output.strip()
    [test_command], [test_output] = _transcript(tests.text)
    assert test_command.endswith("scripts/test.sh") and test_output.strip()
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    getting_started = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    assert test_command in getting_started


def test_the_readme_has_three_next_commands_that_work_as_typed() -> None:
    section = README.read_text(encoding="utf-8").split("## Next", 1)[1].split("\n## ", 1)[0]
    [block] = [b for b in parse(README).blocks if b.language == "console" and b.text in section]
    commands, _ = _transcript(block.text)
    assert len(commands) == 3
    # not activated: the venv's own path, as the quick start left it
    assert all(c.startswith(".venv/bin/docbinder ") for c in commands)


def test_the_readme_links_every_guide() -> None:
    text = README.read_text(encoding="utf-8")
    for page in sorted((DOCS / "guides").glob("*.md")):
        assert f"(docs/guides/{page.name})" in text, page.name
    for page in ("getting-started", "concepts", "storage", "formats", "tools", "security"):
        assert f"(docs/{page}.md)" in text, page


# -- every page -----------------------------------------------------------------------------


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: str(p.relative_to(ROOT)))
def test_adr_numbers_are_links(page: Path) -> None:
    assert bare_mentions(page.read_text(encoding="utf-8")) == [], "run python scripts/link_adrs.py"


def test_no_install_line_names_an_unpublished_package() -> None:
    """README, pages and the package's own messages install docbinder from a clone only.

    The ADRs are left out: they record what the lines said before.
    """
    sources = [README, *PAGES, *(ROOT / "docbinder").rglob("*.py")]
    for source in sources:
        text = source.read_text(encoding="utf-8")
        assert not re.search(r"pip install ['\"]?docbinder", text), source
        for line in re.findall(r"pip3? install [^\n`]*", text):
            if source.suffix == ".md":
                check_install_line(line, str(source.relative_to(ROOT)))


def test_every_install_line_of_the_docs_is_checked() -> None:
    check_install_line("pip install -e '.[mcp,extract]'", "ok")
    with pytest.raises(AssertionError, match="no published package"):
        check_install_line("pip install 'docbinder[s3]'", "here")
    with pytest.raises(AssertionError, match="no extra"):
        check_install_line("pip install -e '.[s4]'", "here")


def test_a_block_run_by_another_test_names_a_test_that_reads_its_page() -> None:
    for document in example_documents():
        for block in parse(document).blocks:
            tester = block.directive("tested-by")
            if tester is not None:
                source = (ROOT / tester).read_text(encoding="utf-8")
                assert document.name in source or document.stem in source, (document, tester)


def test_skipped_blocks_say_why_and_stay_few() -> None:
    skipped = [
        (d.name, b.line, b.directive("skip"))
        for d in example_documents()
        for b in parse(d).blocks
        if b.directive("skip") is not None
    ]
    assert all(reason for _, _, reason in skipped), skipped
    assert len(skipped) <= 8, skipped


# -- the runner -----------------------------------------------------------------------------


def test_an_output_matches_with_ellipses_and_any_uuid() -> None:
    shown = "id 3c1f0a52-8d4e-4b7a-9f1e-2a6c5b7d8e90\n...\nagain 3c1f0a52-8d4e-4b7a-9f1e-2a6c5b7d8e90 in ...s\n"
    printed = "id 11111111-2222-4333-8444-555555555555\nx\ny\nagain 11111111-2222-4333-8444-555555555555 in 0.2s\n"
    assert_output(shown, printed, "here")


def test_the_same_uuid_shown_twice_must_be_the_same_uuid() -> None:
    shown = "a 3c1f0a52-8d4e-4b7a-9f1e-2a6c5b7d8e90\nb 3c1f0a52-8d4e-4b7a-9f1e-2a6c5b7d8e90\n"
    printed = "a 11111111-2222-4333-8444-555555555555\nb 99999999-2222-4333-8444-555555555555\n"
    with pytest.raises(AssertionError, match="differs"):
        assert_output(shown, printed, "here")


def test_an_output_that_differs_fails_with_a_diff() -> None:
    with pytest.raises(AssertionError, match=r"-1 of 1\n\+0 of 1"):
        assert_output("1 of 1\n", "0 of 1\n", "here")


def test_a_transcript_splits_commands_and_what_they_print() -> None:
    commands, outputs = _transcript("$ echo a \\\n  b\na b\n$ true\n")
    assert commands == ["echo a \\\n  b", "true"] and outputs == ["a b\n", ""]


def test_the_install_steps_of_a_quick_start_are_taken_as_done() -> None:
    command = "python3 -m venv .venv && .venv/bin/pip install -q -e '.[extract]' && .venv/bin/docbinder demo"
    assert _without_install_steps(command) == ".venv/bin/docbinder demo"


def test_an_output_block_must_follow_its_block(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text('Text.\n\n```text title="Output"\nx\n```\n', encoding="utf-8")
    with pytest.raises(AssertionError, match="must directly follow"):
        parse(page)


def test_the_formats_table_shows_ocr_and_coverage_and_the_readme_says_so() -> None:
    """Scans and images: which rows are read by OCR, how it is marked, and the page coverage."""
    import attrs

    from docbinder.domain.model import ContentPart, PageCoverage

    page = (DOCS / "formats.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(): line for line in page.splitlines() if line.startswith("| ")}
    scanned = rows["PDF, scanned (pages without a text layer)"]
    images = rows["images (PNG, JPEG, TIFF, WebP, BMP, GIF)"]
    for row in (scanned, images):
        assert "OCR" in row and "Tesseract" in row and "`coverage`" in row, row
    marks = [f.name for f in attrs.fields(ContentPart) if f.name.startswith("ocr")]
    assert sorted(marks) == ["ocr", "ocr_confidence", "ocr_engine"]
    assert "`ocr=True`" in scanned and all(f"`{m}`" in scanned for m in marks[1:])
    assert "`coverage`" in rows["PDF"]
    for field in attrs.fields(PageCoverage):  # every count the coverage paragraph names
        assert f"`{field.name}`" in page, field.name
    [link] = [
        line
        for line in README.read_text(encoding="utf-8").splitlines()
        if "(docs/formats.md)" in line
    ]
    assert "OCR" in link and "coverage" in link
