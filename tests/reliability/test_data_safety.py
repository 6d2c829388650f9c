"""Never lose data (issue 13) through the real CLI: gc, files rm, doctor, S3 settings.

Each test is one of the issue's examples, run in-process with the real
``docbinder`` command against local disk and S3 (a moto server on 127.0.0.1).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.localdisk.blobs import ORIGIN_XATTR
from docbinder.adapters.s3 import S3BlobStore
from docbinder.adapters.s3.blobs import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_READ_TIMEOUT,
    worst_case_seconds,
)
from docbinder.application.steps.blob_rules import blob_key_for
from docbinder.config import Settings
from docbinder.container import build_binder
from docbinder.domain.errors import DatabaseCloned, StorageError
from docbinder.domain.model import Principal
from tests.reliability.harness import error_lines, files_under, invoke_cli

OLD = (1_000_000_000, 1_000_000_000)  # an mtime far outside any grace period
NO_GRACE = ("--grace", "0", "--below-grace-floor")
"""No grace period: these tests run gc only while nothing writes (S3 objects cannot be aged)."""


class Cli:
    """The CLI over one home directory, with optional extra environment."""

    def __init__(self, home: Path, env: dict[str, str] | None = None) -> None:
        self.home = home
        self.env = dict(env or {})

    def __call__(self, *args: str, env: dict[str, str] | None = None) -> Result:
        return invoke_cli(["--home", str(self.home), *args], {**self.env, **(env or {})})

    def ok(self, *args: str, env: dict[str, str] | None = None) -> Result:
        result = self(*args, env=env)
        assert result.exit_code == 0, (args, result.stdout, result.stderr, result.exception)
        return result

    def with_env(self, env: dict[str, str]) -> Cli:
        """The same CLI with ``env`` added to its environment."""
        return Cli(self.home, {**self.env, **env})

    def json(self, *args: str, env: dict[str, str] | None = None) -> Any:
        return json.loads(self.ok("--json", *args, env=env).stdout)

    def files(self, env: dict[str, str] | None = None) -> dict[str, bytes]:
        """Every FileItem of the configured blob store with its bytes (read through that store)."""
        store = self.json("gc", env=env)["storeId"]
        listed = self.json("files", "ls", "--limit", "100000", env=env)
        return {
            item["id"]: self.ok("files", "cat", item["id"], env=env).stdout_bytes
            for item in listed
            if item["blobStore"] == store
        }


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """The CLI with the inline tier off: these files' bytes are in the blob store, whose
    guards are under test (the inline tier has its own tests at the end)."""
    return Cli(tmp_path / "home", {"DOCBINDER_INLINE_BLOB_LIMIT": "0"})


@pytest.fixture
def inline_cli(tmp_path: Path) -> Cli:
    """The CLI with the shipped inline tier: small files' bytes in the metadata database."""
    return Cli(tmp_path / "home")


def _attach(cli: Cli, tmp_path: Path, name: str, data: bytes, workflow: str | None = None) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    args = ["attach", str(path)] + (["-w", workflow] if workflow else [])
    result = cli.json(*args)
    return str(result["fileId"])


# -- kind 1: gc treats "I cannot see it" as "it is garbage" ---------------------------


def test_gc_with_a_mistyped_blob_url_refuses_and_keeps_the_file(cli: Cli, tmp_path: Path) -> None:
    """The issue's example: ``--blob-url file:///wrong/place gc`` removed the FileItem."""
    workflow = cli.ok("workflow", "new").stdout.strip()
    file_id = _attach(cli, tmp_path, "a.txt", b"x\n", workflow)
    wrong = tmp_path / "wrong" / "place"

    dry = cli.ok("--blob-url", wrong.as_uri(), "gc")
    assert "dry run" in dry.stdout and "blob_url" in dry.stderr
    applied = cli("--blob-url", wrong.as_uri(), "gc", "--apply")
    assert applied.exit_code == 1
    [line] = error_lines(applied)
    assert line.startswith("error: gc refused") and "blob_url" in line
    forced = cli.json("--blob-url", wrong.as_uri(), "gc", "--apply", "--force")
    assert forced["orphanRows"] == [] and forced["markedRows"] == []  # no identity: no rows

    assert not wrong.exists()  # gc created nothing there
    assert cli.files() == {file_id: b"x\n"}
    assert cli.ok("resolve", "-w", workflow, f"file:{file_id}").exit_code == 0


def test_gc_never_creates_a_database(cli: Cli, tmp_path: Path) -> None:
    _attach(cli, tmp_path, "a.txt", b"a")
    missing = tmp_path / "typo" / "docbinder.db"
    for args in (["gc"], ["gc", "--apply", "--force"]):
        result = cli("--database-url", f"sqlite:///{missing}", *args)
        assert result.exit_code == 1
        [line] = error_lines(result)
        assert "does not exist" in line and "database_url" in line
    assert not missing.exists() and not missing.parent.exists()


def test_gc_never_migrates_a_database(cli: Cli, tmp_path: Path) -> None:
    import sqlite3

    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()  # exists, but no schema
    result = cli("--database-url", f"sqlite:///{empty}", "gc", "--apply")
    assert result.exit_code == 1 and "never migrates" in result.stderr
    with sqlite3.connect(empty) as conn:
        assert conn.execute("select count(*) from sqlite_master").fetchone() == (0,)


def test_gc_refuses_an_empty_database_facing_a_store_with_blobs(cli: Cli, tmp_path: Path) -> None:
    kept = _attach(cli, tmp_path, "a.txt", b"a")
    other_db = f"sqlite:///{tmp_path / 'other.db'}"
    cli.ok("--database-url", other_db, "migrate")
    refused = cli("--database-url", other_db, "gc", "--apply", *NO_GRACE)
    assert refused.exit_code == 1 and "database_url" in refused.stderr
    assert cli.files() == {kept: b"a"}
    forced = cli.ok("--database-url", other_db, "gc", "--apply", "--force", *NO_GRACE)
    assert "--force overrode" in forced.stderr and "database_url" in forced.stderr


