"""The rules of the README and the docs site that a reader relies on, and the runner's own rules."""

from __future__ import annotations

import ast
import itertools
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
    extras,
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


def test_the_readme_says_what_the_test_command_touches_and_how_long_it_took() -> None:
    section = README.read_text(encoding="utf-8").split("## Quick start", 1)[1].split("\n## ", 1)[0]
    conftest = (ROOT / "tests" / "conftest.py").read_text(encoding="utf-8")
    sql = (ROOT / "tests" / "contract" / "sql_backends.py").read_text(encoding="utf-8")
    for server in ("postgres@127.0.0.1:5432/test", "root@127.0.0.1:3306"):  # the tests' defaults
        assert f"`{server}`" in section and f"://{server}" in conftest, server
    assert "`docbinder_t_<hex>`" in section and 'f"docbinder_t_{' in sql
    assert "dropped" in section and "127.0.0.1" in section
    assert re.search(r"on 2 cores took \d+ min \d+ s", section)
    assert "(docs/contributing.md#the-test-command)" in section


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


def _heading_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_of_the_readme_reaches_a_file_and_heading_of_the_clone() -> None:
    """``mkdocs build --strict`` checks the site's links; the README is read on GitHub instead."""
    links = re.findall(r"\]\(([^)\s]+)\)", README.read_text(encoding="utf-8"))
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert len(local) > 20
    for link in local:
        path, _, anchor = link.partition("#")
        target = ROOT / path
        assert target.exists(), link
        if anchor:
            prose = re.sub(
                r"^```.*?^```", "", target.read_text(encoding="utf-8"), flags=re.M | re.S
            )
            headings = re.findall(r"^#+ (.*)$", prose, re.M)
            assert anchor in {_heading_anchor(h) for h in headings}, link


# -- every page -----------------------------------------------------------------------------


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: str(p.relative_to(ROOT)))
def test_adr_numbers_are_links(page: Path) -> None:
    assert bare_mentions(page.read_text(encoding="utf-8")) == [], "run python scripts/link_adrs.py"


def test_no_install_line_names_an_unpublished_package() -> None:
    """README, pages, ADRs and the package's own messages install docbinder from a clone only.

    ADR 0069 is left out: its context quotes the line it replaced.
    """
    adrs = [p for p in (DOCS / "adr").glob("*.md") if not p.name.startswith("0069-")]
    sources = [README, *PAGES, *adrs, *(ROOT / "docbinder").rglob("*.py")]
    for source in sources:
        text = source.read_text(encoding="utf-8")
        assert not re.search(r"pip install ['\"]?docbinder", text), source
        for line in re.findall(r"pip3? install [^\n`]*", text):
            if source.suffix == ".md":
                check_install_line(line, str(source.relative_to(ROOT)))


def test_every_extra_the_package_tells_a_user_to_install_is_declared() -> None:
    """``MissingExtra``, the notes and the CLI help name extras ``pyproject.toml`` declares.

    An extra that is not declared would make ``pip install -e '.[x]'`` install nothing
    and the error would come back.
    """
    from docbinder.adapters.sql.engine import _DRIVERS

    named = {(extra, "the SQL engine") for _, _, extra, _ in _DRIVERS.values()}
    for source in (ROOT / "docbinder").rglob("*.py"):
        text = source.read_text(encoding="utf-8")
        where = str(source.relative_to(ROOT))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "MissingExtra":
                extra = node.args[1] if len(node.args) > 1 else None
                if isinstance(extra, ast.Constant):
                    named.add((extra.value, where))
                else:  # the SQL engine passes its table's extra, checked above
                    assert where.endswith("sql/engine.py"), (where, ast.unparse(node))
        for listed in re.findall(r"-e\s+'\.\\*\[([^\]]+)\]'", text):
            named |= {(e.strip(), where) for e in listed.split(",") if "{" not in e}
    assert len(named) > 10
    assert {(extra, where) for extra, where in named if extra not in extras()} == set()


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
    assert len(skipped) <= 7, skipped


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


