"""``docbinder demo`` and ``resolve --content`` on Word, Excel and PowerPoint files."""

from __future__ import annotations

import json
from pathlib import Path

from tests import documents
from tests.e2e.test_cli import _restore_logging, cli, home  # noqa: F401 - fixtures


def test_demo_shows_the_text_of_docx_xlsx_and_pptx(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    files = {
        "report.docx": documents.docx_bytes(),
        "table.xlsx": documents.xlsx_bytes(sheets=2),
        "deck.pptx": documents.pptx_bytes(slides=2),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    shown = cli("demo", *(str(tmp_path / name) for name in files))
    assert shown.exit_code == 0, shown.output
    text = shown.stdout
    assert "text: # Quarterly report /  / Revenue grew in every region." in text
    assert "text sheet 1: Totals: ## Totals /  / | Item | Price |" in text
    assert "text sheet 2: Region 2: ## Region 2" in text
    assert "text slide 1: # Slide title 1 / Bullet point 1 /  / ### Notes: / Speaker note 1" in text
    assert "text slide 2: # Slide title 2" in text


def test_resolve_content_json_gives_sheet_parts(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    book = tmp_path / "table.xlsx"
    book.write_bytes(documents.xlsx_bytes(sheets=2, rows=1))
    created = cli("--json", "workflow", "new")
    assert created.exit_code == 0, created.output
    wf = json.loads(created.stdout)["id"]
    attached = cli("attach", str(book), "--workflow", wf, "--json")
    doc = json.loads(attached.stdout)["documentId"]
    shown = cli("resolve", f"docItem:{doc}", "--workflow", wf, "--content", "--json")
    assert shown.exit_code == 0, shown.output
    (document,) = json.loads(shown.stdout)["documents"]
    assert [(p["kind"], p["position"]) for p in document["parts"]] == [
        ("text", "sheet 1: Totals"),
        ("text", "sheet 2: Region 2"),
    ]
    assert document["parts"][0]["text"].endswith("| item 1.1 | 10 |")


def test_gc_prunes_cached_extractions_of_deleted_files(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    kept, dropped = tmp_path / "kept.xlsx", tmp_path / "dropped.docx"
    kept.write_bytes(documents.xlsx_bytes(sheets=1, rows=1))
    dropped.write_bytes(documents.docx_bytes())
    wf = json.loads(cli("--json", "workflow", "new").stdout)["id"]
    docs = {}
    for path in (kept, dropped):
        attached = json.loads(cli("attach", str(path), "--workflow", wf, "--json").stdout)
        docs[path.name] = attached
        shown = cli("resolve", f"docItem:{attached['documentId']}", "-w", wf, "--content")
        assert shown.exit_code == 0, shown.output
    removed = cli("files", "rm", docs["dropped.docx"]["fileId"], "--force")
    assert removed.exit_code == 0, removed.output

    dry = json.loads(cli("gc", "--json").stdout)
    assert dry["dryRun"] is True and dry["staleCacheEntries"] == 1
    applied = cli("gc", "--apply", "--force", "--json")
    assert applied.exit_code == 0, applied.output
    assert json.loads(applied.stdout)["staleCacheEntries"] == 1
    assert json.loads(cli("gc", "--json").stdout)["staleCacheEntries"] == 0
    # The entry of the file that still exists serves the next read.
    again = cli("resolve", f"docItem:{docs['kept.xlsx']['documentId']}", "-w", wf, "--content")
    assert again.exit_code == 0 and "sheet 1" in again.stdout
