"""Bad input on the command line: one ``error:`` line, a non-zero exit, nothing written (SPEC C15, section 5).

Runs the real ``docbinder`` command (in-process, through ``CliRunner``) on an
embedded home (SQLite + local disk). Before each bad call the home holds one
workflow with one attached file; after it, the same rows and the same blobs.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
import sqlalchemy as sa
from typer.testing import Result

from docbinder.adapters.sql.schema import chat_documents, chat_messages, file_items, workflows
from tests.reliability.harness import LEDGER, error_lines, files_under, invoke_cli

IDENTITY = ["--user", "alice", "--mandate", "acme"]


@attrs.define
class Home:
    root: Path
    database: Path
    workflow: str
    document: str
    file_id: str
    sample: Path

    @property
    def blobs(self) -> Path:
        return self.root / "blobs"

    def args(self, *extra: str, mandate: str = "acme") -> list[str]:
        return ["--home", str(self.root), "--user", "alice", "--mandate", mandate, *extra]

    def snapshot(self) -> tuple[object, ...]:
        engine = sa.create_engine(f"sqlite:///{self.database}")
        try:
            with engine.connect() as conn:
                rows = tuple(
                    tuple(sorted(tuple(r) for r in conn.execute(sa.select(t))))
                    for t in (workflows, chat_messages, chat_documents, file_items)
                )
        finally:
            engine.dispose()
        blobs = tuple(
            (p.relative_to(self.root).as_posix(), p.read_bytes()) for p in files_under(self.blobs)
        )
        return rows, blobs


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    base = tmp_path_factory.mktemp("cli-home")
    root = base / "home"
    sample = base / "sample.txt"
    sample.write_text("a sample\n", encoding="utf-8")

    def ok(*args: str) -> dict[str, str]:
        result = invoke_cli(["--home", str(root), *IDENTITY, "--json", *args])
        assert result.exit_code == 0, (result.stdout, result.stderr)
        payload: dict[str, str] = json.loads(result.stdout)
        return payload

    workflow = ok("workflow", "new")["id"]
    attached = ok("attach", str(sample), "--workflow", workflow)
    return Home(
        root, root / "docbinder.db", workflow, attached["documentId"], attached["fileId"], sample
    )


@pytest.fixture
def unchanged(home: Home) -> Iterator[None]:
    """Fails the test if the home's rows or blobs changed."""
    before = home.snapshot()
    yield
    assert home.snapshot() == before


