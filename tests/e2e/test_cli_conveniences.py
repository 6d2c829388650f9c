"""Command-line conveniences people expect (issue 17 kind 9), on the real ``docbinder`` command."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docbinder.cli.main import app
from tests.reliability.harness import error_lines, invoke_cli


@pytest.fixture
def home(tmp_path: Path) -> list[str]:
    return ["--home", str(tmp_path / "home"), "--user", "alice", "--mandate", "acme"]


def _workflow(home: list[str]) -> str:
    made = invoke_cli([*home, "workflow", "new", "--json"])
    assert made.exit_code == 0, made.stderr
    workflow: str = json.loads(made.stdout)["id"]
    return workflow


def test_attach_dash_reads_stdin_under_the_given_name(home: list[str]) -> None:
    workflow = _workflow(home)
    result = CliRunner().invoke(
        app,
        [*home, "attach", "-", "--name", "notes.txt", "--workflow", workflow, "--json"],
        input=b"from a pipe\n",
    )
    assert result.exit_code == 0, result.stderr
    file_id = json.loads(result.stdout)["fileId"]
    cat = CliRunner().invoke(app, [*home, "files", "cat", file_id])
    assert cat.stdout_bytes == b"from a pipe\n"
    shown = invoke_cli([*home, "files", "show", f"file:{file_id}", "--json"])
    assert json.loads(shown.stdout)["fileName"] == "notes.txt"


def test_attach_dash_without_a_name_is_one_error_line(home: list[str]) -> None:
    result = CliRunner().invoke(app, [*home, "attach", "-"], input=b"x")
    assert result.exit_code == 1
    assert error_lines(result) == ["error: '-' reads one file from stdin and needs --name NAME"]


def test_a_file_name_that_is_not_utf8_is_named_and_can_be_overridden(
    home: list[str], tmp_path: Path
) -> None:
    raw = os.path.join(os.fsencode(tmp_path), b"caf\xe9.txt")
    with open(raw, "wb") as fh:
        fh.write(b"latin-1 name")
    path = os.fsdecode(raw)
    refused = invoke_cli([*home, "attach", path])
    assert refused.exit_code == 1
    [line] = error_lines(refused)
    assert "caf\\udce9.txt" in line and "not valid UTF-8" in line and "--name" in line
    kept = invoke_cli([*home, "attach", path, "--name", "café.txt", "--json"])
    assert kept.exit_code == 0, kept.stderr
    assert json.loads(kept.stdout)["file"]["fileName"] == "café.txt"


@pytest.mark.parametrize(
    "args",
    [
        ["workflow", "new"],
        ["workflow", "ls"],
        ["files", "ls"],
        ["resolve", "[]"],
        ["migrate"],
        ["doctor"],
        ["demo"],
    ],
)
def test_json_is_accepted_after_every_subcommand(home: list[str], args: list[str]) -> None:
    result = invoke_cli([*home, *args, "--json"])
    assert result.exit_code in (0, 1), result.stderr
    json.loads(result.stdout)


def test_json_after_workflow_show_files_show_and_cat(home: list[str], tmp_path: Path) -> None:
    workflow = _workflow(home)
    sample = tmp_path / "a.txt"
    sample.write_bytes(b"abc")
    attached = json.loads(
        invoke_cli([*home, "attach", str(sample), "-w", workflow, "--json"]).stdout
    )
    for args in (
        ["workflow", "show", workflow],
        ["files", "show", attached["fileId"]],
        ["files", "cat", attached["fileId"]],
    ):
        result = invoke_cli([*home, *args, "--json"])
        assert result.exit_code == 0, (args, result.stderr)
        json.loads(result.stdout)
    cat = json.loads(invoke_cli([*home, "files", "cat", attached["fileId"], "--json"]).stdout)
    assert cat["base64"] == "YWJj"


def test_version(home: list[str]) -> None:
    result = invoke_cli(["--version"])
    assert result.exit_code == 0
    assert result.stdout.startswith("docbinder ")


def test_help_names_the_install_command_of_the_mcp_extra(home: list[str]) -> None:
    # The help is rendered by rich: a bracketed word there is markup unless escaped.
    for args in (["--help"], ["mcp", "--help"]):
        result = invoke_cli(args)
        assert result.exit_code == 0
        assert "pip install -e '.[mcp]'" in result.stdout, args


def test_files_show_with_a_document_reference_and_no_workflow_names_the_command(
    home: list[str],
) -> None:
    result = invoke_cli([*home, "files", "show", "docItem:3f2b8c1e-9a4d-4c6e-8f1a-2b3c4d5e6f70"])
    assert result.exit_code == 1
    [line] = error_lines(result)
    assert "is a document reference, resolved within its workflow" in line
    assert (
        "run docbinder files show docItem:3f2b8c1e-9a4d-4c6e-8f1a-2b3c4d5e6f70 "
        "--workflow WORKFLOW_ID (docbinder workflow ls lists the workflow ids)"
    ) in line
    spaced = invoke_cli([*home, "files", "cat", "docList:writeFile:Q3 report.pdf"])
    assert "run docbinder files cat 'docList:writeFile:Q3 report.pdf' --workflow" in spaced.stderr


def _attach(home: list[str], workflow: str, name: str, data: bytes) -> dict[str, str]:
    attached = CliRunner().invoke(
        app,
        [*home, "attach", "-", "--name", name, "--workflow", workflow, "--json"],
        input=data,
    )
    assert attached.exit_code == 0, attached.output
    made: dict[str, str] = json.loads(attached.stdout)
    return made


def test_files_commands_resolve_a_document_reference_in_the_given_workflow(
    home: list[str],
) -> None:
    workflow = _workflow(home)
    made = _attach(home, workflow, "a.txt", b"alpha\n")
    for reference in (
        f"docItem:{made['documentId']}",
        f"[DOCITEM:{made['documentId'].upper()}].",
        f'"doc_item: {made["documentId"]}"',
        "docList:writeFile:a.txt",
    ):
        shown = invoke_cli([*home, "files", "show", reference, "-w", workflow, "--json"])
        assert shown.exit_code == 0, (reference, shown.stderr)
        assert json.loads(shown.stdout)["id"] == made["fileId"]
    cat = invoke_cli([*home, "files", "cat", f"docItem:{made['documentId']}", "-w", workflow])
    assert cat.exit_code == 0 and cat.stdout == "alpha\n"
    # A reference the workflow does not hold, or one from another workflow, finds nothing.
    other = _workflow(home)
    missing = invoke_cli([*home, "files", "show", f"docItem:{made['documentId']}", "-w", other])
    assert missing.exit_code == 1
    assert error_lines(missing) == [
        f"error: docItem:{made['documentId']} in workflow {other}: "
        "no document with this reference in the active workflow"
    ]
    # Another mandate cannot read the workflow: refused like any unknown workflow.
    stranger = ["--home", home[1], "--user", "eve", "--mandate", "evil"]
    refused = invoke_cli([*stranger, "files", "show", "docList:writeFile:a.txt", "-w", workflow])
    assert refused.exit_code == 1
    assert error_lines(refused) == [f"error: workflow {workflow} not found"]
    # rm deletes the file a reference points at, with --force since the document refers to it.
    kept = invoke_cli([*home, "files", "rm", f"docItem:{made['documentId']}", "-w", workflow])
    assert kept.exit_code == 1
    removed = invoke_cli(
        [*home, "files", "rm", f"docItem:{made['documentId']}", "-w", workflow, "--force", "--json"]
    )
    assert removed.exit_code == 0, removed.stderr
    assert json.loads(removed.stdout) == {"deleted": made["fileId"], "references": 1}


def test_files_show_refuses_a_label_of_several_files_and_lists_them(home: list[str]) -> None:
    from docbinder import Principal, build_binder

    workflow = _workflow(home)
    # Several files under one label come from the Python API (persist_action_result).
    with build_binder(home=home[1]) as binder:
        run = binder.start_run(Principal("alice", "acme", roles=("member",)), workflow)
        items = [run.store_file("a.csv", b"a\n"), run.store_file("b.csv", b"b\n")]
        run.persist_action_result(items, label="task:1")
    ids = [stored.item.id for stored in items]
    refused = invoke_cli([*home, "files", "show", "docList:task:1", "-w", workflow])
    assert refused.exit_code == 1
    assert error_lines(refused) == [
        f"error: docList:task:1 names documents of 2 files in workflow {workflow} "
        f"({ids[0]}, {ids[1]}); give one of these file ids"
    ]
    both = invoke_cli([*home, "files", "show", f"file:{ids[0]}, file:{ids[1]}"])
    assert both.exit_code == 1
    [line] = error_lines(both)
    assert "is not one file id or document reference" in line


def test_unresolved_inputs_are_shown_as_json_values(home: list[str]) -> None:
    workflow = _workflow(home)
    sent = json.dumps(["docItem:nope", None, {"id": ""}, "bogus", 7])
    result = invoke_cli([*home, "resolve", sent, "--workflow", workflow, "--json"])
    assert result.exit_code == 1
    shown = [u["reference"] for u in json.loads(result.stdout)["unresolved"]]
    assert shown == ["docItem:nope", None, {"id": ""}, "bogus", 7]
    plain = invoke_cli([*home, "resolve", sent, "--workflow", workflow])
    assert 'unresolved {"id": ""}: rejected_input' in plain.stdout


def test_files_rm_takes_file_prefixed_ids_and_explains_document_references(
    home: list[str],
) -> None:
    workflow = _workflow(home)
    attached = CliRunner().invoke(
        app,
        [*home, "attach", "-", "--name", "a.txt", "--workflow", workflow, "--json"],
        input=b"x\n",
    )
    made = json.loads(attached.stdout)
    refused = invoke_cli([*home, "files", "rm", f"docItem:{made['documentId']}"])
    assert refused.exit_code != 0
    [line] = error_lines(refused)
    assert "document reference" in line
    removed = invoke_cli([*home, "files", "rm", f"file:{made['fileId']}", "--force", "--json"])
    assert removed.exit_code == 0, removed.stderr
    assert json.loads(removed.stdout) == {"deleted": made["fileId"], "references": 1}


def test_workflow_ls_json_does_not_claim_workflows_are_empty(home: list[str]) -> None:
    workflow = _workflow(home)
    CliRunner().invoke(
        app, [*home, "attach", "-", "--name", "a.txt", "--workflow", workflow], input=b"x"
    )
    listed = json.loads(invoke_cli([*home, "workflow", "ls", "--json"]).stdout)
    assert [w["id"] for w in listed] == [workflow]
    assert "messages" not in listed[0]


def test_workflow_ls_keeps_each_timestamp_on_its_row_at_80_columns(tmp_path: Path) -> None:
    # A long owner and mandate press on the columns: they fold, the id and time stay whole.
    home = ["--home", str(tmp_path / "home"), "--user", "a" * 40, "--mandate", "m" * 30]
    workflows = {_workflow(home) for _ in range(2)}
    listed = json.loads(invoke_cli([*home, "workflow", "ls", "--json"]).stdout)
    result = invoke_cli([*home, "workflow", "ls"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    for entry in listed:
        created = entry["createdAt"][:19].replace("T", " ")
        [row] = [line for line in lines if entry["id"] in line]
        assert created in row
    assert {entry["id"] for entry in listed} == workflows
    continued = [line for line in lines if line.startswith("│") and line[2:38] not in workflows]
    assert continued  # the owner and mandate did fold
    assert all(line.split("│")[-2].strip() == "" for line in continued)
    assert "created (UTC)" in result.stdout


def test_a_global_option_after_the_command_says_where_it_goes(home: list[str]) -> None:
    result = invoke_cli(["mcp", "--home", "/srv/docbinder"])
    assert result.exit_code == 2
    [line] = error_lines(result)
    assert line.startswith("error: No such option: --home")
    assert line.endswith(
        "; --home is a global option: give it before the command (docbinder --home VALUE mcp ...)"
    )
    flag = invoke_cli([*home, "files", "ls", "-v"])
    assert error_lines(flag)[-1].endswith("(docbinder -v files ls ...)")
    unknown = invoke_cli([*home, "files", "ls", "--bogus"])
    assert "global option" not in unknown.stderr


def _on_a_terminal(args: list[str]) -> tuple[int, bytes]:
    """``docbinder ARGS`` in a subprocess whose stdout and stderr are a pseudo-terminal."""
    import pty
    import subprocess
    import sys

    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    with subprocess.Popen(
        [sys.executable, "-m", "docbinder", *args],
        stdout=follower,
        stderr=follower,
        stdin=subprocess.DEVNULL,
        env=env,
    ) as process:
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            seen += chunk
        code = process.wait(timeout=120)
    os.close(leader)
    return code, seen


def test_files_cat_writes_no_binary_file_to_a_terminal_and_text_as_is(
    home: list[str], tmp_path: Path
) -> None:
    png = tmp_path / "dot.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00\x1b[2J" * 20)
    note = tmp_path / "note.txt"
    note.write_text("plain words\n", encoding="utf-8")
    ids = {}
    for path in (png, note):
        made = invoke_cli([*home, "attach", str(path), "--json"])
        assert made.exit_code == 0, made.stderr
        ids[path.name] = json.loads(made.stdout)["fileId"]
    code, shown = _on_a_terminal([*home, "files", "cat", ids["dot.png"]])
    assert code == 1 and b"\x1b[2J" not in shown
    assert b"error: 'dot.png' is image/png, not text: it is not written to a terminal" in shown
    code, shown = _on_a_terminal([*home, "files", "cat", ids["note.txt"]])
    assert code == 0 and shown.replace(b"\r\n", b"\n") == b"plain words\n"
    piped = invoke_cli([*home, "files", "cat", ids["dot.png"]])  # not a terminal: the bytes
    assert piped.exit_code == 0 and piped.stdout_bytes == png.read_bytes()


def test_resolve_without_a_workflow_says_where_to_give_it(home: list[str]) -> None:
    hint = (
        "references resolve within a workflow; give it with --workflow WORKFLOW_ID "
        "(docbinder workflow ls lists the workflow ids)"
    )
    for sent in ("docItem:3f2b8c1e-9a4d-4c6e-8f1a-2b3c4d5e6f70", "ubuntu.csv"):
        result = invoke_cli([*home, "resolve", sent])
        assert result.exit_code == 1
        assert error_lines(result)[-1].endswith(hint), sent
    workflow = invoke_cli([*home, "workflow", "new"]).stdout.strip()
    within = invoke_cli([*home, "resolve", "ubuntu.csv", "--workflow", workflow])
    assert within.exit_code == 1 and hint not in within.stderr