def test_a_directive_quoted_in_the_prose_is_text(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Write `<!-- examples: free-port N -->` for a page and ``<!-- example: skip REASON -->``\n"
        "before a block.\n\n<!-- example: file a.toml -->\n```toml\nx = 1\n```\n",
        encoding="utf-8",
    )
    document = parse(page)
    assert document.settings == []
    assert [b.directives for b in document.blocks] == [["file a.toml"]]


# -- blocks that show the code's own text -----------------------------------------------------


def test_the_command_synopsis_of_the_cli_guide_names_real_commands_and_options() -> None:
    """Each line of the synopsis names commands and options the CLI has; every command is on one."""
    from scripts.docs_reference import _commands

    [synopsis] = [b for b in parse(DOCS / "guides" / "cli.md").blocks if b.language == "text"]
    assert synopsis.directive("tested-by") == "tests/docs/test_site.py"
    commands = dict(_commands())
    root_options = {o for p in commands["docbinder"].params for o in (*p.opts, *p.secondary_opts)}
    named: set[str] = set()
    for line in synopsis.text.splitlines():
        words = line.split()
        assert words[0] == "docbinder", line
        path = "docbinder"
        for word in words[1:]:
            if f"{path} {word}" not in commands:
                break
            path = f"{path} {word}"
        parent = path.rsplit(" ", 1)[0] if path != "docbinder" else path
        targets = {path} | {
            f"{parent} {after}"
            for bar, after in itertools.pairwise(words)
            if bar == "|" and f"{parent} {after}" in commands
        }
        named |= targets
        options = root_options | {
            o for t in targets for p in commands[t].params for o in (*p.opts, *p.secondary_opts)
        }
        for option in re.findall(r"(?<![\w-])--[a-z][a-z-]*", line):
            assert option in options, (line, option)
    leaves = {n for n, c in commands.items() if not hasattr(c, "list_commands")}
    assert leaves <= named, sorted(leaves - named)


def _members(cls: ast.ClassDef) -> list[tuple[str, list[str], str, str]]:
    """Each method of ``cls``: name, decorators, arguments and return annotation, as source."""
    return [
        (
            f.name,
            [ast.unparse(d) for d in f.decorator_list],
            ast.unparse(f.args),
            ast.unparse(f.returns),
        )
        for f in cls.body
        if isinstance(f, ast.FunctionDef) and f.returns is not None
    ]


def test_the_casbin_page_shows_the_authorizer_port_as_declared() -> None:
    [shown] = [b for b in parse(DOCS / "casbin.md").blocks if b.language == "python"][:1]
    assert shown.directive("tested-by") == "tests/docs/test_site.py"
    source = (ROOT / "docbinder" / "ports" / "authorizer.py").read_text(encoding="utf-8")
    [declared] = [
        n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "Authorizer"
    ]
    [page] = ast.parse(shown.text).body
    assert isinstance(page, ast.ClassDef) and page.name == declared.name
    assert [ast.unparse(b) for b in page.bases] == [ast.unparse(b) for b in declared.bases]
    assert _members(page) == _members(declared) != []


def test_the_casbin_page_shows_the_shipped_row_shape_and_matcher() -> None:
    page = DOCS / "casbin.md"
    model = (ROOT / "docbinder" / "adapters" / "rbac" / "model.conf").read_text(encoding="utf-8")
    shown = [b for b in parse(page).blocks if b.directive("tested-by") == "tests/docs/test_site.py"]
    assert [b.language for b in shown] == ["python", "", "ini"]
    row, matcher = (b.text.strip() for b in shown[1:])
    assert f"#   {row}\n" in model  # the model's own comment on a row
    assert "p = " + row.removeprefix("p, ") in model  # its policy definition
    assert "[matchers]\n" + matcher + "\n" in model


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
