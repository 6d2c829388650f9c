"""``docbinder harvest`` and ``docbinder materialize`` on SQLite + local disk (the CLI's default store)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_cli import _json, _restore_logging, cli, home  # noqa: F401  (fixtures)


def test_harvest_then_materialize_through_the_command_line(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; open(sys.argv[1] + '/t.csv', 'w').write('a,b\\n1,2\\n')",
            str(out),
        ],
        check=True,
    )
    (out / "link.csv").symlink_to(tmp_path / "elsewhere.csv")
    wf = _json(cli("--json", "workflow", "new"))["id"]  # type: ignore[index]

    first = cli("harvest", str(out), "--workflow", wf, "--mount", "/mnt/data", "--json")
    assert first.exit_code == 1, first.output  # the link is refused
    report = json.loads(first.stdout)
    assert [h["path"] for h in report["harvested"]] == ["/mnt/data/t.csv"]
    assert report["refused"] == [
        {"path": "/mnt/data/link.csv", "reason": "symbolic link: not followed"}
    ]
    ref = report["harvested"][0]["documentRef"]
    shown = _json(cli("files", "show", report["harvested"][0]["fileId"], "--json"))
    assert shown["provenance"]["sourcePath"] == "/mnt/data/t.csv"  # type: ignore[index]
    assert shown["provenance"]["sandboxId"] == f"local:{out}"  # type: ignore[index]

    (out / "link.csv").unlink()
    again = cli("harvest", str(out), "--workflow", wf, "--mount", "/mnt/data")
    assert again.exit_code == 0, again.output
    assert again.stdout.splitlines() == [
        f"Harvested 0 file(s) from sandbox local:{out} (1 unchanged, 0 refused)",
        f"  /mnt/data/t.csv -> {ref} (unchanged)",
    ]

    inbox = tmp_path / "in"
    inbox.mkdir()
    placed = cli("materialize", f"please use {ref}", str(inbox), "--workflow", wf)
    assert placed.exit_code == 0, placed.output
    assert (inbox / "t.csv").read_text() == "a,b\n1,2\n"
    refused = cli("materialize", ref, str(inbox), "--workflow", wf)
    assert refused.exit_code == 1
    assert "a file of that name is already in the directory" in refused.stdout
    fresh = tmp_path / "next" / "sandbox" / "in"  # not there yet: made
    made = cli("materialize", ref, str(fresh), "--workflow", wf)
    assert made.exit_code == 0, made.output
    assert (fresh / "t.csv").read_text() == "a,b\n1,2\n"