class Store:
    """The blob store the CLI writes into (local disk under the home, or an S3 prefix), with
    raw access to its hidden files (identity, registrations) and to keys without marks."""

    def __init__(self, cli: Cli, kind: str, request: pytest.FixtureRequest) -> None:
        self.kind = kind
        self.cli = cli
        self.blobs: LocalDiskBlobStore | S3BlobStore
        if kind == "s3":
            self.bucket = request.getfixturevalue("s3_bucket")
            endpoint = request.getfixturevalue("s3_endpoint")
            cli.env = {
                **cli.env,
                "DOCBINDER_BLOB_URL": f"s3://{self.bucket}/blobs",
                "DOCBINDER_S3_ENDPOINT_URL": endpoint,
            }
            self.blobs = S3BlobStore(self.bucket, "blobs", endpoint_url=endpoint)
        else:
            self.root = cli.home / "blobs"
            self.blobs = LocalDiskBlobStore(self.root)

    def remove(self, name: str) -> None:
        """Remove a hidden file or folder (``.docbinder-store``, ``.docbinder-databases``)."""
        if isinstance(self.blobs, S3BlobStore):
            client = self.blobs.client
            listed = client.list_objects_v2(Bucket=self.bucket, Prefix=f"blobs/{name}")
            for item in listed.get("Contents", []):
                client.delete_object(Bucket=self.bucket, Key=item["Key"])
        elif (self.root / name).is_dir():
            shutil.rmtree(self.root / name)
        else:
            (self.root / name).unlink()

    def write(self, name: str, data: bytes, like: str | None = None) -> None:
        """Write ``name`` as something other than docbinder would: no mark, or the mark of
        the blob ``like`` copied onto it; an old mtime on local disk."""
        if isinstance(self.blobs, S3BlobStore):
            metadata = {}
            if like is not None:
                head = self.blobs.client.head_object(Bucket=self.bucket, Key=f"blobs/{like}")
                metadata = head["Metadata"]
            self.blobs.client.put_object(
                Bucket=self.bucket, Key=f"blobs/{name}", Body=data, Metadata=metadata
            )
            return
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if like is not None:
            mark = os.getxattr(self.root / like, ORIGIN_XATTR)
            os.setxattr(path, ORIGIN_XATTR, mark)
        os.utime(path, OLD)

    def copy(self, name: str) -> str:
        """Copy the whole store with its hidden files and marks (``cp -a``); return its URL."""
        if isinstance(self.blobs, S3BlobStore):
            client = self.blobs.client
            for item in client.list_objects_v2(Bucket=self.bucket, Prefix="blobs/")["Contents"]:
                client.copy_object(
                    Bucket=self.bucket,
                    Key=f"{name}/{item['Key'].removeprefix('blobs/')}",
                    CopySource={"Bucket": self.bucket, "Key": item["Key"]},
                )
            return f"s3://{self.bucket}/{name}"
        shutil.copytree(self.root, self.root.parent / name, copy_function=shutil.copy2)
        return (self.root.parent / name).as_uri()

    def leftover(self, env: dict[str, str] | None = None) -> str:
        """A blob this database wrote whose FileItem never committed (a crash's leftover)."""
        environ = {"DOCBINDER_HOME": str(self.cli.home), **self.cli.env, **(env or {})}
        binder = build_binder(Settings.load(environ=environ))
        binder.store_file.registration.ensure()
        key = blob_key_for(uuid.uuid4().hex)
        binder.blobs.put(key, [b"left behind"])
        return key


@pytest.fixture(params=["localdisk", "s3"])
def store(cli: Cli, request: pytest.FixtureRequest) -> Store:
    return Store(cli, request.param, request)


def test_gc_never_takes_another_databases_blobs_even_when_the_registrations_are_lost(
    cli: Cli, tmp_path: Path, store: Store
) -> None:
    """Two databases writing into one blob root or prefix. Each blob carries the database
    that wrote it, so gc of one takes only its own leftovers, also once the store's
    registrations (``.docbinder-databases``) were lost by a move or copy."""
    mine = [_attach(cli, tmp_path, f"f{n}.txt", bytes([65 + n])) for n in range(3)]
    other_db = ["--database-url", f"sqlite:///{tmp_path / 'other.db'}"]
    cli.ok(*other_db, "migrate")
    (tmp_path / "g.txt").write_bytes(b"theirs")
    theirs = cli.json(*other_db, "attach", str(tmp_path / "g.txt"))["fileId"]
    leftover = store.leftover()

    dry = cli.json("gc", "--grace", "0")
    assert dry["refusal"] is None and dry["orphanBlobs"] == [leftover]
    assert dry["otherDatabaseBlobs"] == 1
    # The other database's gc sees our blobs and our leftover as ours, never as its orphans.
    theirs_dry = cli.json(*other_db, "gc", "--grace", "0")
    assert theirs_dry["orphanBlobs"] == [] and theirs_dry["otherDatabaseBlobs"] == 4

    store.remove(".docbinder-databases")  # a copy of the store that left the folder out
    refused = cli("gc", "--apply", *NO_GRACE)
    assert refused.exit_code == 1
    [line] = error_lines(refused)
    assert ".docbinder-databases" in line and "nothing was removed" in line
    checks = {c["name"]: c for c in cli.json("doctor")["checks"]}
    assert ".docbinder-databases" in checks["blob store registration"]["detail"]

    # The next attach registers this database again, but not the other one: gc now
    # runs and still takes only the leftover this database wrote.
    mine.append(_attach(cli, tmp_path, "f9.txt", b"Z"))
    report = cli.json("gc", "--apply", *NO_GRACE)
    assert report["refusal"] is None and report["orphanBlobs"] == [leftover]
    if store.kind == "localdisk":
        # A compact mark (ADR 0036) names no database: with the other one no longer
        # registered, its blob cannot be told from a stranger's. Unproven: kept all the same.
        assert report["otherDatabaseBlobs"] == 0 and len(report["unprovenBlobs"]) == 1
    else:
        assert report["otherDatabaseBlobs"] == 1 and report["unprovenBlobs"] == []
    assert not store.blobs.exists(leftover)
    assert set(cli.files()) == set(mine)
    assert cli.ok(*other_db, "files", "cat", theirs).stdout_bytes == b"theirs"
    (tmp_path / "h.txt").write_bytes(b"theirs too")
    cli.json(*other_db, "attach", str(tmp_path / "h.txt"))
    theirs_report = cli.json(*other_db, "gc", "--apply", *NO_GRACE)
    assert theirs_report["orphanBlobs"] == [] and theirs_report["otherDatabaseBlobs"] == 4
    assert set(cli.files()) == set(mine)


