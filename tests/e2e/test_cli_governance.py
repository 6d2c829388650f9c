"""``docbinder quota`` and the provenance ``attach`` records, end to end (B9, B12)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from docbinder.cli.main import app


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for key in list(os.environ):
        if key.startswith("DOCBINDER_"):
            monkeypatch.delenv(key)
    runner = CliRunner()
    home = tmp_path / "home"

    def invoke(*args: str, mandate: str = "acme") -> Any:
        return runner.invoke(
            app, ["--home", str(home), "--user", "alice", "--mandate", mandate, *args]
        )

    yield invoke


def _json(result: Any) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_quota_set_show_and_a_refused_attach(cli: Any, tmp_path: Path) -> None:
    small, big = tmp_path / "small.txt", tmp_path / "big.bin"
    small.write_bytes(b"x" * 40)
    big.write_bytes(b"y" * 70)
    assert _json(cli("attach", str(small), "--json"))["file"]["size"] == 40
    shown = _json(cli("quota", "set", "--mandate", "acme", "--max-bytes", "100", "--json"))
    assert shown == {
        "mandateId": "acme",
        "featureInstanceId": None,
        "maxBytes": 100,
        "maxFiles": None,
        "maxFileSize": None,
        "usedBytes": 40,
        "usedFiles": 1,
    }
    refused = cli("attach", str(big))
    assert refused.exit_code == 1
    [line] = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert line.startswith(f"error: {big}: quota exceeded for mandate acme: max-bytes is 100")
    assert "40 bytes are used and this needs 70 more" in line
    assert len(_json(cli("files", "ls", "--json"))) == 1
    assert _json(cli("quota", "show", "--json"))["usedBytes"] == 40
    # Another mandate is not limited; removing the quota frees this one.
    assert cli("attach", str(big), mandate="other").exit_code == 0
    assert _json(cli("quota", "rm", "--json")) == {"removed": True}
    assert cli("attach", str(big)).exit_code == 0
    assert _json(cli("quota", "show", "--json"))["usedBytes"] == 110


def test_a_feature_instance_quota_counts_only_its_files(cli: Any, tmp_path: Path) -> None:
    f = tmp_path / "f.txt"
    f.write_bytes(b"z" * 10)
    _json(cli("quota", "set", "--feature-instance", "fi-1", "--max-files", "1", "--json"))
    runner_args = ("--feature-instance", "fi-1")
    ok = CliRunner().invoke(
        app,
        [
            "--home",
            str(tmp_path / "home"),
            "--user",
            "alice",
            "--mandate",
            "acme",
            *runner_args,
            "attach",
            str(f),
        ],
    )
    assert ok.exit_code == 0, ok.output
    f.write_bytes(b"w" * 10)
    again = CliRunner().invoke(
        app,
        [
            "--home",
            str(tmp_path / "home"),
            "--user",
            "alice",
            "--mandate",
            "acme",
            *runner_args,
            "attach",
            str(f),
        ],
    )
    assert again.exit_code == 1
    assert "max-files is 1 and 1 files are stored" in again.stderr
    assert cli("attach", str(f)).exit_code == 0  # the mandate itself has no quota


def test_files_show_json_carries_the_provenance_attach_declared(cli: Any, tmp_path: Path) -> None:
    source = tmp_path / "data.csv"
    source.write_text("a,b\n1,2\n")
    plain = _json(cli("attach", str(source), "--json"))
    chart = tmp_path / "chart.svg"
    chart.write_text("<svg/>")
    made = _json(
        cli(
            "attach",
            str(chart),
            "--tool",
            "create_chart",
            "--tool-call-id",
            "call_42",
            "--model",
            "gpt-4.1",
            "--parent",
            plain["fileId"],
            "--json",
        )
    )
    shown = _json(cli("files", "show", made["fileId"], "--json"))
    provenance = shown["provenance"]
    assert provenance["tool"] == "create_chart"
    assert provenance["toolCallId"] == "call_42"
    assert provenance["model"] == "gpt-4.1"
    assert provenance["parents"] == [plain["fileId"]]
    assert provenance["argsSha256"] is None and provenance["workflowId"] is None
    assert provenance["messageId"] is None  # stored without a workflow: no message
    assert provenance["runId"]
    first = _json(cli("files", "show", plain["fileId"], "--json"))["provenance"]
    assert first["tool"] == "docbinder attach" and first["parents"] == []


def test_files_show_json_names_the_message_an_attach_made(cli: Any, tmp_path: Path) -> None:
    f = tmp_path / "report.txt"
    f.write_text("quarterly")
    wf = _json(cli("workflow", "new", "--json"))["id"]
    stored = _json(cli("attach", str(f), "--workflow", wf, "--json"))
    shown = _json(cli("files", "show", stored["fileId"], "--json"))["provenance"]
    messages = _json(cli("workflow", "show", wf, "--json"))["messages"]
    [message] = [m for m in messages if stored["fileId"] in {d["fileId"] for d in m["documents"]}]
    assert shown["messageId"] == message["id"] and shown["workflowId"] == wf


def test_audit_ls_export_verify_and_a_tampered_log(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCBINDER_AUDIT", "true")
    f = tmp_path / "notes.txt"
    f.write_text("alpha")
    wf = _json(cli("workflow", "new", "--json"))["id"]
    stored = _json(cli("attach", str(f), "--workflow", wf, "--json"))
    assert cli("files", "cat", stored["fileId"]).exit_code == 0
    events = _json(cli("audit", "ls", "--json"))
    assert [e["action"] for e in events] == ["store", "attach", "read_bytes"]
    assert all(e["principal"] == "alice" for e in events)
    mine = _json(cli("audit", "ls", "--file", stored["fileId"], "--since", "1h", "--json"))
    assert len(mine) == 3
    assert _json(cli("audit", "ls", "--user", "bob", "--json")) == []
    exported = tmp_path / "audit.jsonl"
    assert cli("audit", "export", "--output", str(exported)).exit_code == 0
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert [line["seq"] for line in lines] == [1, 2, 3]
    assert lines[1]["prevHash"] == lines[0]["hash"]
    verified = _json(cli("audit", "verify", "--json"))
    assert verified["ok"] is True and verified["checked"] == 3
    assert verified["head"] == {"seq": 3, "hash": lines[2]["hash"]}
    import sqlite3

    with sqlite3.connect(tmp_path / "home" / "docbinder.db") as db:
        db.execute("UPDATE audit_events SET principal = 'mallory' WHERE seq = 2")
    broken = cli("audit", "verify")
    assert broken.exit_code == 1
    assert broken.stderr.strip() == (
        "error: audit log broken at event 2: event 2 was changed: its hash no longer matches"
    )


def test_audit_prune_needs_a_retention_and_keeps_the_chain_verifiable(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCBINDER_AUDIT", "true")
    f = tmp_path / "a.txt"
    f.write_text("a")
    assert cli("attach", str(f)).exit_code == 0
    refused = cli("audit", "prune")
    assert refused.exit_code == 1 and "audit_retention is not set" in refused.stderr
    monkeypatch.setenv("DOCBINDER_AUDIT_RETENTION", "1s")
    import time

    time.sleep(1.1)
    f.write_text("b")
    assert cli("attach", str(f)).exit_code == 0
    assert _json(cli("audit", "prune", "--json")) == {"removed": 1}
    verified = _json(cli("audit", "verify", "--json"))
    assert verified["ok"] is True and verified["checked"] == 1


def test_audit_prune_keeps_the_reads_a_policy_from_the_last_read_counts_from(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCBINDER_AUDIT", "true")
    monkeypatch.setenv("DOCBINDER_AUDIT_RETENTION", "1s")
    f = tmp_path / "a.txt"
    f.write_text("a")
    file_id = _json(cli("attach", str(f), "--json"))["fileId"]
    assert cli("retention", "set", "--max-age", "1h", "--from", "last-read").exit_code == 0
    assert cli("files", "cat", file_id).exit_code == 0
    import time

    time.sleep(1.1)
    assert _json(cli("audit", "prune", "--json")) == {"removed": 0}  # the read is within 1h
    assert [e["action"] for e in _json(cli("audit", "ls", "--json"))].count("read_bytes") == 1
    assert cli("retention", "rm").exit_code == 0
    assert _json(cli("audit", "prune", "--json"))["removed"] >= 2
    assert _json(cli("audit", "verify", "--json"))["ok"] is True


def test_retention_set_and_show_say_the_period_in_one_unit(cli: Any, tmp_path: Path) -> None:
    for given, shown in (("30d", "30d"), ("2592000", "30d"), ("36h", "36h"), ("90m", "90m")):
        result = cli("retention", "set", "--max-age", given)
        assert result.exit_code == 0, result.output
        assert result.stdout.strip() == f"files of mandate acme expire {shown} after their creation"
        listed = cli("retention", "show")
        assert listed.stdout.splitlines()[0] == result.stdout.strip()


def test_a_policy_from_the_last_read_says_when_anything_can_expire_first(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCBINDER_AUDIT", "true")
    before = datetime.now(UTC)
    result = cli("retention", "set", "--max-age", "30d", "--from", "last-read", "--json")
    assert result.exit_code == 0, result.output
    policy = _json(result)
    set_at = datetime.fromisoformat(policy["setAt"])
    assert policy["basis"] == "last_read" and before <= set_at <= datetime.now(UTC)
    first = (set_at + timedelta(days=30)).isoformat(timespec="seconds")
    assert cli("retention", "show").stdout.strip() == (
        f"files of mandate acme expire 30d after their last read, none before {first}"
    )
    assert _json(cli("retention", "show", "--json"))["policies"] == [policy]


def test_a_hold_on_another_mandates_workflow_is_refused_like_an_unknown_id(
    cli: Any, tmp_path: Path
) -> None:
    workflow = _json(cli("workflow", "new", "--json"))["id"]
    theirs = cli(
        "retention", "hold", "--workflow", workflow, "--reason", "case 9", mandate="globex"
    )
    unknown = cli(
        "retention", "hold", "--workflow", "00000000-0000-4000-8000-000000000000", mandate="globex"
    )
    assert theirs.exit_code == unknown.exit_code == 1
    assert theirs.stderr.replace(workflow, "ID") == unknown.stderr.replace(
        "00000000-0000-4000-8000-000000000000", "ID"
    )
    placed = cli("retention", "hold", "--workflow", workflow, "--reason", "case 9")
    assert placed.exit_code == 0 and "legal hold placed" in placed.stdout
    foreign = cli("retention", "release", "--workflow", workflow, mandate="globex")
    assert foreign.exit_code == 1 and foreign.stdout == ""
    assert foreign.stderr.strip() == (
        f"error: no legal hold on workflow {workflow} in mandate globex (check the id and "
        "--mandate; `docbinder retention show` lists the holds)"
    )
    assert "lifted" in cli("retention", "release", "--workflow", workflow).stdout
    again = cli("retention", "release", "--workflow", workflow, "--json")
    assert again.exit_code == 1 and "no legal hold" in again.stderr


def test_removing_a_retention_policy_that_is_not_there_fails_and_names_the_scope(
    cli: Any, tmp_path: Path
) -> None:
    missing = cli("retention", "rm", "--feature-instance", "fi-9")
    assert missing.exit_code == 1
    assert "has no retention policy to remove" in missing.stderr
    assert "--feature-instance" in missing.stderr
    assert cli("retention", "set", "--max-age", "30d", "--feature-instance", "fi-9").exit_code == 0
    removed = cli("retention", "rm", "--feature-instance", "fi-9", "--json")
    assert removed.exit_code == 0 and _json(removed) == {"removed": True}


def test_a_hold_reason_cannot_forge_a_line_of_retention_show(cli: Any, tmp_path: Path) -> None:
    workflow = _json(cli("workflow", "new", "--json"))["id"]
    forged = "case 9\nlegal hold on file 00000000-0000-4000-8000-000000000000"
    assert cli("retention", "hold", "--workflow", workflow, "--reason", forged).exit_code == 0
    lines = cli("retention", "show").stdout.splitlines()
    assert [line for line in lines if line.startswith("legal hold")] == [
        f"legal hold on workflow {workflow}: case 9\\u000alegal hold on file "
        "00000000-0000-4000-8000-000000000000"
    ]


@pytest.mark.parametrize(
    "args",
    [
        ("retention", "set", "--max-age", "30d", "--from", "bogus"),
        ("retention", "set", "--max-age", "30d", "--mandate", ""),
        ("retention", "set", "--max-age", "10000000000s"),
        ("retention", "set", "--max-age", "٣٠d"),
        ("retention", "show", "--mandate", " "),
        ("quota", "set", "--max-files", "1", "--mandate", ""),
        ("gc", "--grace", "1e12"),
        ("audit", "ls", "--limit", "-1"),
        ("audit", "ls", "--limit", "99999999999999999999"),
    ],
)
def test_bad_operator_input_is_one_error_line(cli: Any, args: tuple[str, ...]) -> None:
    result = cli(*args)
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = [x for x in result.stderr.strip().splitlines() if not x.startswith("note:")]
    assert lines and lines[0].startswith(("error:", "Usage:")), result.stderr
    assert "Traceback" not in result.output


def test_retention_from_accepts_its_two_names_in_any_case(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCBINDER_AUDIT", "true")
    assert (
        _json(cli("retention", "set", "--max-age", "1d", "--from", " Last-Read ", "--json"))[
            "basis"
        ]
        == "last_read"
    )
    assert (
        _json(cli("retention", "set", "--max-age", "1d", "--from", "CREATED", "--json"))["basis"]
        == "created"
    )


def test_audit_commands_say_when_this_process_records_nothing(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    off = cli("audit", "verify")
    assert off.exit_code == 0 and "the audit log is off in this process" in off.stderr
    monkeypatch.setenv("DOCBINDER_AUDIT", "true")
    on = cli("audit", "verify")
    assert on.exit_code == 0 and "off" not in on.stderr


def test_doctor_warns_a_process_without_audit_under_retention_from_the_last_read(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def audit_check() -> dict[str, str]:
        checks = json.loads(cli("doctor", "--json").stdout)["checks"]
        [check] = [c for c in checks if c["name"] == "audit log"]
        return check

    assert audit_check()["status"] == "ok"
    monkeypatch.setenv("DOCBINDER_AUDIT", "true")
    assert cli("retention", "set", "--max-age", "30d", "--from", "last-read").exit_code == 0
    assert audit_check()["status"] == "ok"
    monkeypatch.delenv("DOCBINDER_AUDIT")
    warned = audit_check()
    assert warned["status"] == "warn"
    assert "mandate acme" in warned["detail"] and "DOCBINDER_AUDIT=true" in warned["detail"]


def test_a_refused_attach_and_harvest_are_access_refused_events(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    monkeypatch.setenv("DOCBINDER_AUDIT", "true")
    workflow = _json(cli("workflow", "new", "--json"))["id"]
    f = tmp_path / "a.txt"
    f.write_text("a")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "b.txt").write_text("b")
    home = str(tmp_path / "home")
    runner = CliRunner()
    for args in (("attach", str(f)), ("harvest", str(tmp_path / "out"))):
        refused = runner.invoke(
            app,
            ["--home", home, "--user", "mallory", "--mandate", "acme", *args, "-w", workflow]
            if args[0] == "harvest"
            else [
                "--home",
                home,
                "--user",
                "mallory",
                "--mandate",
                "acme",
                *args,
                "--workflow",
                workflow,
            ],
        )
        assert refused.exit_code == 1 and "may not add documents" in refused.stderr
    events = [e for e in _json(cli("audit", "ls", "--json")) if e["action"] == "access_refused"]
    assert [(e["principal"], e["workflowId"], e["detail"]) for e in events] == [
        ("mallory", workflow, {"operation": "attach"}),
        ("mallory", workflow, {"operation": "attach"}),
    ]
    assert _json(cli("audit", "verify", "--json"))["ok"] is True
