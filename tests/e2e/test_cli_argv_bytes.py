"""Arguments that are not UTF-8 (issue 31, kind 7), through the real command in a subprocess.

``docbinder files show``, ``files cat`` and ``files rm`` with an id whose bytes are not
valid UTF-8 printed a ``UnicodeEncodeError`` traceback. Python decodes such bytes to lone
surrogates (PEP 383); every command that takes an id, a name or a setting now answers
with one ``error:`` line and exit code 1 or 2, in text and in JSON mode.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BAD = os.fsencode("f") + b"\xff\xfe"
"""An id argument with two bytes that are no UTF-8."""


def _run(home: Path, *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCBINDER_")}
    env.update(DOCBINDER_HOME=str(home), DOCBINDER_USER="alice", LC_ALL="C.UTF-8")
    argv = [os.fsencode(sys.executable), b"-m", b"docbinder"]
    argv += [os.fsencode(a) if isinstance(a, str) else a for a in args]
    return subprocess.run(argv, capture_output=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("argv-home")
    notes = home.parent / "notes.txt"
    notes.write_text("kept")
    workflow = json.loads(_run(home, "--json", "workflow", "new").stdout)["id"]
    done = _run(home, "--json", "attach", str(notes), "--workflow", workflow)
    assert done.returncode == 0, done.stderr
    (home / "workflow").write_text(workflow)
    return home


def _commands(home: Path) -> dict[str, list[str | bytes]]:
    workflow = (home / "workflow").read_text()
    bad_file = home.parent / os.fsdecode(b"n\xff.txt")
    bad_file.write_bytes(b"x")
    return {
        "files show": ["files", "show", BAD],
        "files cat": ["files", "cat", BAD],
        "files rm": ["files", "rm", BAD],
        "files rm --force": ["files", "rm", "--force", BAD],
        "workflow show": ["workflow", "show", BAD],
        "workflow advance": ["workflow", "advance", BAD, "--next", "round"],
        "resolve -w": ["resolve", "-w", BAD, "docItem:x"],
        "attach -w": ["attach", str(home.parent / "notes.txt"), "-w", BAD],
        "attach --name": ["attach", str(home.parent / "notes.txt"), "--name", BAD, "-w", workflow],
        "attach a path": ["attach", os.fsencode(bad_file), "-w", workflow],
        "--user": ["--user", BAD, "files", "ls"],
        "--mandate": ["--mandate", BAD, "files", "ls"],
        "--feature-instance": ["--feature-instance", BAD, "files", "ls"],
        "--database-url": [
            "--database-url",
            b"sqlite:///" + os.fsencode(home) + b"/\xff.db",
            "files",
            "ls",
        ],
        "--blob-url": ["--blob-url", b"file://" + os.fsencode(home) + b"/\xff", "files", "ls"],
        "--home": ["--home", os.fsencode(home) + b"\xff", "files", "ls"],
    }


CASES = [
    "files show",
    "files cat",
    "files rm",
    "files rm --force",
    "workflow show",
    "workflow advance",
    "resolve -w",
    "attach -w",
    "attach --name",
    "attach a path",
    "--user",
    "--mandate",
    "--feature-instance",
    "--database-url",
    "--blob-url",
    "--home",
]


@pytest.mark.parametrize("json_mode", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("case", CASES)
def test_an_argument_that_is_not_utf8_gets_one_error_line(
    home: Path, case: str, json_mode: bool
) -> None:
    args = _commands(home)[case]
    done = _run(home, *(["--json"] if json_mode else []), *args)
    stderr = done.stderr.decode("utf-8", "replace")
    assert b"Traceback" not in done.stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1 and errors == lines[-1:], stderr
    assert done.returncode in (1, 2), (done.returncode, stderr)
    done.stderr.decode("utf-8")  # the line itself is UTF-8: the bad bytes appear escaped


def test_the_stored_file_is_still_there(home: Path) -> None:
    """The refused ``files rm`` calls above deleted nothing (and this test can fail)."""
    listed = json.loads(_run(home, "--json", "files", "ls").stdout)
    assert [item["fileName"] for item in listed] == ["notes.txt"]