def _assert_one_error_line(result: Result, args: list[str]) -> str:
    """Non-zero exit, one ``error:`` line on stderr, no traceback, no escaped exception."""
    assert result.exit_code != 0, (args, result.stdout)
    lines = error_lines(result)
    assert len(lines) == 1 and lines[0].startswith("error: "), (args, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    return lines[0]


MALFORMED_DOCUMENT_LISTS = [
    '{"documents": [',
    "[[[[[[[[",
    '{"id": }',
    "docItem:",
    "docItem:../../etc/passwd",
    "file:' OR 1=1 --",
    "docList:",
    "\x00\x01\x02",
    "```json\n{]\n```",
    '{"documents": "docItem:"}',
    "9" * 5000,
    "[" * 2000 + "]" * 2000,
    '{"a":' * 500 + "1" + "}" * 500,
]


@pytest.mark.parametrize("document_list", MALFORMED_DOCUMENT_LISTS, ids=lambda v: repr(v)[:30])
def test_malformed_document_list_to_resolve(
    home: Home, unchanged: None, document_list: str
) -> None:
    args = home.args("resolve", document_list, "--workflow", home.workflow)
    result = invoke_cli(args)
    line = _assert_one_error_line(result, args)
    assert line.endswith("reference(s) unresolved")
    LEDGER.hostile["CLI bad input"] += 1


@pytest.mark.parametrize("document_list", ["null", "[]", "", "{}"], ids=repr)
def test_empty_document_list_resolves_to_nothing(
    home: Home, unchanged: None, document_list: str
) -> None:
    result = invoke_cli(home.args("--json", "resolve", document_list, "--workflow", home.workflow))
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["documents"] == [] and payload["unresolved"] == []
    LEDGER.hostile["CLI bad input"] += 1


def _cases(home: Home, tmp: Path) -> list[list[str]]:
    random_id = str(uuid.uuid4())
    return [
        home.args("attach", str(tmp / "missing.txt"), "--workflow", home.workflow),
        home.args(
            "attach", str(home.sample), str(tmp / "missing.txt"), "--workflow", home.workflow
        ),
        home.args("attach", str(tmp), "--workflow", home.workflow),
        home.args("attach", "/dev/null", "--workflow", home.workflow),
        home.args("attach", str(home.sample), "--workflow", random_id),
        home.args("attach", str(home.sample), "--workflow", "../../etc/passwd"),
        home.args("resolve", f"docItem:{home.document}", "--workflow", random_id),
        home.args("resolve", f"docItem:{home.document}"),
        home.args("workflow", "show", random_id),
        home.args("workflow", "show", "x" * 5000),
        home.args("files", "show", random_id),
        home.args("files", "cat", random_id),
        home.args("files", "rm", random_id),
        home.args("files", "show", "../" * 10 + "etc/passwd"),
        home.args("files", "cat", "\x01\x02"),
        home.args("files", "ls", "--limit", "-1"),
        # another mandate's ids
        home.args("files", "show", home.file_id, mandate="globex"),
        home.args("files", "cat", home.file_id, mandate="globex"),
        home.args("files", "rm", home.file_id, mandate="globex"),
        home.args("workflow", "show", home.workflow, mandate="globex"),
        home.args("attach", str(home.sample), "--workflow", home.workflow, mandate="globex"),
        home.args(
            "resolve", f"docItem:{home.document}", "--workflow", home.workflow, mandate="globex"
        ),
    ]


def test_missing_files_unknown_ids_and_unknown_workflows(
    home: Home, unchanged: None, tmp_path: Path
) -> None:
    cases = _cases(home, tmp_path)
    for args in cases:
        _assert_one_error_line(invoke_cli(args), args)
    LEDGER.hostile["CLI bad input"] += len(cases)


def test_another_mandates_ids_get_the_same_error_as_random_ids(home: Home, unchanged: None) -> None:
    """No existence oracle: the error for a real id of another mandate equals the one for a random id."""
    random_file, random_workflow = str(uuid.uuid4()), str(uuid.uuid4())
    pairs = [
        (["files", "show", home.file_id], ["files", "show", random_file]),
        (["files", "cat", home.file_id], ["files", "cat", random_file]),
        (["files", "rm", home.file_id], ["files", "rm", random_file]),
        (["workflow", "show", home.workflow], ["workflow", "show", random_workflow]),
        (
            ["resolve", f"docItem:{home.document}", "--workflow", home.workflow],
            ["resolve", f"docItem:{home.document}", "--workflow", random_workflow],
        ),
        (
            ["attach", str(home.sample), "--workflow", home.workflow],
            ["attach", str(home.sample), "--workflow", random_workflow],
        ),
    ]
    for real, fake in pairs:
        seen = invoke_cli(home.args(*real, mandate="globex"))
        unseen = invoke_cli(home.args(*fake, mandate="globex"))
        assert seen.exit_code == unseen.exit_code == 1
        assert seen.stdout == unseen.stdout == ""
        masked = seen.stderr.replace(home.file_id, "<id>").replace(home.workflow, "<id>")
        assert masked == unseen.stderr.replace(random_file, "<id>").replace(random_workflow, "<id>")
    LEDGER.hostile["CLI bad input"] += 2 * len(pairs)


def _settings_cases(home: Home, tmp: Path) -> list[tuple[list[str], dict[str, str]]]:
    bad_toml = tmp / "bad.toml"
    bad_toml.write_text("database_url = [", encoding="utf-8")
    unknown_key = tmp / "unknown.toml"
    unknown_key.write_text('database_url_typo = "sqlite:///x.db"\n', encoding="utf-8")
    wrong_table = tmp / "table.toml"
    wrong_table.write_text("docbinder = 5\n", encoding="utf-8")
    wrong_type = tmp / "type.toml"
    wrong_type.write_text("database_url = 5\n", encoding="utf-8")
    ls = home.args("files", "ls")
    attach = home.args("attach", str(home.sample), "--workflow", home.workflow)
    return [
        # unreadable configuration files
        (home.args("--config", str(tmp / "missing.toml"), "files", "ls"), {}),
        (home.args("--config", str(tmp), "files", "ls"), {}),
        (home.args("--config", str(bad_toml), "files", "ls"), {}),
        (home.args("--config", str(unknown_key), "files", "ls"), {}),
        (home.args("--config", str(wrong_table), "files", "ls"), {}),
        (home.args("--config", str(wrong_type), "files", "ls"), {}),
        (ls, {"DOCBINDER_CONFIG": str(tmp / "missing.toml")}),
        # bad metadata URLs (loopback only)
        (attach, {"DOCBINDER_DATABASE_URL": "not a url"}),
        (attach, {"DOCBINDER_DATABASE_URL": "oracle://scott@127.0.0.1/tiger"}),
        (attach, {"DOCBINDER_DATABASE_URL": "sqlite+nodriver:///x.db"}),
        (attach, {"DOCBINDER_DATABASE_URL": "postgresql+psycopg://nobody@127.0.0.1:1/none"}),
        (attach, {"DOCBINDER_DATABASE_URL": "mysql+pymysql://nobody@127.0.0.1:1/none"}),
        (attach, {"DOCBINDER_DATABASE_URL": "mysql+pymysql://n@127.0.0.1:1/x?charset=latin1"}),
        (attach, {"DOCBINDER_DATABASE_URL": "postgresql+asyncpg://n@127.0.0.1:1/x"}),
        # bad blob URLs
        (attach, {"DOCBINDER_BLOB_URL": "not a url"}),
        (attach, {"DOCBINDER_BLOB_URL": "ftp://127.0.0.1/blobs"}),
        (attach, {"DOCBINDER_BLOB_URL": "file://remote.example/blobs"}),
        (attach, {"DOCBINDER_BLOB_URL": "s3://Bad_Bucket_Name"}),
        (attach, {"DOCBINDER_BLOB_URL": "s3://user:secret@bucket/x"}),
        (attach, {"DOCBINDER_BLOB_URL": "s3://bucket/../escape"}),
        # unknown authorizer, bad size limit
        (attach, {"DOCBINDER_AUTHORIZER": "no-such-authorizer"}),
        (attach, {"DOCBINDER_MAX_FILE_SIZE": "ten"}),
        (attach, {"DOCBINDER_MAX_FILE_SIZE": "-1"}),
        (attach, {"DOCBINDER_MAX_FILE_SIZE": "0"}),
        # the size limit itself
        (attach, {"DOCBINDER_MAX_FILE_SIZE": "4"}),
    ]


def test_bad_configuration_and_settings(home: Home, unchanged: None, tmp_path: Path) -> None:
    cases = _settings_cases(home, tmp_path)
    for args, env in cases:
        _assert_one_error_line(invoke_cli(args, env), [*args, repr(env)])
    LEDGER.hostile["CLI bad input"] += len(cases)


def test_config_file_that_is_not_utf8(home: Home, unchanged: None, tmp_path: Path) -> None:
    config = tmp_path / "binary.toml"
    config.write_bytes(b"\xff\xfe\x00garbage")
    args = home.args("--config", str(config), "files", "ls")
    _assert_one_error_line(invoke_cli(args), args)


def test_config_file_with_a_non_text_home(home: Home, unchanged: None, tmp_path: Path) -> None:
    config = tmp_path / "home.toml"
    config.write_text("home = 5\n", encoding="utf-8")
    args = ["--user", "alice", "--config", str(config), "files", "ls"]
    _assert_one_error_line(invoke_cli(args), args)
