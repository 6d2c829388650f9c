"""The command line never prints a traceback and data never spoofs its output (issue 17 kind 8).

Runs the real ``docbinder`` command in-process on an embedded home. Ids, file names and
labels carry rich markup, bidi overrides and line separators; every output path (plain,
tables, ``--json``, errors) must show them escaped and never interpret them.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docbinder.cli.main import app
from docbinder.cli.output import clean
from tests.reliability.harness import error_lines, invoke_cli

HOSTILE_NAME = "evil\u202e\u2028[red]x[bold]\u200b\u2066.txt"
RAW_DANGER = ("\u202e", "\u2028", "\u2029", "\u200b", "\u2066", "\x1b", "\ud800")


def _no_raw_danger(text: str) -> None:
    for ch in RAW_DANGER:
        assert ch not in text, (repr(ch), text)
    assert "Traceback" not in text


@pytest.fixture
def home(tmp_path: Path) -> tuple[list[str], str, Path]:
    root = tmp_path / "home"
    identity = ["--home", str(root), "--user", "u[/x]", "--mandate", "[/x]"]
    sample = tmp_path / HOSTILE_NAME
    sample.write_bytes(b"x")
    made = invoke_cli([*identity, "--json", "workflow", "new"])
    assert made.exit_code == 0, made.stderr
    workflow = json.loads(made.stdout)["id"]
    attached = invoke_cli([*identity, "attach", "--workflow", workflow, str(sample)])
    assert attached.exit_code == 0, attached.stderr
    return identity, workflow, sample


def test_markup_in_ids_is_printed_as_it_is(home: tuple[list[str], str, Path]) -> None:
    identity, workflow, _ = home
    for args in (["workflow", "show", workflow], ["files", "ls"], ["workflow", "ls"]):
        result = invoke_cli([*identity, *args])
        assert result.exit_code == 0, (args, result.stderr)
        assert "[/x]" in result.stdout, (args, result.stdout)
        assert not result.stderr.strip(), (args, result.stderr)


def test_control_and_bidi_characters_are_escaped_on_every_output_path(
    home: tuple[list[str], str, Path],
) -> None:
    identity, workflow, _ = home
    escaped = "evil\\u202e\\u2028[red]x[bold]\\u200b\\u2066.txt"
    for args in (
        ["workflow", "show", workflow],
        ["files", "ls"],
        ["resolve", "--workflow", workflow, f"docList:writeFile:{HOSTILE_NAME}"],
        ["resolve", "--workflow", workflow, "docItem:nothing", "--content"],
    ):
        result = invoke_cli([*identity, *args])
        _no_raw_danger(result.stdout + result.stderr)
        assert escaped in result.stdout, (args, result.stdout)
    listed = invoke_cli([*identity, "--json", "files", "ls"])
    _no_raw_danger(listed.stdout)
    assert json.loads(listed.stdout)[0]["fileName"] == HOSTILE_NAME


def test_an_error_message_with_data_is_one_escaped_line(home: tuple[list[str], str, Path]) -> None:
    identity, _, _ = home
    result = invoke_cli([*identity, "files", "show", "a\u2028b[/x]\u202e"])
    assert result.exit_code == 1
    [line] = error_lines(result)
    assert line.startswith("error: ")
    _no_raw_danger(result.stderr)


def test_invalid_utf8_on_stdin_to_resolve_is_one_error_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["--home", str(tmp_path / "h"), "resolve", "-"], input=b"\xff\xfe docItem:a1"
    )
    assert result.exit_code == 1
    assert error_lines(result) == [
        "error: the documentList on stdin is not valid UTF-8 (byte 0: b'\\xff')"
    ]
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_huge_limit_lists_everything_without_an_error(home: tuple[list[str], str, Path]) -> None:
    identity, _, _ = home
    result = invoke_cli([*identity, "--json", "files", "ls", "--limit", "99999999999999999999"])
    assert result.exit_code == 0, result.stderr
    assert len(json.loads(result.stdout)) == 1
    negative = invoke_cli([*identity, "files", "ls", "--limit", "-1"])
    assert negative.exit_code == 1
    assert [line[:7] for line in error_lines(negative)] == ["error: "]


def test_log_lines_are_escaped_too(home: tuple[list[str], str, Path]) -> None:
    identity, workflow, _ = home
    result = invoke_cli([*identity, "-v", "resolve", "--workflow", workflow, "docItem:x\u2028"])
    _no_raw_danger(result.stderr)
    assert logging.getLogger("docbinder").handlers is not None


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a\u202eb", "a\\u202eb"),
        ("a\u2028b", "a\\u2028b"),
        ("a\x1b[31mb", "a\\u001b[31mb"),
        ("line\nnext", "line\nnext"),
        ("\ud800", "\\ud800"),
        ("\u65e5\u672c [b]", "\u65e5\u672c [b]"),
    ],
)
def test_clean_escapes_exactly_what_can_spoof(raw: str, shown: str) -> None:
    assert clean(raw) == shown


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["files", "ls", "--limit", "abc"],
            "error: Invalid value for '--limit': 'abc' is not a valid int.",
        ),
        (["nosuch"], "error: No such command 'nosuch'."),
        (
            ["files", "ls", "--limt", "3"],
            "error: No such option: --limt (Possible options: --limit)",
        ),
    ],
)
def test_usage_errors_are_one_error_line(tmp_path: Path, args: list[str], line: str) -> None:
    result = invoke_cli(["--home", str(tmp_path / "h"), *args])
    assert result.exit_code == 2
    assert error_lines(result) == [line]
    assert not result.stdout.strip()