def test_a_file_in_docbinders_layout_that_docbinder_did_not_write_is_never_removed(
    cli: Cli, tmp_path: Path, store: Store
) -> None:
    """A key docbinder could have issued (``ab/ab<id>``) is not proof: gc removes only
    blobs whose provenance mark this store wrote for this very key and database."""
    kept = _attach(cli, tmp_path, "a.txt", b"a")
    kept_key = next(iter(cli.json("files", "ls")))["blobKey"]
    leftover = store.leftover()
    plain = blob_key_for(uuid.uuid4().hex)  # somebody else's file, no mark
    worn = blob_key_for(uuid.uuid4().hex)  # a genuine mark copied onto another key
    store.write(plain, b"somebody else's")
    store.write(worn, b"somebody else's", like=kept_key)

    report = cli.json("gc", "--apply", *NO_GRACE)

    assert report["orphanBlobs"] == [leftover]
    assert sorted(report["unprovenBlobs"]) == sorted([plain, worn])
    assert store.blobs.exists(plain) and store.blobs.exists(worn)
    assert not store.blobs.exists(leftover)
    assert cli.files() == {kept: b"a"}
    shown = cli.ok("gc", *NO_GRACE[:2]).stdout
    assert "cannot prove it wrote" in shown and plain in shown


def test_a_deleted_store_identity_is_recognised_and_gc_refuses(
    cli: Cli, tmp_path: Path, store: Store
) -> None:
    """``.docbinder-store`` deleted: the rows of the old identity, whose blobs are plainly
    here, are not "another store's" forever: gc and doctor name what happened and how to
    put it back."""
    ids = [_attach(cli, tmp_path, f"f{n}.txt", bytes([65 + n])) for n in range(2)]
    old = cli.json("gc")["storeId"]
    store.remove(".docbinder-store")

    dry = cli.json("gc")
    assert dry["displacedRows"] == {old: 2}
    assert ".docbinder-store" in dry["refusal"] and old in dry["refusal"]
    refused = cli("gc", "--apply")
    assert refused.exit_code == 1
    [line] = error_lines(refused)
    assert ".docbinder-store" in line and f"write {old} into" in line
    checks = {c["name"]: c for c in cli.json("doctor")["checks"]}
    assert checks["blob store identity"]["status"] == "warn"
    assert old in checks["blob store identity"]["detail"]

    later = _attach(cli, tmp_path, "later.txt", b"L")  # the next write makes a new identity
    new = cli.json("gc")["storeId"]
    assert new != old and f"write {old} into" in cli("gc", "--apply").stderr

    store.remove(".docbinder-store")
    store.write(".docbinder-store", f"{old}\n".encode())  # put back as the message says
    restored = cli.json("gc")
    assert restored["storeId"] == old and restored["displacedRows"] == {new: 1}
    # --force runs gc without touching the rows of either identity.
    forced = cli.json("gc", "--apply", "--force")
    assert forced["forced"] is True and forced["orphanRows"] == [] and forced["markedRows"] == []
    assert forced["orphanBlobs"] == []
    contents = {i: cli.ok("files", "cat", i).stdout_bytes for i in [*ids, later]}
    assert contents == {ids[0]: b"A", ids[1]: b"B", later: b"L"}


def _copy_database(source: Path, target: Path) -> None:
    """``cp source target`` of a SQLite database whose last changes may still be in its WAL
    (the in-process CLI keeps its connections open): SQLite's online backup copies both."""
    import sqlite3

    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)


def _database_id(path: Path) -> str:
    import sqlite3

    with sqlite3.connect(path) as conn:
        [(value,)] = conn.execute("SELECT value FROM docbinder_meta WHERE name = 'database_id'")
    return str(value)


def test_a_copied_database_gets_its_own_id_and_neither_gc_takes_the_others_blobs(
    cli: Cli, tmp_path: Path, store: Store
) -> None:
    """``cp a.db b.db``, both writing into one store: the copy shared the database id, so
    ``gc --apply`` from a.db removed the blobs b.db stored since (marked with that id).
    The copy now gets its own id before its first write, and keeps the old one as former."""
    a = {"DOCBINDER_DATABASE_URL": f"sqlite:///{tmp_path / 'a.db'}"}
    b = {"DOCBINDER_DATABASE_URL": f"sqlite:///{tmp_path / 'b.db'}"}
    first = {_attach(cli.with_env(a), tmp_path, f"f{n}.txt", bytes([65 + n])) for n in range(3)}
    original = _database_id(tmp_path / "a.db")
    _copy_database(tmp_path / "a.db", tmp_path / "b.db")  # cp a.db b.db
    left_by_a = store.leftover(env=a)  # a.db's own crash leftover, marked with its id

    # Before its first write the copy's gc already takes no blob marked with a.db's id.
    pending = cli.json("gc", "--apply", *NO_GRACE, env=b)
    assert pending["databaseMoved"] is True and pending["formerDatabaseBlobs"] == 1
    assert pending["orphanBlobs"] == [] and store.blobs.exists(left_by_a)
    checks = {c["name"]: c["detail"] for c in cli.json("doctor", env=b)["checks"]}
    assert "copied or moved" in checks["database identity"]
    assert original in checks["database identity"]

    (tmp_path / "b.txt").write_bytes(b"only in b")
    only_b = cli.json("attach", str(tmp_path / "b.txt"), env=b)["fileId"]
    copy_id = _database_id(tmp_path / "b.db")
    assert copy_id != original and _database_id(tmp_path / "a.db") == original
    checks = {c["name"]: c["detail"] for c in cli.json("doctor", env=b)["checks"]}
    assert copy_id in checks["database identity"] and original in checks["database identity"]
    if isinstance(store.blobs, LocalDiskBlobStore):  # the aging step
        for path in store.root.rglob("*"):
            if path.is_file() and not path.name.startswith("."):
                os.utime(path, OLD)

    from_a = cli.json("gc", "--apply", *NO_GRACE, env=a)
    assert from_a["orphanBlobs"] == [left_by_a] and from_a["otherDatabaseBlobs"] == 1
    assert cli.files(env=b) == {**{i: cli.files(env=a)[i] for i in first}, only_b: b"only in b"}
    from_b = cli.json("gc", "--apply", *NO_GRACE, env=b)
    assert from_b["orphanBlobs"] == [] and from_b["refusal"] is None
    assert set(cli.files(env=a)) == first and set(cli.files(env=b)) == {*first, only_b}


