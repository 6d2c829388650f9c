"""Harvest from a local output directory that a subprocess-run sandbox wrote, link rewriting,
materialize, and the bad inputs of each (symlinks, oversize, changing, unreadable, bad names,
path traversal, another tenant's documents)."""

from __future__ import annotations

import csv
import hashlib
import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from docbinder.application import DocBinder
from docbinder.application.provenance import ToolCall, tool_call
from docbinder.domain.model import Principal
from docbinder.harvest import (
    HARVEST_TOOL,
    LocalOutputDir,
    OutputFile,
    harvest,
    materialize,
    rewrite_links,
    safe_name,
)
from docbinder.toolset import DocbinderToolset
from tests.integration.http_live import memory_binder

ALICE = Principal("alice", "acme", "support", ("member",))
MALLORY = Principal("mallory", "evil", "support", ("member",))

SANDBOX_SNIPPET = textwrap.dedent(
    """
    import struct, sys, zlib
    from pathlib import Path

    out = Path(sys.argv[1])
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))
    rows = b"".join(b"\\x00" + bytes([x * 60, 0, 255 - x * 60]) * 4 for x in range(4))
    png = (b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    (out / "chart.png").write_bytes(png)
    (out / "tables").mkdir(exist_ok=True)
    (out / "tables" / "totals.csv").write_text("region,total\\nnorth,10\\nsouth," + sys.argv[2] + "\\n")
    """
)


def run_sandbox(out: Path, south: str = "7") -> None:
    """The sandbox: a separate Python process writing a PNG and a CSV into ``out``."""
    subprocess.run([sys.executable, "-c", SANDBOX_SNIPPET, str(out), south], check=True, timeout=60)


@pytest.fixture
def binder() -> DocBinder:
    return memory_binder()


