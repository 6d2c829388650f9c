"""The command line end to end on the embedded default (SQLite + local disk) in a temp home."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docbinder.adapters.localdisk.blobs import COMMITTED_XATTR
from docbinder.cli.main import app


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """The CLI configures the ``docbinder`` logger for its process; undo that after each test."""
    logger = logging.getLogger("docbinder")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield
    logger.handlers[:], logger.level, logger.propagate = saved[0], saved[1], saved[2]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def cli(home: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    for key in list(os.environ):
        if key.startswith("DOCBINDER_"):
            monkeypatch.delenv(key)
    runner = CliRunner()

    def invoke(*args: str, user: str = "alice", mandate: str = "acme", input: str | None = None):  # type: ignore[no-untyped-def]
        return runner.invoke(
            app, ["--home", str(home), "--user", user, "--mandate", mandate, *args], input=input
        )

    return invoke


def _json(result) -> object:  # type: ignore[no-untyped-def]
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_workflow_attach_resolve_content(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    report = tmp_path / "report.md"
    report.write_text("# Report\nRevenue grew.\n", encoding="utf-8")
    wf = _json(cli("--json", "workflow", "new"))["id"]  # type: ignore[index]
    attached = _json(cli("attach", str(report), "--workflow", wf, "--json"))
    assert attached["text"] == (  # type: ignore[index]
        f"Wrote 'report.md' (23 bytes)\n"
        f"  documentList ref: docItem:{attached['documentId']}\n"  # type: ignore[index]
        f"  file id: {attached['fileId']}"  # type: ignore[index]
    )
    doc = attached["documentId"]  # type: ignore[index]
    sloppy = f'```json\n{{"documents": [{{"id": "{doc}"}}]}}\n```'
    resolved = _json(cli("resolve", sloppy, "--workflow", wf, "--json"))
    assert [d["document"]["id"] for d in resolved["documents"]] == [doc]  # type: ignore[index]
    assert resolved["unresolved"] == []  # type: ignore[index]
    content = _json(cli("resolve", f"DOCITEM:{doc}.", "--workflow", wf, "--content", "--json"))
    [document] = content["documents"]  # type: ignore[index]
    assert document["parts"][0]["kind"] == "text"
    assert document["parts"][0]["text"] == "# Report\nRevenue grew.\n"
    shown = _json(cli("workflow", "show", wf, "--json"))
    assert [m["documentsLabel"] for m in shown["messages"]] == ["writeFile:report.md"]  # type: ignore[index]
    listed = _json(cli("files", "ls", "--json"))
    assert [f["fileName"] for f in listed] == ["report.md"]  # type: ignore[union-attr,index]
    cat = cli("files", "cat", attached["fileId"])  # type: ignore[index]
    assert cat.exit_code == 0 and cat.stdout == "# Report\nRevenue grew.\n"


def test_workflow_advance_moves_the_counters_that_documents_carry(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    note = tmp_path / "note.md"
    note.write_text("n\n", encoding="utf-8")
    wf = _json(cli("--json", "workflow", "new"))["id"]  # type: ignore[index]
    moved = cli("workflow", "advance", wf, "--next", "task")
    assert (
        moved.exit_code == 0 and moved.stdout == f"workflow {wf} now at round 1, task 1, action 0\n"
    )
    assert cli("attach", str(note), "--workflow", wf).exit_code == 0
    assert _json(cli("--json", "workflow", "advance", wf, "--round", "2", "--action", "3")) == {
        "id": wf,
        "currentRound": 2,
        "currentTask": 0,
        "currentAction": 3,
    }
    back = cli("workflow", "advance", wf, "--round", "1")
    assert back.exit_code == 1
    assert back.stderr.startswith("error: the workflow is at round 2, task 0, action 3;")
    assert cli("workflow", "advance", wf).exit_code == 2
    assert cli("workflow", "advance", wf, "--next", "task", "--round", "3").exit_code == 2
    assert cli("workflow", "advance", wf, "--task", "-1").exit_code == 2
    assert cli("workflow", "advance", wf, "--next", "phase").exit_code == 2
    # Someone who may read but not update the workflow changes nothing.
    assert cli("workflow", "advance", wf, "--next", "round", user="bob").exit_code == 1
    shown = cli("workflow", "show", wf)
    assert shown.exit_code == 0
    assert shown.stdout.splitlines()[1:3] == [
        "now at round 2, task 0, action 3",
        "#1  docList:writeFile:note.md  (round 1, task 1, action 0)",
    ]
    wire = _json(cli("workflow", "show", wf, "--json"))
    assert (wire["currentRound"], wire["currentTask"], wire["currentAction"]) == (2, 0, 3)  # type: ignore[index]
    [doc] = wire["messages"][0]["documents"]  # type: ignore[index]
    assert (doc["roundNumber"], doc["taskNumber"], doc["actionNumber"]) == (1, 1, 0)


def test_unresolved_reference_exits_1_and_lists_suggestions(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "a.txt"
    f.write_text("a")
    wf = _json(cli("--json", "workflow", "new"))["id"]  # type: ignore[index]
    attached = _json(cli("--json", "attach", str(f), "--workflow", wf))
    result = cli(
        "--json", "resolve", '["docItem:00000000-0000-4000-8000-000000000000"]', "--workflow", wf
    )
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert payload["unresolved"][0]["reason"] == "not_in_workflow"
    assert payload["suggestions"] == [
        {"reference": f"docItem:{attached['documentId']}", "fileName": "a.txt"}
    ]  # type: ignore[index]
    assert "error: 1 reference(s) unresolved" in result.stderr


def test_a_reference_without_workflow_names_the_option_and_an_unknown_file_the_listing(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path
) -> None:
    f = tmp_path / "notes.md"
    f.write_text("# notes")
    wf = _json(cli("--json", "workflow", "new"))["id"]  # type: ignore[index]
    cli("attach", str(f), "--workflow", wf, "--label", "notes")
    result = cli("resolve", "docList:notes")
    assert result.exit_code == 1
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: 1 reference(s) unresolved: ")
    assert "--workflow WORKFLOW_ID" in line and "docbinder workflow ls" in line
    assert cli("resolve", "docList:notes", "--workflow", wf).exit_code == 0
    for command in ("show", "cat"):
        result = cli("files", command, "notes.md")
        assert result.exit_code == 1
        assert result.stderr.strip() == (
            "error: file notes.md not found "
            "(docbinder files ls lists the files you may read, with their ids)"
        )


def test_bad_input_gives_one_line_and_writes_nothing(cli, home: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    good = tmp_path / "good.txt"
    good.write_text("good")
    wf = _json(cli("--json", "workflow", "new"))["id"]  # type: ignore[index]
    cases = [
        ("attach", str(good), str(tmp_path / "missing.txt"), "--workflow", wf),
        ("attach", str(tmp_path), "--workflow", wf),
        ("attach", str(good), "--workflow", "no-such-workflow"),
        ("resolve", "docItem:x", "--workflow", "no-such-workflow"),
        ("files", "show", "no-such-file"),
        ("files", "cat", "no-such-file"),
    ]
    for args in cases:
        result = cli(*args)
        assert result.exit_code == 1, (args, result.output)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), (args, result.stderr)
        assert "Traceback" not in result.output
    assert _json(cli("--json", "files", "ls")) == []
    blobs = home / "blobs"
    assert not blobs.exists() or [p for p in blobs.rglob("*") if p.is_file()] == []


def test_workflow_of_another_mandate_is_not_found(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "a.txt"
    f.write_text("a")
    wf = _json(cli("--json", "workflow", "new", mandate="acme"))["id"]  # type: ignore[index]
    other = cli("attach", str(f), "--workflow", wf, mandate="globex")
    assert other.exit_code == 1
    assert other.stderr.strip() == f"error: workflow {wf} not found"


def test_demo_on_real_files_json(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page = tmp_path / "page.html"
    page.write_text("<html><body><h1>Hello</h1><script>x()</script></body></html>")
    data = tmp_path / "data.csv"
    data.write_text("a,b\n1,2\n")
    payload = _json(cli("demo", str(page), str(data), "--json"))
    assert [t["file"]["fileName"] for t in payload["toolResults"]] == ["page.html", "data.csv"]  # type: ignore[index]
    assert [s["shape"] for s in payload["shapes"]] == [  # type: ignore[index]
        "list of strings",
        "list of dicts",
        "dict wrapper",
        "single string",
        "sloppy (code fence, odd case)",
    ]
    for shape in payload["shapes"]:  # type: ignore[index]
        assert shape["resolution"]["unresolved"] == []
        assert len(shape["resolution"]["documents"]) == (
            1 if shape["shape"] == "single string" else 2
        )
    texts = [d["parts"][0]["text"] for d in payload["content"]["documents"]]  # type: ignore[index]
    assert texts == ["# Hello", "a,b\n1,2\n"]


def test_demo_without_files_uses_the_samples(cli) -> None:  # type: ignore[no-untyped-def]
    payload = _json(cli("demo", "--json"))
    names = [d["fileName"] for d in payload["content"]["documents"]]  # type: ignore[index]
    assert names == [
        "quarterly-report.md",
        "sales.csv",
        "platform-overview.html",
        "project-brief.pdf",
        "revenue-chart.png",
    ]
    kinds = {
        d["fileName"]: [p["kind"] for p in d["parts"]] for d in payload["content"]["documents"]
    }  # type: ignore[index]
    assert kinds["project-brief.pdf"] == ["text", "text"]
    from docbinder.adapters.extract import DefaultContentExtractor

    read_by_ocr = DefaultContentExtractor().ocr_problem("image") is None
    assert kinds["revenue-chart.png"] == ["image", *(["text"] if read_by_ocr else [])]


def test_gc_finds_and_removes_an_orphan_blob(
    cli, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    import sqlite3

    monkeypatch.setenv("DOCBINDER_INLINE_BLOB_LIMIT", "0")  # the blobs are files on disk here

    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text(name[0] * 15)
        _json(cli("--json", "attach", str(tmp_path / name)))
    # A crash after the blob write: the blob stays, its FileItem never committed (so the
    # blob never got its commit record either).
    with sqlite3.connect(home / "docbinder.db") as db:
        [(key,)] = db.execute("select blob_key from file_items where file_name = 'b.txt'")
        db.execute("delete from file_items where file_name = 'b.txt'")
    orphan = home / "blobs" / key
    os.utime(orphan, (1, 1))
    recorded = _json(cli("--json", "gc", "--dry-run"))
    assert recorded["orphanBlobs"] == [] and recorded["committedBlobs"] == [key]  # type: ignore[index]
    os.removexattr(orphan, COMMITTED_XATTR)
    planted = home / "blobs" / "zz" / "zz-planted"  # docbinder's layout, not docbinder's file
    planted.parent.mkdir(parents=True)
    planted.write_bytes(b"somebody else's")
    os.utime(planted, (1, 1))
    dry = _json(cli("--json", "gc", "--dry-run"))
    assert dry["orphanBlobs"] == [key] and dry["unprovenBlobs"] == ["zz/zz-planted"]  # type: ignore[index]
    assert orphan.exists()
    done = _json(cli("--json", "gc", "--apply"))
    assert done["orphanBlobs"] == [key] and done["bytesFreed"] == 15  # type: ignore[index]
    assert not orphan.exists() and planted.exists()
    assert len(_json(cli("--json", "files", "ls"))) == 1  # type: ignore[arg-type]


def test_gc_finds_and_removes_an_orphan_inline_blob(cli, home: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Small files live in the database (ADR 0110); an inline blob no FileItem names is
    judged as any blob: committed once, it is kept and reported; a leftover past the grace
    period is removed; the other file's inline blob stays."""
    import sqlite3

    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text(name[0] * 15)
        _json(cli("--json", "attach", str(tmp_path / name)))
    with sqlite3.connect(home / "docbinder.db") as db:
        [(key,)] = db.execute("select blob_key from file_items where file_name = 'b.txt'")
        db.execute("delete from file_items where file_name = 'b.txt'")
        db.execute("update inline_blobs set created_at = '2000-01-01 00:00:00.000000'")
    assert not (home / "blobs" / key).exists()  # never a file on disk
    recorded = _json(cli("--json", "gc", "--dry-run"))
    assert recorded["orphanBlobs"] == [] and recorded["committedBlobs"] == [key]  # type: ignore[index]
    assert recorded["inlineBlobs"] == 2  # type: ignore[index]
    with sqlite3.connect(home / "docbinder.db") as db:
        db.execute("update inline_blobs set committed = 0 where blob_key = ?", (key,))
    dry = _json(cli("--json", "gc", "--dry-run"))
    assert dry["orphanBlobs"] == [key] and dry["bytesFreed"] == 15  # type: ignore[index]
    done = _json(cli("--json", "gc", "--apply"))
    assert done["orphanBlobs"] == [key] and done["inlineBlobs"] == 1  # type: ignore[index]
    [item] = _json(cli("--json", "files", "ls"))  # type: ignore[misc]
    assert cli("files", "cat", item["id"]).stdout == "a" * 15