def _append(cli: Cli, env: dict[str, str], file_id: str, data: bytes) -> None:
    """Append ``data`` to a FileItem as its creator, through the library (the CLI has no
    append command)."""
    [item] = [i for i in cli.json("files", "ls", env=env) if i["id"] == file_id]
    owner = Principal(item["createdBy"], "default", roles=("member",))
    environ = {"DOCBINDER_HOME": str(cli.home), **cli.env, **env}
    build_binder(Settings.load(environ=environ)).update_file.append(owner, file_id, data)


def test_rm_and_append_in_a_copied_database_keep_the_blobs_the_original_names(
    cli: Cli, tmp_path: Path, store: Store
) -> None:
    """``cp a.db b.db``, one store: both databases name the same blobs. ``files rm`` and an
    append in b.db removed the blob a.db still reads; a blob is now removed only when its
    mark names this database, so these are left for gc, which keeps them for a.db."""
    a = {"DOCBINDER_DATABASE_URL": f"sqlite:///{tmp_path / 'a.db'}"}
    b = {"DOCBINDER_DATABASE_URL": f"sqlite:///{tmp_path / 'b.db'}"}
    data = {n: f"file {n}".encode() for n in range(1, 5)}
    ids = {n: _attach(cli.with_env(a), tmp_path, f"f{n}.txt", data[n]) for n in data}
    _copy_database(tmp_path / "a.db", tmp_path / "b.db")  # cp a.db b.db

    assert cli.json("files", "rm", ids[2], env=b) == {"deleted": ids[2], "references": 0}
    _append(cli, b, ids[1], b" and more")

    assert cli.ok("files", "cat", ids[1], env=b).stdout_bytes == b"file 1 and more"
    assert cli.files(env=a) == {ids[n]: data[n] for n in data}
    # Neither gc takes what the other still names.
    for env in (b, a):
        assert cli.json("gc", "--apply", *NO_GRACE, env=env)["orphanBlobs"] == []
    assert cli.files(env=a) == {ids[n]: data[n] for n in data}
    assert cli.files(env=b) == {ids[1]: b"file 1 and more", ids[3]: data[3], ids[4]: data[4]}


def test_rm_and_append_in_one_database_still_free_the_old_blob(
    cli: Cli, tmp_path: Path, store: Store
) -> None:
    """The normal path: one database, its own marked blobs, freed at once (no gc needed)."""
    removed = _attach(cli, tmp_path, "r.txt", b"removed")
    grown = _attach(cli, tmp_path, "g.txt", b"grown")
    keys = {item["id"]: item["blobKey"] for item in cli.json("files", "ls")}
    assert store.blobs.exists(keys[removed]) and store.blobs.exists(keys[grown])

    cli.ok("files", "rm", removed)
    _append(cli, {}, grown, b" more")

    assert not store.blobs.exists(keys[removed])
    assert not store.blobs.exists(keys[grown])
    assert cli.files() == {grown: b"grown more"}


def test_gc_after_the_wrong_backup_restored_in_place_loses_no_file(
    cli: Cli, tmp_path: Path, store: Store
) -> None:
    """The wrong backup of the database restored in place (``sqlite3 live.db ".restore
    old.db"``: same file, same inode, so the same database id): the files stored after
    the backup looked like this database's orphan blobs and ``gc --apply`` deleted them,
    so restoring the right backup then found them gone. The store records each blob whose
    FileItem committed; gc keeps those and says why, and still removes a crash's leftover."""
    import sqlite3

    live = tmp_path / "live.db"
    env = {"DOCBINDER_DATABASE_URL": f"sqlite:///{live}"}
    cli = cli.with_env(env)
    first = {_attach(cli, tmp_path, f"f{n}.txt", bytes([65 + n])) for n in range(6)}
    _copy_database(live, tmp_path / "wrong.db")
    later = {_attach(cli, tmp_path, f"l{n}.txt", f"later {n}".encode()) for n in range(2)}
    everything = cli.files()
    later_keys = sorted(i["blobKey"] for i in cli.json("files", "ls") if i["id"] in later)
    leftover = store.leftover(env=env)
    _copy_database(live, tmp_path / "right.db")
    inode = live.stat().st_ino

    with sqlite3.connect(tmp_path / "wrong.db") as src, sqlite3.connect(live) as dst:
        src.backup(dst)  # restored in place
    assert live.stat().st_ino == inode and set(cli.files()) == first
    if isinstance(store.blobs, LocalDiskBlobStore):  # past the grace period
        for path in store.root.rglob("*"):
            if path.is_file() and not path.name.startswith("."):
                os.utime(path, OLD)
    report = cli.json("gc", "--apply", *NO_GRACE)
    assert report["orphanBlobs"] == [leftover] and report["committedBlobs"] == later_keys
    text = cli.ok("gc", *NO_GRACE).stdout
    assert "2 blob(s) this database committed are named by no FileItem" in text
    assert "restored from a backup or copied" in text and "database_url" in text

    with sqlite3.connect(tmp_path / "right.db") as src, sqlite3.connect(live) as dst:
        src.backup(dst)  # the right backup
    assert cli.files() == everything and not store.blobs.exists(leftover)


def test_gc_against_an_older_copy_of_the_store_refuses_and_loses_nothing(
    cli: Cli, tmp_path: Path, store: Store
) -> None:
    """A backup of the blob store (same identity) configured by mistake: the files stored
    since look blob-less there; two runs used to mark, then remove their FileItems, and
    a later gc on the real store their then orphaned blobs."""
    ids = [_attach(cli, tmp_path, f"f{n}.txt", bytes([65 + n])) for n in range(4)]
    backup = store.copy("backup")  # cp -a S S2
    newer = _attach(cli, tmp_path, "n.txt", b"newer")
    everything = cli.files()
    assert set(everything) == {*ids, newer}

    # The copy carries the store's identity but not its location (ADR 0030); --force
    # does not accept another location.
    for args in (NO_GRACE, NO_GRACE, (), ("--force", *NO_GRACE)):
        refused = cli("--blob-url", backup, "gc", "--apply", *args)
        assert refused.exit_code == 1
        [line] = error_lines(refused)
        assert line.startswith("error: gc refused") and "blob_url" in line
        assert "a copy, a backup or a moved store" in line and "store adopt" in line
    dry = cli.json("--blob-url", backup, "gc")
    assert dry["markedRows"] == [newer] and dry["storeMoved"] is True
    assert "a copy, a backup or a moved store" in dry["refusal"]
    detail = {c["name"]: c["detail"] for c in cli.json("--blob-url", backup, "doctor")["checks"]}
    assert "older copy" in detail["every FileItem has its blob"]
    assert "a copy, a backup or a moved store" in detail["blob store location"]

    for _round in range(2):
        report = cli.json("gc", "--apply", *NO_GRACE)
        assert report["orphanRows"] == [] and report["orphanBlobs"] == []
    assert cli.files() == everything