def test_subprocess_outputs_become_documents_with_provenance_readable_by_read_documents(
    binder: DocBinder, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    run_sandbox(out)
    run = binder.start_new_run(ALICE)
    source = LocalOutputDir(out, mount="/mnt/data", sandbox_id="sbx-1")
    with tool_call(ToolCall.of("python", {"code": "..."}, tool_call_id="call-7", model="m-1")):
        report = harvest(run, source)

    assert [f.path for f in report.harvested] == [
        "/mnt/data/chart.png",
        "/mnt/data/tables/totals.csv",
    ]
    assert report.refused == () and report.held == ()
    png = (out / "chart.png").read_bytes()
    chart = report.harvested[0].result.item
    assert chart.sha256 == hashlib.sha256(png).hexdigest() and chart.mime_type == "image/png"
    p = chart.provenance
    assert (p.tool, p.tool_call_id, p.model) == ("python", "call-7", "m-1")
    assert (p.sandbox_id, p.source_path) == ("sbx-1", "/mnt/data/chart.png")
    assert p.workflow_id == run.workflow.id and p.run_id == run.context.run_id

    # read_documents, the shared tool set's consuming tool, reads both by reference
    toolset = DocbinderToolset(binder.start_run(ALICE, run.workflow.id))
    refs = [f.reference for f in report.harvested]
    outcome = toolset.call("read_documents", {"documentList": refs})
    assert not outcome.is_error
    assert "north,10" in outcome.text and "south,7" in outcome.text
    assert [p.data for p in outcome.images] == [png]
    assert set(outcome.file_ids) == {f.result.item.id for f in report.harvested}
    info = toolset.call("get_file_info", {"file_id": refs[0]})
    assert "harvested from: /mnt/data/chart.png of sandbox sbx-1" in info.text
    assert info.structured is not None
    files = info.structured["files"]
    assert files[0]["provenance"]["sandboxId"] == "sbx-1"
    assert files[0]["provenance"]["sourcePath"] == "/mnt/data/chart.png"


def test_an_unchanged_file_past_its_retention_period_is_harvested_as_a_fresh_file(
    binder: DocBinder, tmp_path: Path
) -> None:
    """The held document expired: handing its reference out again would give the model a
    document that resolves as ``expired`` and goes with the next gc (ADR 0142)."""
    import time
    from datetime import timedelta

    from docbinder.domain.model import Scope

    out = tmp_path / "out"
    out.mkdir()
    (out / "report.txt").write_text("daily report\n")
    run = binder.start_new_run(ALICE)
    first = harvest(run, LocalOutputDir(out))
    binder.retention.set(Scope("acme"), timedelta(seconds=1))
    time.sleep(1.1)
    again = harvest(run, LocalOutputDir(out))
    assert again.held == () and len(again.harvested) == 1
    fresh = again.harvested[0].result
    assert fresh.item.id != first.harvested[0].result.item.id and not fresh.duplicate
    binder.retention.set(Scope("acme"), timedelta(hours=1))
    assert run.resolve([again.harvested[0].reference]).ok


def test_only_new_or_changed_files_are_attached_again(binder: DocBinder, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    run_sandbox(out)
    run = binder.start_new_run(ALICE)
    first = harvest(run, LocalOutputDir(out, mount="/mnt/data"))
    assert len(first.harvested) == 2

    # the next step changes the CSV only; a later run of the same workflow harvests again
    run_sandbox(out, south="8")
    later = binder.start_run(ALICE, run.workflow.id)
    second = harvest(later, LocalOutputDir(out, mount="/mnt/data"))
    assert [f.path for f in second.harvested] == ["/mnt/data/tables/totals.csv"]
    assert [h.path for h in second.held] == ["/mnt/data/chart.png"]
    assert second.held[0].reference == first.harvested[0].reference
    assert b"south,8" in later.read_file(second.harvested[0].result.item.id)
    # nothing changed: nothing attached
    third = harvest(later, LocalOutputDir(out, mount="/mnt/data"))
    assert third.harvested == () and len(third.held) == 2
    documents = [d for m in later.messages() for d in m.documents]
    assert [d.file_name for d in documents] == ["chart.png", "totals.csv", "totals.csv"]


def test_bytes_stored_before_by_another_tool_or_mount_are_held_after_one_harvest(
    binder: DocBinder, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "t.csv").write_text("a,b\n1,2\n")
    attached = binder.start_new_run(ALICE).produce_file("t.csv", (out / "t.csv").read_bytes())
    run = binder.start_new_run(ALICE)
    first = harvest(run, LocalOutputDir(out, mount="/mnt/data"))
    assert [f.result.item.id for f in first.harvested] == [attached.item.id]  # reused
    for mount in ("/mnt/data", "/mnt/other", None):
        again = harvest(run, LocalOutputDir(out, mount=mount))
        assert again.harvested == () and [h.reference for h in again.held] == [
            first.harvested[0].reference
        ], mount
    assert len([d for m in run.messages() for d in m.documents]) == 1


def test_the_same_bytes_under_the_same_name_reuse_one_file_item(
    binder: DocBinder, tmp_path: Path
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "x.csv").write_bytes(b"k,v\n1,2\n")
    (b / "x.csv").write_bytes(b"k,v\n1,2\n")
    run = binder.start_new_run(ALICE)
    one = harvest(run, LocalOutputDir(a)).harvested[0]
    other = binder.start_new_run(ALICE)
    two = harvest(other, LocalOutputDir(b)).harvested[0]
    assert two.result.duplicate and two.result.item.id == one.result.item.id
    assert two.reference != one.reference  # a workflow of its own: a ChatDocument of its own
    # in the first workflow the same name and bytes from another directory are held already
    again = harvest(run, LocalOutputDir(b))
    assert again.harvested == () and list(again.references.values()) == [one.reference]


def test_links_out_of_the_directory_special_files_and_bad_names_are_refused(
    binder: DocBinder, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do not harvest")
    outside_dir = tmp_path / "elsewhere"
    outside_dir.mkdir()
    (outside_dir / "inner.txt").write_text("nor this")
    out = tmp_path / "out"
    out.mkdir()
    (out / "ok.txt").write_text("fine")
    (out / "leak.txt").symlink_to(secret)
    (out / "dirlink").symlink_to(outside_dir, target_is_directory=True)
    (out / "inside-link.txt").symlink_to(out / "ok.txt")
    os.link(secret, out / "hardlink.txt")  # a second name of a file outside the directory
    os.mkfifo(out / "pipe")
    (out / "bad\x07name.txt").write_text("bell")
    (out / "big.bin").write_bytes(b"x" * 2048)
    locked = out / "locked.txt"
    locked.write_text("no access")
    locked.chmod(0)
    run = binder.start_new_run(ALICE)
    try:
        report = harvest(run, LocalOutputDir(out, mount="/mnt/data"), max_file_size=1024)
    finally:
        locked.chmod(0o600)
    assert [f.path for f in report.harvested] == ["/mnt/data/ok.txt"] or (
        os.geteuid() == 0 and "/mnt/data/locked.txt" in [f.path for f in report.harvested]
    )
    reasons = {r.path: r.reason for r in report.refused}
    assert reasons["/mnt/data/leak.txt"] == "symbolic link: not followed"
    assert reasons["/mnt/data/dirlink"] == "symbolic link: not followed"
    assert reasons["/mnt/data/inside-link.txt"] == "symbolic link: not followed"
    assert reasons["/mnt/data/hardlink.txt"] == "has 2 names (hard links)"
    assert reasons["/mnt/data/pipe"] == "not a regular file"
    assert reasons["/mnt/data/bad\\x07name.txt"] == "name has control characters"
    assert reasons["/mnt/data/big.bin"].startswith("2048 bytes, larger than max_file_size")
    if os.geteuid() != 0:
        assert reasons["/mnt/data/locked.txt"].startswith("cannot be read")
    stored = {i.file_name for i in run.list_files()}
    assert not stored & {"secret.txt", "inner.txt", "leak.txt", "hardlink.txt"}


def test_a_file_still_being_written_is_refused_and_harvested_once_it_settled(
    binder: DocBinder, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    growing = out / "log.txt"
    growing.write_bytes(b"a" * 10)

    class Growing(LocalOutputDir):
        """The sandbox appends while the harvest reads (the file grows between the two stats)."""

        def outputs(self):  # type: ignore[no-untyped-def]
            for entry in super().outputs():
                if isinstance(entry, OutputFile):
                    opened = entry.open

                    def open_and_grow(opened=opened):  # type: ignore[no-untyped-def]
                        stream = opened()
                        with growing.open("ab") as more:
                            more.write(b"b" * 10)
                        return stream

                    entry = OutputFile(entry.path, entry.name, open_and_grow, entry.size)
                yield entry

    run = binder.start_new_run(ALICE)
    report = harvest(run, Growing(out))
    assert report.harvested == ()
    assert report.refused[0].reason == "still being written (it changed while it was read)"
    fresh = harvest(run, LocalOutputDir(out), settle_seconds=3600)
    assert fresh.refused[0].reason.startswith("still being written (modified")
    settled = harvest(run, LocalOutputDir(out))
    assert [f.path for f in settled.harvested] == [str(growing)]


def test_sandbox_links_in_the_final_text_become_references_and_download_links(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    run_sandbox(out)
    for binder, linked in (
        (memory_binder(), False),
        (memory_binder(public_url="http://127.0.0.1:8080"), True),
    ):
        run = binder.start_new_run(ALICE)
        report = harvest(run, LocalOutputDir(out, mount="/mnt/data"))
        chart, table = (f.reference for f in report.harvested)
        text = (
            "Here is the chart: ![chart](sandbox:/mnt/data/chart.png).\n"
            "Totals in /mnt/data/tables/totals.csv, also [as CSV](./tables/totals.csv).\n"
            "See https://example.test/mnt/data/chart.png and sandbox:/mnt/data/missing.txt."
        )
        result = rewrite_links(text, report, run=run)
        lines = result.text.splitlines()
        assert [r.reference for r in result.rewritten] == [chart, table, table]
        assert result.unknown == ("sandbox:/mnt/data/missing.txt",)
        assert (
            lines[2]
            == "See https://example.test/mnt/data/chart.png and sandbox:/mnt/data/missing.txt."
        )
        if not linked:
            assert lines[0] == f"Here is the chart: ![chart]({chart})."
            assert lines[1] == f"Totals in {table}, also [as CSV]({table})."
        else:
            url = result.rewritten[0].url
            assert url is not None and url.startswith("http://127.0.0.1:8080/v1/links/")
            assert lines[0] == f"Here is the chart: ![chart]({url})."
            assert lines[1].startswith(f"Totals in {table} (http://127.0.0.1:8080/v1/links/")
            token = url.split("/v1/links/")[1]
            assert binder.redeem_link(token).file.id == report.harvested[0].result.item.id


def test_a_csv_round_trips_through_two_runs(binder: DocBinder, tmp_path: Path) -> None:
    """Run 1's sandbox writes a CSV, harvested; the model names it; run 2's sandbox reads it."""
    out1, in2, out2 = tmp_path / "run1-out", tmp_path / "run2-in", tmp_path / "run2-out"
    for d in (out1, in2, out2):
        d.mkdir()
    run_sandbox(out1)
    first = binder.start_new_run(ALICE)
    report = harvest(first, LocalOutputDir(out1, mount="/mnt/data"))
    answer = rewrite_links("The totals: sandbox:/mnt/data/tables/totals.csv", report, run=first)
    [reference] = [r.reference for r in answer.rewritten]
    assert answer.text == f"The totals: {reference}"

    # run 2: the model passes the rewritten answer's reference, in one of the shapes it uses
    second = binder.start_run(ALICE, first.workflow.id)
    placed = materialize(second, {"documents": [{"ref": reference}]}, in2, max_total_bytes=10_000)
    assert [w.name for w in placed.written] == ["totals.csv"] and placed.refused == ()
    reader = textwrap.dedent(
        """
        import csv, sys
        rows = list(csv.DictReader(open(sys.argv[1] + "/totals.csv")))
        total = sum(int(r["total"]) for r in rows)
        open(sys.argv[2] + "/sum.csv", "w").write(f"total\\n{total}\\n")
        """
    )
    subprocess.run([sys.executable, "-c", reader, str(in2), str(out2)], check=True, timeout=60)
    back = harvest(second, LocalOutputDir(out2, mount="/mnt/data"))
    summed = back.harvested[0].result.item
    assert list(csv.reader(io.StringIO(second.read_file(summed.id).decode()))) == [
        ["total"],
        ["17"],
    ]
    # the sum was made from the materialized CSV: its provenance names it as a parent
    assert summed.provenance.parents == (report.harvested[1].result.item.id,)


def test_materialize_refuses_unsafe_names_overwrites_budget_and_other_tenants(
    binder: DocBinder, tmp_path: Path
) -> None:
    run = binder.start_new_run(ALICE)
    names = ["../escape.csv", "/etc/passwd", "CON.txt", "nul", "ok.csv", "big.bin", "a\\..\\b.txt"]
    refs = {}
    for name in names:
        data = b"x" * 600 if name == "big.bin" else f"{name}\n".encode()
        refs[name] = run.produce_file(name, data).reference
    theirs = binder.start_new_run(MALLORY).produce_file("theirs.csv", b"secret\n").reference
    inbox = tmp_path / "in"
    inbox.mkdir()
    (inbox / "ok.csv").write_text("already here")
    report = materialize(
        run, [*refs.values(), theirs, "docItem:../../x"], inbox, max_total_bytes=500
    )
    written = {w.name for w in report.written}
    # a path in the name keeps only its last part; the device names and the taken name are refused
    assert written == {"escape.csv", "passwd", "b.txt"}
    assert (inbox / "escape.csv").read_text() == "../escape.csv\n"
    assert not (tmp_path / "escape.csv").exists()
    assert sorted(os.listdir(inbox)) == ["b.txt", "escape.csv", "ok.csv", "passwd"]
    assert (inbox / "ok.csv").read_text() == "already here"
    why = {r.reference: r.reason for r in report.refused}
    assert why[refs["CON.txt"]] == why[refs["nul"]] == "the file name is not safe to write"
    assert why[refs["ok.csv"]].startswith("a file of that name is already in the directory")
    assert "would exceed the budget of 500 bytes" in why[refs["big.bin"]]
    assert why[theirs].startswith("not_in_workflow")
    assert why["'docItem:../../x'"].startswith("rejected_input: not a usable document reference")
    # asked to, it overwrites the regular file, never a link
    (inbox / "link.csv").symlink_to(tmp_path / "target.csv")
    linked = run.produce_file("link.csv", b"through a link\n").reference
    again = materialize(run, [refs["ok.csv"], linked], inbox, overwrite=True)
    assert [w.name for w in again.written] == ["ok.csv"]
    assert (inbox / "ok.csv").read_text() == "ok.csv\n"
    assert again.refused[0].reason == "something that is not a regular file has that name"
    assert not (tmp_path / "target.csv").exists()
    # a name of 255 bytes is overwritten too; the files after it are written
    long = "\u20ac" * 85  # 85 x 3 bytes of UTF-8: the longest name the file system takes
    (inbox / long).write_text("old")
    refs_long = [
        run.produce_file(long, b"new\n").reference,
        run.produce_file("after.csv", b"a\n").reference,
    ]
    third = materialize(run, refs_long, inbox, overwrite=True)
    assert sorted(w.name for w in third.written) == sorted([long, "after.csv"])
    assert (inbox / long).read_text() == "new\n"
    assert not [n for n in os.listdir(inbox) if n.endswith(".partial")]


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("report.csv", "report.csv"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Windows\\evil.dll", "evil.dll"),
        ("..", None),
        ("dir/", None),
        ("LPT1.log", None),
        ("aux", None),
        ("com¹", None),
        ("trailing.", None),
        ("file:stream", None),
        ("tab\there", None),
        ("é" * 200, None),
        ("Cafe\u0301.txt", "Café.txt"),
    ],
)
def test_safe_name(name: str, safe: str | None) -> None:
    assert safe_name(name) == safe


def test_a_harvested_file_without_a_tool_call_names_code_execution(
    binder: DocBinder, tmp_path: Path
) -> None:
    (tmp_path / "r.txt").write_text("r")
    run = binder.start_new_run(ALICE)
    item = harvest(run, LocalOutputDir(tmp_path), tool_call_id="exec-1").harvested[0].result.item
    assert item.provenance.tool == HARVEST_TOOL and item.provenance.tool_call_id == "exec-1"
    assert item.provenance.source_path == str(tmp_path / "r.txt")


class ListedFiles:
    """A source of given entries (an SDK-backed source's shape: sizes may be unknown)."""

    sandbox_id = "listed"

    def __init__(self, *entries: OutputFile) -> None:
        self.entries = entries

    def outputs(self):  # type: ignore[no-untyped-def]
        return iter(self.entries)


def test_unreadable_files_and_streams_over_the_limit_are_refused_and_nothing_is_kept(
    binder: DocBinder,
) -> None:
    def denied() -> io.BytesIO:
        raise PermissionError(13, "Permission denied")

    def endless() -> io.BufferedReader:
        return open("/dev/zero", "rb")

    run = binder.start_new_run(ALICE)
    report = harvest(
        run,
        ListedFiles(
            OutputFile("/out/locked.csv", "locked.csv", denied),
            OutputFile("/out/zeros.bin", "zeros.bin", endless),  # size unknown: counted
            OutputFile("/out/ok.txt", "ok.txt", lambda: io.BytesIO(b"ok")),
        ),
        max_file_size=4096,
    )
    assert [(r.path, r.reason) for r in report.refused] == [
        ("/out/locked.csv", "cannot be read: Permission denied"),
        ("/out/zeros.bin", "larger than max_file_size (4096 bytes)"),
    ]
    assert [f.path for f in report.harvested] == ["/out/ok.txt"]
    assert [i.file_name for i in run.list_files()] == ["ok.txt"]


def test_a_root_named_through_a_link_is_walked_but_nothing_under_it_is_followed(
    binder: DocBinder, tmp_path: Path
) -> None:
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (real / "sub" / "a.txt").write_text("a")
    (real / "up").symlink_to(tmp_path, target_is_directory=True)
    alias = tmp_path / "alias"
    alias.symlink_to(real, target_is_directory=True)
    report = harvest(binder.start_new_run(ALICE), LocalOutputDir(alias, mount="/mnt/data"))
    assert [f.path for f in report.harvested] == ["/mnt/data/sub/a.txt"]
    assert [(r.path, r.reason) for r in report.refused] == [
        ("/mnt/data/up", "symbolic link: not followed")
    ]
    with pytest.raises(FileNotFoundError):
        harvest(binder.start_new_run(ALICE), LocalOutputDir(tmp_path / "missing"))


def test_the_async_faces_run_harvest_and_materialize_off_the_event_loop(
    binder: DocBinder, tmp_path: Path
) -> None:
    import anyio

    from docbinder.application.aio import AsyncDocBinder
    from docbinder.harvest.aio import aharvest, amaterialize

    out, inbox = tmp_path / "out", tmp_path / "in"
    out.mkdir(), inbox.mkdir()
    run_sandbox(out)

    async def main() -> tuple[list[str], list[str], str | None]:
        run = await AsyncDocBinder(binder).start_new_run(ALICE)
        with tool_call(ToolCall.of("python", {}, tool_call_id="async-1")):
            report = await aharvest(run, LocalOutputDir(out, mount="/mnt/data"))
        placed = await amaterialize(run, [f.reference for f in report.harvested], inbox)
        return (
            [f.path for f in report.harvested],
            [w.name for w in placed.written],
            report.harvested[0].result.item.provenance.tool_call_id,
        )

    paths, written, call_id = anyio.run(main)
    assert paths == ["/mnt/data/chart.png", "/mnt/data/tables/totals.csv"]
    assert written == ["chart.png", "totals.csv"] and call_id == "async-1"
    assert (inbox / "totals.csv").read_bytes() == (out / "tables" / "totals.csv").read_bytes()