def test_doctor_passes_on_a_fresh_home(cli) -> None:  # type: ignore[no-untyped-def]
    payload = _json(cli("--json", "doctor"))
    assert payload["ok"] is True  # type: ignore[index]
    names = [c["name"] for c in payload["checks"]]  # type: ignore[index]
    assert "blob store writable" in names and "authorizer" in names
    assert all(c["status"] != "fail" for c in payload["checks"])  # type: ignore[index]
    [new] = [c for c in payload["checks"] if c["name"] == "new store"]  # type: ignore[index]
    assert new["status"] == "warn" and "--home" in new["detail"]
    again = _json(cli("--json", "doctor"))  # the store exists now: nothing to warn of
    assert "new store" not in [c["name"] for c in again["checks"]]  # type: ignore[index]


def test_doctor_reports_the_inline_tier_and_probes_the_blob_store_itself(  # type: ignore[no-untyped-def]
    cli, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.txt").write_text("small")
    _json(cli("--json", "attach", str(tmp_path / "a.txt")))
    checks = {c["name"]: c for c in _json(cli("--json", "doctor"))["checks"]}  # type: ignore[index]
    inline = checks["inline blobs"]
    assert inline["status"] == "ok"
    assert (
        "files up to 65536 bytes" in inline["detail"] and "1 blob(s), 5 bytes" in inline["detail"]
    )
    assert checks["blob store writable"]["detail"].startswith("file://")
    # The probe of the blob store went to the directory, not into the database, and left nothing.
    assert [p.name for p in (home / "blobs").iterdir() if not p.name.startswith(".")] == []
    monkeypatch.setenv("DOCBINDER_INLINE_BLOB_LIMIT", "0")
    off = {c["name"]: c for c in _json(cli("--json", "doctor"))["checks"]}  # type: ignore[index]
    assert "new files all go to the blob store" in off["inline blobs"]["detail"]
    assert "1 blob(s)" in off["inline blobs"]["detail"]  # the file stored inline before


def test_installed_entry_point_runs(home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCBINDER_")}
    env["DOCBINDER_HOME"] = str(home)
    done = subprocess.run(
        [sys.executable, "-m", "docbinder", "--json", "workflow", "new"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["id"]) == 36


def test_attach_to_a_workflow_the_user_may_not_update_writes_nothing(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "notes.txt"
    f.write_text("n")
    wf = _json(cli("--json", "workflow", "new", user="alice"))["id"]  # type: ignore[index]
    result = cli("attach", str(f), "--workflow", wf, user="bob")
    assert result.exit_code == 1
    assert result.stderr.strip() == f"error: user bob may not add documents to workflow {wf}"
    assert _json(cli("--json", "files", "ls", user="bob")) == []


def test_size_limit_is_checked_before_anything_is_stored(
    cli, home: Path, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    small = tmp_path / "small.txt"
    small.write_text("s")
    big = tmp_path / "big.bin"
    big.write_bytes(b"x" * 2000)
    monkeypatch.setenv("DOCBINDER_MAX_FILE_SIZE", "1000")
    result = cli("attach", str(small), str(big))
    assert result.exit_code == 1
    assert (
        result.stderr.strip()
        == f"error: {big} exceeds the size limit of 1000 bytes; nothing was stored"
    )
    assert _json(cli("--json", "files", "ls")) == []


def test_names_and_text_are_printed_as_they_are(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "smile :thumbs_up: [bold]x.txt"
    f.write_text("Status :thumbs_up: and [red]markup[/red]")
    wf = _json(cli("--json", "workflow", "new"))["id"]  # type: ignore[index]
    attached = cli("attach", str(f), "--workflow", wf)
    assert attached.exit_code == 0
    assert attached.stdout.splitlines()[0] == "Wrote 'smile :thumbs_up: [bold]x.txt' (40 bytes)"
    doc = attached.stdout.splitlines()[1].split("docItem:")[1]
    shown = cli("resolve", f"docItem:{doc}", "--workflow", wf, "--content")
    assert "Status :thumbs_up: and [red]markup[/red]" in shown.stdout
    missing = cli("resolve", "docItem:abc", "--workflow", wf)
    assert "docItem:abc" in missing.stdout


def test_an_empty_file_says_it_has_no_text(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "empty.txt"
    f.write_bytes(b"")
    wf = _json(cli("--json", "workflow", "new"))["id"]  # type: ignore[index]
    attached = cli("attach", str(f), "--workflow", wf)
    doc = attached.stdout.splitlines()[1].split("docItem:")[1]
    shown = cli("resolve", f"docItem:{doc}", "--workflow", wf, "--content")
    assert shown.exit_code == 0, shown.output
    assert "  text: [no text: 0 characters]" in shown.stdout.splitlines()


def test_listed_words_that_are_no_reference_make_resolve_fail(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "a.txt"
    f.write_text("a")
    wf = _json(cli("--json", "workflow", "new"))["id"]  # type: ignore[index]
    doc = _json(cli("--json", "attach", str(f), "--workflow", wf))["documentId"]  # type: ignore[index]
    result = cli("--json", "resolve", f"docItem:{doc}, bogus", "--workflow", wf)
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert [d["document"]["id"] for d in payload["documents"]] == [doc]
    assert [(u["reference"], u["reason"]) for u in payload["unresolved"]] == [
        ("bogus", "rejected_input")
    ]
    empty = cli("resolve", "[]", "--workflow", wf)
    assert empty.exit_code == 0
    assert empty.stdout.strip() == "nothing to resolve: the documentList holds no references"


def test_attach_shows_the_label_each_message_got(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("alpha\n", encoding="utf-8")
    second.write_text("beta\n", encoding="utf-8")
    wf = _json(cli("--json", "workflow", "new"))["id"]  # type: ignore[index]
    shown = cli("attach", str(first), str(second), "--workflow", wf, "--label", "mine")
    assert shown.exit_code == 0, shown.output
    lines = [line for line in shown.stdout.splitlines() if line.startswith("label ")]
    assert len(lines) == 1
    assert lines[0].startswith("label 'mine' went to 'a.txt' earlier in this command;")
    suffixed = lines[0].rsplit("docList:", 1)[1]
    assert suffixed.startswith("mine#") and len(suffixed) == len("mine#") + 8
    resolved = _json(cli("resolve", f"docList:{suffixed}", "--workflow", wf, "--json"))
    assert [d["file"]["fileName"] for d in resolved["documents"]] == ["b.txt"]  # type: ignore[index]
    # A later command finds the label taken by the workflow itself.
    again = cli("attach", str(first), "--workflow", wf, "--label", "mine")
    assert again.exit_code == 0, again.output
    [line] = [line for line in again.stdout.splitlines() if line.startswith("label ")]
    assert line.startswith("label 'mine' is taken in this workflow;")
    again = _json(cli("attach", str(first), "--workflow", wf, "--label", "other", "--json"))
    assert again["label"] == "other"  # type: ignore[index]


def test_attach_without_a_label_uses_the_default_label_the_cli_guide_names(
    cli, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    guide = Path(__file__).resolve().parents[2] / "docs" / "guides" / "cli.md"
    assert "Without `--label` a message is labelled\n  `writeFile:<name>`" in guide.read_text(
        encoding="utf-8"
    )
    report = tmp_path / "report.md"
    report.write_text("# Report\n", encoding="utf-8")
    wf = _json(cli("--json", "workflow", "new"))["id"]  # type: ignore[index]
    first = _json(cli("attach", str(report), "--workflow", wf, "--json"))
    assert first["label"] == "writeFile:report.md"  # type: ignore[index]
    named = _json(cli("attach", str(report), "--name", "q3.md", "--workflow", wf, "--json"))
    assert named["label"] == "writeFile:q3.md"  # type: ignore[index]
    again = _json(cli("attach", str(report), "--workflow", wf, "--json"))
    assert again["label"].startswith("writeFile:report.md#")  # type: ignore[index]
    resolved = _json(cli("resolve", "docList:writeFile:report.md", "--workflow", wf, "--json"))
    assert [d["document"]["id"] for d in resolved["documents"]] == [first["documentId"]]  # type: ignore[index]


def test_resolve_content_says_when_a_part_was_truncated(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    big = tmp_path / "big.txt"
    big.write_text("x" * 2_100_000, encoding="utf-8")
    wf = _json(cli("--json", "workflow", "new"))["id"]  # type: ignore[index]
    doc = _json(cli("attach", str(big), "--workflow", wf, "--json"))["documentId"]  # type: ignore[index]
    shown = cli("resolve", f"docItem:{doc}", "--workflow", wf, "--content")
    assert shown.exit_code == 0, shown.output
    assert "text (truncated): xxx" in shown.stdout


def test_tables_keep_each_id_on_one_line(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "80")
    long_name = tmp_path / ("a rather long file name that needs several lines " * 2 + ".txt")
    long_name.write_text("x\n", encoding="utf-8")
    wf = _json(cli("--json", "workflow", "new"))["id"]  # type: ignore[index]
    attached = _json(cli("attach", str(long_name), "--workflow", wf, "--json"))
    listed = cli("files", "ls")
    assert listed.exit_code == 0 and attached["fileId"] in listed.stdout  # type: ignore[index]
    shown = cli("workflow", "show", wf)
    assert shown.exit_code == 0 and attached["reference"] in shown.stdout  # type: ignore[index]
    assert f"#1  docList:writeFile:{long_name.name}" in shown.stdout
    workflows = cli("workflow", "ls")
    assert workflows.exit_code == 0 and wf in workflows.stdout
    assert listed.stdout.startswith(f"{attached['fileId']}  a rather long file name")  # type: ignore[index]
    rows = [line for line in workflows.stdout.splitlines() if line[:1] in "┃│┏┡└"]
    assert rows and max(len(line) for line in rows) <= 80


def test_workflow_advance_next_reads_the_level_in_any_case(cli) -> None:  # type: ignore[no-untyped-def]
    wf = _json(cli("--json", "workflow", "new"))["id"]  # type: ignore[index]
    assert _json(cli("--json", "workflow", "advance", wf, "--next", "TASK")) == {
        "id": wf,
        "currentRound": 1,
        "currentTask": 1,
        "currentAction": 0,
    }
    moved = cli("workflow", "advance", wf, "--next", " Round ")
    assert moved.exit_code == 0
    assert moved.stdout == f"workflow {wf} now at round 2, task 0, action 0\n"


def test_gc_force_without_apply_says_it_is_a_dry_run(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "a.txt").write_text("a" * 15)
    _json(cli("--json", "attach", str(tmp_path / "a.txt")))
    result = cli("gc", "--force")
    assert result.exit_code == 0, result.output
    assert "--force takes effect only with --apply; this is a dry run" in result.stderr
    assert "--force" not in cli("gc").stderr


def test_workflow_advance_usage_errors_exit_2_and_say_what_was_wrong(cli) -> None:  # type: ignore[no-untyped-def]
    wf = _json(cli("--json", "workflow", "new"))["id"]  # type: ignore[index]
    unknown = cli("workflow", "advance", wf, "--next", "foo")
    assert unknown.exit_code == 2
    assert "--next must be round, task or action, got 'foo'" in unknown.stderr
    both = cli("workflow", "advance", wf, "--next", "task", "--round", "4")
    assert both.exit_code == 2
    assert "not both" in both.stderr
    neither = cli("workflow", "advance", wf)
    assert neither.exit_code == 2
    assert "give --next round|task|action or at least one of" in neither.stderr
    # Nothing moved: the next task is the first one.
    assert cli("workflow", "advance", wf, "--next", "task").stdout.endswith(
        "now at round 1, task 1, action 0\n"
    )


def test_a_role_the_role_table_does_not_know_is_named_on_stderr(cli) -> None:  # type: ignore[no-untyped-def]
    assert cli("workflow", "new").exit_code == 0  # the store exists: listing builds the binder
    unknown = cli("--role", "superuser", "files", "ls")
    assert "warning: role 'superuser' is not one of admin, member, viewer" in unknown.stderr
    known = cli("--role", "viewer", "files", "ls")
    assert known.exit_code == 0, known.output
    assert "warning" not in known.stderr