def test_gc_leaves_files_docbinder_never_wrote_on_local_disk(cli: Cli, tmp_path: Path) -> None:
    kept = _attach(cli, tmp_path, "a.txt", b"a")
    root = cli.home / "blobs"
    foreign = [root / "notes.txt", root / "2024" / "report.pdf", root / "ab" / "ab.cd.txt"]
    for path in foreign:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"not docbinder's")
        os.utime(path, OLD)
    report = cli.json("gc", "--apply")
    assert report["orphanBlobs"] == [] and report["otherKeys"] == 3
    assert all(path.read_bytes() == b"not docbinder's" for path in foreign)
    assert cli.files() == {kept: b"a"}


def test_gc_leaves_objects_docbinder_never_wrote_in_a_bucket(
    cli: Cli, tmp_path: Path, s3_bucket: str, s3_endpoint: str, s3_client: Any
) -> None:
    cli.env = {
        "DOCBINDER_BLOB_URL": f"s3://{s3_bucket}/blobs",
        "DOCBINDER_S3_ENDPOINT_URL": s3_endpoint,
    }
    kept = _attach(cli, tmp_path, "a.txt", b"a")
    foreign = ["blobs/notes.txt", "blobs/2024/report.pdf", "outside/zz/zz-elsewhere"]
    for key in foreign:
        s3_client.put_object(Bucket=s3_bucket, Key=key, Body=b"not docbinder's")
    report = cli.json("gc", "--apply", *NO_GRACE)
    assert report["orphanBlobs"] == [] and report["otherKeys"] == 2
    listed = {o["Key"] for o in s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"]}
    assert set(foreign) <= listed
    assert cli.files() == {kept: b"a"}


def test_readme_s3_walkthrough_then_gc_against_each_store_loses_nothing(
    cli: Cli, s3_bucket: str, s3_endpoint: str
) -> None:
    """The README's demo on local disk and its S3 section into the same default SQLite,
    then ``gc --apply`` against each store in turn, twice (mark, then sweep)."""
    s3 = {"DOCBINDER_BLOB_URL": f"s3://{s3_bucket}/blobs", "DOCBINDER_S3_ENDPOINT_URL": s3_endpoint}
    cli.ok("demo")
    local_files = cli.files()
    cli.ok("demo", env=s3)
    s3_files = cli.files(env=s3)
    assert local_files and s3_files and not set(local_files) & set(s3_files)
    everything = {**local_files, **s3_files}

    for _round in range(2):
        for env in (s3, {}):
            report = cli.json("gc", "--apply", *NO_GRACE, env=env)
            assert report["orphanRows"] == [] and report["markedRows"] == []
            assert report["orphanBlobs"] == [] and report["refusal"] is None
            assert sum(report["otherStoreRows"].values()) == len(
                s3_files if env == {} else local_files
            )
            checks = {c["name"]: c for c in cli.json("doctor", env=env)["checks"]}
            assert checks["every FileItem has its blob"]["status"] == "ok"
    assert {**cli.files(), **cli.files(env=s3)} == everything
    listed = {item["id"] for item in cli.json("files", "ls", "--limit", "100000")}
    assert listed == set(everything)


def test_one_gc_run_never_removes_a_row_and_more_than_half_is_refused(
    cli: Cli, tmp_path: Path
) -> None:
    ids = [_attach(cli, tmp_path, f"f{n}.txt", bytes([65 + n])) for n in range(7)]
    blobs = cli.home / "blobs"
    for file_id in ids[:4]:  # an operator removes the four oldest of seven blobs
        (blobs / file_id[:2] / file_id).unlink()

    refused = cli("gc", "--apply", *NO_GRACE)
    assert refused.exit_code == 1 and "4 of 7" in refused.stderr and "blob_url" in refused.stderr
    first = cli.json("gc", "--apply", "--force", *NO_GRACE)
    assert first["orphanRows"] == [] and sorted(first["markedRows"]) == sorted(ids[:4])
    assert first["forced"] is True
    assert len(cli.json("files", "ls")) == 7  # marked, not removed
    second = cli.json("gc", "--apply", "--force", *NO_GRACE)
    assert sorted(second["orphanRows"]) == sorted(ids[:4])
    assert cli.files() == {i: bytes([65 + n]) for n, i in enumerate(ids) if n >= 4}


def test_a_held_row_whose_blob_went_missing_is_marked_but_never_removed(
    cli: Cli, tmp_path: Path
) -> None:
    ids = [_attach(cli, tmp_path, f"h{n}.txt", bytes([65 + n])) for n in range(4)]
    cli.ok("retention", "hold", "--file", ids[0], "--reason", "evidence")
    (cli.home / "blobs" / ids[0][:2] / ids[0]).unlink()
    assert cli.json("gc", "--apply", *NO_GRACE)["markedRows"] == [ids[0]]
    second = cli.json("gc", "--apply", *NO_GRACE)
    assert second["orphanRows"] == []  # the hold keeps the row, bytes or not
    assert ids[0] in {item["id"] for item in cli.json("files", "ls")}


def test_a_mark_is_dropped_when_the_blob_comes_back(cli: Cli, tmp_path: Path) -> None:
    ids = [_attach(cli, tmp_path, f"f{n}.txt", bytes([65 + n])) for n in range(4)]
    path = cli.home / "blobs" / ids[0][:2] / ids[0]
    saved = path.read_bytes()
    path.unlink()
    assert cli.json("gc", "--apply", *NO_GRACE)["markedRows"] == [ids[0]]
    path.write_bytes(saved)  # restored from a backup
    again = cli.json("gc", "--apply", *NO_GRACE)
    assert again["orphanRows"] == [] and again["markedRows"] == []
    path.unlink()
    # A fresh mark: the old one was dropped, so this run cannot remove the row.
    third = cli.json("gc", "--apply", *NO_GRACE)
    assert third["orphanRows"] == [] and third["markedRows"] == [ids[0]]


def test_doctor_names_the_setting_and_never_recommends_a_removal(cli: Cli, tmp_path: Path) -> None:
    file_id = _attach(cli, tmp_path, "a.txt", b"a")
    (cli.home / "blobs" / file_id[:2] / file_id).unlink()
    checks = {c["name"]: c for c in cli.json("doctor")["checks"]}
    detail = checks["every FileItem has its blob"]["detail"]
    assert checks["every FileItem has its blob"]["status"] == "warn"
    assert "blob_url" in detail and "remove" not in detail and "--apply" not in detail
    wrong = cli.json("--blob-url", (tmp_path / "wrong").as_uri(), "doctor")
    named = {c["name"]: c["detail"] for c in wrong["checks"]}
    assert "blob_url" in named["blob store identity"]
    assert all("--apply" not in c["detail"] or "leftovers" in c["name"] for c in wrong["checks"])


def test_doctor_reports_leftover_temp_files_with_their_size(cli: Cli, tmp_path: Path) -> None:
    _attach(cli, tmp_path, "a.txt", b"a")
    temp = cli.home / "blobs" / "ab" / f".tmp-{'0' * 32}.part"
    temp.parent.mkdir(parents=True, exist_ok=True)
    temp.write_bytes(b"\0" * 300_000)  # what a killed attach leaves
    checks = {c["name"]: c for c in cli.json("doctor")["checks"]}
    leftovers = checks["leftovers of interrupted writes"]
    assert leftovers["status"] == "warn"
    assert "1 temp file(s), 300000 bytes" in leftovers["detail"]


def test_doctor_reports_unfinished_multipart_uploads_with_their_size(
    cli: Cli, s3_bucket: str, s3_endpoint: str, s3_client: Any
) -> None:
    cli.env = {
        "DOCBINDER_BLOB_URL": f"s3://{s3_bucket}/blobs",
        "DOCBINDER_S3_ENDPOINT_URL": s3_endpoint,
    }
    started = s3_client.create_multipart_upload(Bucket=s3_bucket, Key="blobs/ab/abandoned")
    s3_client.upload_part(
        Bucket=s3_bucket,
        Key="blobs/ab/abandoned",
        UploadId=started["UploadId"],
        PartNumber=1,
        Body=b"x" * (5 << 20),
    )
    checks = {c["name"]: c for c in cli.json("doctor")["checks"]}
    detail = checks["leftovers of interrupted writes"]["detail"]
    assert "1 unfinished multipart upload(s), 5242880 bytes" in detail


def test_an_s3_url_needs_a_prefix_or_the_whole_bucket_setting(
    cli: Cli, tmp_path: Path, s3_bucket: str, s3_endpoint: str
) -> None:
    cli.env = {"DOCBINDER_BLOB_URL": f"s3://{s3_bucket}", "DOCBINDER_S3_ENDPOINT_URL": s3_endpoint}
    (tmp_path / "a.txt").write_bytes(b"a")
    refused = cli("attach", str(tmp_path / "a.txt"))
    assert refused.exit_code == 1
    [line] = error_lines(refused)
    assert "no prefix" in line and "s3_whole_bucket" in line
    whole = cli.json("attach", str(tmp_path / "a.txt"), env={"DOCBINDER_S3_WHOLE_BUCKET": "true"})
    assert whole["file"]["blobStore"]


# -- kind 4: deleting a referenced file is never silent --------------------------------


def test_files_rm_of_a_referenced_file_needs_force_and_workflow_show_marks_it(
    cli: Cli, tmp_path: Path
) -> None:
    workflow = cli.ok("workflow", "new").stdout.strip()
    file_id = _attach(cli, tmp_path, "a.txt", b"a", workflow)
    loose = _attach(cli, tmp_path, "b.txt", b"b")

    refused = cli("files", "rm", file_id)
    assert refused.exit_code == 1
    [line] = error_lines(refused)
    assert "referred to by 1 document(s)" in line and "--force" in line
    assert file_id in cli.files()

    done = cli.ok("files", "rm", "--force", file_id)
    assert f"deleted {file_id}" in done.stdout
    assert "1 document(s)" in done.stderr and "file_missing" in done.stderr
    shown = cli.ok("workflow", "show", workflow).stdout
    assert "[file deleted: resolves as file_missing]" in shown
    [message] = cli.json("workflow", "show", workflow)["messages"]
    assert [d["fileDeleted"] for d in message["documents"]] == [True]
    assert [d["documentRef"] for d in message["documents"]] == [
        f"docItem:{d['id']}" for d in message["documents"]
    ]
    resolved = cli("--json", "resolve", "-w", workflow, f"file:{file_id}")
    assert resolved.exit_code == 1

    assert cli.json("files", "rm", loose) == {"deleted": loose, "references": 0}


# -- kind 6: a hung S3 endpoint fails an attach, naming the endpoint --------------------


@pytest.fixture
def hung_endpoint() -> Iterator[str]:
    """A loopback TCP server that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(5)
    for conn in accepted:
        conn.close()
    server.close()


def test_a_hung_s3_endpoint_fails_the_attach_and_names_the_endpoint(
    hung_endpoint: str, s3_env: None
) -> None:
    settings = Settings.load(
        {
            "database_url": "memory://",
            "blob_url": "s3://some-bucket/blobs",
            "s3_endpoint_url": hung_endpoint,
            "s3_connect_timeout": "0.5",
            "s3_read_timeout": "0.5",
            "s3_max_attempts": "2",
        },
        environ={},
    )
    binder = build_binder(settings)
    config = binder.blobs.client.meta.config  # type: ignore[attr-defined]
    assert (config.connect_timeout, config.read_timeout) == (0.5, 0.5)
    assert config.retries["total_max_attempts"] == 2
    run = binder.start_new_run(Principal("u1", "m1", roles=("member",)))
    with pytest.raises(StorageError) as caught:
        run.produce_file("a.txt", b"a")
    assert hung_endpoint in str(caught.value)


def test_the_default_s3_timeouts_fail_a_hung_request_within_30_seconds(s3_env: None) -> None:
    assert (
        worst_case_seconds(DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT, DEFAULT_MAX_ATTEMPTS)
        <= 30
    )
    store = S3BlobStore("some-bucket", "p", endpoint_url="http://127.0.0.1:1")
    config = store.client.meta.config
    assert (config.connect_timeout, config.read_timeout) == (
        DEFAULT_CONNECT_TIMEOUT,
        DEFAULT_READ_TIMEOUT,
    )
    assert config.retries == {"mode": "standard", "total_max_attempts": DEFAULT_MAX_ATTEMPTS}
    defaults = Settings.load({"database_url": "memory://"}, environ={})
    assert (defaults.s3_connect_timeout, defaults.s3_read_timeout, defaults.s3_max_attempts) == (
        DEFAULT_CONNECT_TIMEOUT,
        DEFAULT_READ_TIMEOUT,
        DEFAULT_MAX_ATTEMPTS,
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("s3_whole_bucket", "perhaps"),
        ("s3_connect_timeout", "0"),
        ("s3_read_timeout", "-1"),
        ("s3_read_timeout", "inf"),
        ("s3_connect_timeout", "soon"),
        ("s3_max_attempts", "0"),
        ("s3_max_attempts", "1.5"),
    ],
)
def test_bad_s3_settings_are_refused_naming_the_setting(name: str, value: str) -> None:
    from docbinder.domain.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match=name):
        Settings.load({"database_url": "memory://"}, environ={f"DOCBINDER_{name.upper()}": value})


def test_s3_settings_from_a_config_file(tmp_path: Path) -> None:
    config = tmp_path / "docbinder.toml"
    config.write_text(
        "s3_whole_bucket = true\ns3_connect_timeout = 2\ns3_read_timeout = 7.5\n"
        "s3_max_attempts = 3\n"
    )
    settings = Settings.load({"database_url": "memory://"}, environ={}, config_file=config)
    assert (
        settings.s3_whole_bucket,
        settings.s3_connect_timeout,
        settings.s3_read_timeout,
        settings.s3_max_attempts,
    ) == (True, 2.0, 7.5, 3)


# -- issue 31 kind 5: a volume clone keeps what its id is made of --------------------


@pytest.fixture
def cloned_volume(monkeypatch: pytest.MonkeyPatch) -> None:
    """A clone keeps the device and inode number the SQLite id's location is made of; here
    every database file reads as the one device and inode the original has."""
    from docbinder.adapters.sqlite import maintenance

    monkeypatch.setattr(maintenance, "sqlite_location", lambda _stat: "sqlite device 64 inode 9")


def _binder(cli: Cli, env: dict[str, str]) -> Any:
    return build_binder(Settings.load(environ={"DOCBINDER_HOME": str(cli.home), **cli.env, **env}))


OWNER = Principal("alice", "default", roles=("member",))


def test_a_volume_clone_cannot_free_the_originals_blobs(
    cli: Cli, tmp_path: Path, store: Store, cloned_volume: None
) -> None:
    """The issue's example: a database on a cloned volume, mounted elsewhere, with the one
    blob store. It keeps the id (same device and inode), so its ``files rm --force``, content
    updates and version deletes freed the original's blobs. The store's claim tells them
    apart: every such operation of the clone is refused, and its doctor names the clone."""
    a = {"DOCBINDER_DATABASE_URL": f"sqlite:///{tmp_path / 'a.db'}"}
    b = {"DOCBINDER_DATABASE_URL": f"sqlite:///{tmp_path / 'b.db'}"}
    ids = [_attach(cli.with_env(a), tmp_path, f"f{n}.txt", f"file {n}".encode()) for n in range(4)]
    _binder(cli, a).versions.save(OWNER, "notes.md", b"v1")
    cli.ok("files", "rm", ids[3], env=a)  # the original deletes: it claims its id
    _copy_database(tmp_path / "a.db", tmp_path / "b.db")  # the clone
    assert _database_id(tmp_path / "b.db") == _database_id(tmp_path / "a.db")
    _append(cli, a, ids[2], b" grown")  # the original works on after the clone was made

    for args in (("files", "rm", "--force", ids[0]), ("gc", "--apply", *NO_GRACE)):
        refused = cli(*args, env=b)
        assert refused.exit_code == 1, (args, refused.stdout)
        [line] = error_lines(refused)
        assert "refused: blob store" in line and "clone" in line, line
    clone = _binder(cli, b)
    with pytest.raises(DatabaseCloned):
        _append(cli, b, ids[1], b" from the clone")
    with pytest.raises(DatabaseCloned):
        clone.versions.delete(OWNER, "notes.md")
    assert "clone" in cli.json("gc", env=b)["refusal"]
    doctor = cli("--json", "doctor", env=b)
    assert doctor.exit_code == 1
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    claim = checks["database claim in the blob store"]
    assert claim["status"] == "fail" and "clone" in claim["detail"]

    expected = {ids[0]: b"file 0", ids[1]: b"file 1", ids[2]: b"file 2 grown"}
    held = cli.files(env=a)
    assert {i: held[i] for i in ids[:3]} == expected and ids[3] not in held
    # the clone still reads what both name; its copy of f2 names the blob the append freed
    assert cli.ok("files", "cat", ids[1], env=b).stdout_bytes == b"file 1"
    original = _binder(cli, a)
    assert original.versions.read(OWNER, original.versions.latest(OWNER, "notes.md")) == b"v1"
    checks = {c["name"]: c for c in cli.json("doctor", env=a)["checks"]}
    assert checks["database claim in the blob store"]["status"] == "ok"
    cli.ok("files", "rm", "--force", ids[0], env=a)  # the original keeps its rights


def test_a_clone_that_deletes_first_is_named_by_the_originals_doctor(
    cli: Cli, tmp_path: Path, store: Store, cloned_volume: None
) -> None:
    """Nothing tells two identical databases apart before one of them acts: the clone's
    first delete after the split goes through. From then on the original is refused, and
    its doctor names the clone beside the missing blob instead of blaming only blob_url."""
    a = {"DOCBINDER_DATABASE_URL": f"sqlite:///{tmp_path / 'a.db'}"}
    b = {"DOCBINDER_DATABASE_URL": f"sqlite:///{tmp_path / 'b.db'}"}
    ids = [_attach(cli.with_env(a), tmp_path, f"f{n}.txt", f"file {n}".encode()) for n in range(3)]
    cli.ok("files", "rm", ids[2], env=a)
    _copy_database(tmp_path / "a.db", tmp_path / "b.db")

    cli.ok("files", "rm", "--force", ids[0], env=b)  # the clone acts first
    refused = cli("files", "rm", "--force", ids[1], env=a)
    assert refused.exit_code == 1
    [line] = error_lines(refused)
    assert "clone" in line and ".docbinder-claims/" in line
    doctor = cli("--json", "doctor", env=a)
    assert doctor.exit_code == 1
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["database claim in the blob store"]["status"] == "fail"
    assert "clone" in checks["database claim in the blob store"]["detail"]
    assert cli.ok("files", "cat", ids[1], env=a).stdout_bytes == b"file 1"  # refused: kept
    lost = cli("files", "cat", ids[0], env=a)  # what the clone's one delete freed
    assert lost.exit_code == 1 and "is missing" in error_lines(lost)[0]
    presence = [c for c in json.loads(doctor.stdout)["checks"] if "has its blob" in c["name"]]
    assert any("clone" in c["detail"] for c in presence), presence
    # The clone is retired; the operator tells the original it is the only one again.
    (tmp_path / "b.db").unlink()
    assert cli.json("store", "claim", env=a)["databaseId"] == _database_id(tmp_path / "a.db")
    cli.ok("files", "rm", "--force", ids[1], env=a)


def test_concurrent_deletes_of_one_database_never_take_it_for_a_clone(
    cli: Cli, tmp_path: Path, store: Store
) -> None:
    """Every delete rotates the claim; eight threads of one database deleting and
    appending at once must never see one another's rotation as a clone's."""
    from concurrent.futures import ThreadPoolExecutor

    ids = [_attach(cli, tmp_path, f"c{n}.txt", f"c {n}".encode()) for n in range(16)]
    binder = _binder(cli, {})
    [item] = [i for i in cli.json("files", "ls") if i["id"] == ids[0]]
    owner = Principal(item["createdBy"], "default", roles=("member",))

    def work(n: int) -> str:
        if n % 2:
            binder.update_file.append(owner, ids[n], b" more")
        else:
            binder.delete_file(owner, ids[n], force=True)
        return ids[n]

    with ThreadPoolExecutor(8) as pool:
        done = list(pool.map(work, range(16)))
    assert done == ids
    files = cli.files()
    assert files == {ids[n]: f"c {n} more".encode() for n in range(1, 16, 2)}
    checks = {c["name"]: c for c in cli.json("doctor")["checks"]}
    assert checks["database claim in the blob store"]["status"] == "ok"


def test_a_claim_written_late_by_another_process_of_the_database_is_still_its_own(
    cli: Cli, tmp_path: Path, store: Store
) -> None:
    """Processes of one database rotate the claim and write the store in any order: a store
    write delayed past several rotations leaves an older token of this database in the store,
    which is no clone's (ADR 0075 addendum); a token the database never made still is."""
    from docbinder.domain.errors import DatabaseCloned

    ids = [_attach(cli, tmp_path, f"l{n}.txt", f"l {n}".encode()) for n in range(6)]
    binder = _binder(cli, {})
    [item] = [i for i in cli.json("files", "ls") if i["id"] == ids[0]]
    owner = Principal(item["createdBy"], "default", roles=("member",))
    binder.delete_file(owner, ids[0], force=True)
    with binder.uow_factory() as uow:
        database_id = uow.maintenance.database_id()
        late = uow.maintenance.database_claims()[0]
    assert database_id is not None
    for file_id in ids[1:4]:  # three more rotations by "other processes"
        binder.delete_file(owner, file_id, force=True)
    binder.blobs.set_database_claim(database_id, late)  # the first one's write lands last
    binder.delete_file(owner, ids[4], force=True)  # not taken for a clone
    binder.blobs.set_database_claim(database_id, "f" * 32)  # a token this database never made
    with pytest.raises(DatabaseCloned):
        binder.delete_file(owner, ids[5], force=True)
    assert set(cli.files()) == {ids[5]}


def test_a_gc_pass_with_nothing_to_free_leaves_the_claim_as_it_is(
    cli: Cli, tmp_path: Path, store: Store
) -> None:
    """An idle ``gc --apply`` loop must not outrun the tokens the database keeps (ADR 0075)."""
    ids = [_attach(cli, tmp_path, f"i{n}.txt", f"i {n}".encode()) for n in range(3)]
    binder = _binder(cli, {})
    [item] = [i for i in cli.json("files", "ls") if i["id"] == ids[0]]
    binder.delete_file(
        Principal(item["createdBy"], "default", roles=("member",)), ids[0], force=True
    )
    with binder.uow_factory() as uow:
        before = uow.maintenance.database_claims()
    for _ in range(3):
        cli.json("gc", "--apply", *NO_GRACE)
    with binder.uow_factory() as uow:
        assert uow.maintenance.database_claims() == before


# -- the inline tier (ADR 0110): small files' bytes live in the metadata database


def test_gc_with_a_mistyped_blob_url_keeps_an_inline_file(inline_cli: Cli, tmp_path: Path) -> None:
    cli = inline_cli
    workflow = cli.ok("workflow", "new").stdout.strip()
    file_id = _attach(cli, tmp_path, "a.txt", b"x\n", workflow)
    wrong = tmp_path / "wrong" / "place"
    dry = cli.ok("--blob-url", wrong.as_uri(), "gc")
    assert "blob_url" in dry.stderr  # the inline blob is no evidence for the wrong store
    applied = cli("--blob-url", wrong.as_uri(), "gc", "--apply")
    assert applied.exit_code == 1 and "blob_url" in applied.stderr
    forced = cli.json("--blob-url", wrong.as_uri(), "gc", "--apply", "--force")
    assert forced["orphanRows"] == [] and forced["orphanBlobs"] == []
    assert not wrong.exists()
    assert cli.files() == {file_id: b"x\n"}
    assert cli.json("gc")["inlineBlobs"] == 1


def test_gc_of_another_database_never_reaches_inline_files(inline_cli: Cli, tmp_path: Path) -> None:
    cli = inline_cli
    kept = _attach(cli, tmp_path, "a.txt", b"a")
    other_db = f"sqlite:///{tmp_path / 'other.db'}"
    cli.ok("--database-url", other_db, "migrate")
    done = cli.json("--database-url", other_db, "gc", "--apply", "--force", *NO_GRACE)
    assert done["orphanBlobs"] == [] and done["inlineBlobs"] == 0
    assert cli.files() == {kept: b"a"}
    # The blob store holds no file of it: the bytes are in the database with their row.
    assert files_under(tmp_path / "home" / "blobs") == []


def test_files_rm_removes_the_inline_bytes(inline_cli: Cli, tmp_path: Path) -> None:
    cli = inline_cli
    file_id = _attach(cli, tmp_path, "a.txt", b"gone soon")
    assert cli.json("gc")["inlineBlobs"] == 1
    cli.ok("files", "rm", file_id, "--force")
    report = cli.json("gc")
    assert report["inlineBlobs"] == 0 and report["orphanBlobs"] == []
