"""A blob store's location (ADR 0030): a copy of the store is never taken for the store.

A copy of the blob store (``cp -a`` of the blob root, a restored backup or
snapshot, ``aws s3 sync`` into another prefix) carries the store's identity.
Configured by mistake, ``gc`` used to mark, then remove, the FileItems whose
newer blobs the copy lacks. These run the real CLI on local disk and S3 (a
moto server), and the library on memory, SQLite, PostgreSQL and MariaDB.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.s3 import S3BlobStore
from docbinder.application.steps.store_registration import AdoptStoreLocation
from docbinder.application.use_cases.collect_garbage import MIN_GRACE_SECONDS
from docbinder.domain.errors import StoreMoved, UnsafeOperation
from docbinder.domain.model import Principal
from docbinder.ports.blobs import BlobStore, LocatingBlobStore
from docbinder.ports.metadata import UnitOfWorkFactory
from tests.contract.sql_backends import binder_over, provision
from tests.reliability.harness import error_lines, make_binder
from tests.reliability.test_data_safety import NO_GRACE, Cli, Store, _append, _attach
from tests.wiring import BlobStoreWrapper

MOVED = "a copy, a backup or a moved store"
"""The words every refusal for another location uses."""

U1 = Principal("u1", "m1", "f1", roles=("member",))


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """The CLI with the inline tier off: the files' bytes are in the copies of the blob store
    these tests make (small files kept in the database do not move with a store)."""
    return Cli(tmp_path / "home", {"DOCBINDER_INLINE_BLOB_LIMIT": "0"})


@pytest.fixture(params=["localdisk", "s3"])
def store(cli: Cli, request: pytest.FixtureRequest) -> Store:
    return Store(cli, request.param, request)


def _keys(cli: Cli) -> dict[str, str]:
    return {item["id"]: item["blobKey"] for item in cli.json("files", "ls")}


def _in_copy(store: Store, name: str) -> BlobStore:
    """A store object over the copy ``name`` made by :meth:`Store.copy`."""
    if isinstance(store.blobs, S3BlobStore):
        return S3BlobStore(
            store.bucket, name, endpoint_url=store.blobs.endpoint_url, client=store.blobs.client
        )
    return LocalDiskBlobStore(store.root.parent / name)


def _retire(store: Store) -> None:
    """Remove the original store entirely (the old place of a store that was moved)."""
    if isinstance(store.blobs, S3BlobStore):
        client = store.blobs.client
        for item in client.list_objects_v2(Bucket=store.bucket, Prefix="blobs/")["Contents"]:
            client.delete_object(Bucket=store.bucket, Key=item["Key"])
    else:
        shutil.rmtree(store.root)


def _refused(result: object, *words: str) -> str:
    """The one ``error:`` line of a refused command, checked for ``words``."""
    assert getattr(result, "exit_code", None) == 1
    [line] = [x for x in error_lines(result) if not x.startswith("note: ")]  # type: ignore[arg-type]
    for word in words:
        assert word in line, (word, line)
    return line


# -- F3: gc against a copy that lacks only some later blobs ----------------------------


@pytest.mark.parametrize("lacking", ["content update", "file written during the copy"])
def test_gc_in_a_copy_that_lacks_only_later_blobs_refuses_and_loses_nothing(
    cli: Cli, tmp_path: Path, store: Store, lacking: str
) -> None:
    """The copy holds the blobs of the newest FileItems, so the newest-rows guard passes;
    it lacks the blob of a content update (replace/append) made after the copy, or of a
    file written to the original while the copy was being made. Two ``gc --apply`` runs
    past the grace period used to mark and then remove that FileItem."""
    ids = [_attach(cli, tmp_path, f"f{n}.txt", bytes([65 + n])) for n in range(5)]
    backup = store.copy("backup")  # cp -a / aws s3 sync
    if lacking == "content update":
        _append(cli, {}, ids[0], b" and more")  # the new blob is only in the original
    else:
        # The copy walked past the directory before this blob landed there.
        _in_copy(store, "backup").delete(_keys(cli)[ids[1]])
    everything = cli.files()

    for args in (NO_GRACE, NO_GRACE, ("--force", *NO_GRACE)):
        line = _refused(
            cli("--blob-url", backup, "gc", "--apply", *args),
            "gc refused",
            MOVED,
            "DOCBINDER_BLOB_URL",
            "store adopt",
            "nothing was marked or removed",
        )
        assert line.startswith("error: ")
    dry = cli.json("--blob-url", backup, "gc", "--grace", "0")
    assert dry["storeMoved"] is True and MOVED in dry["refusal"]

    # Nothing was marked: gc on the real store finds every blob and removes nothing.
    report = cli.json("gc", "--apply", *NO_GRACE)
    assert report["locationChecked"] is True and report["refusal"] is None
    assert report["markedRows"] == [] and report["orphanRows"] == []
    assert cli.files() == everything
    assert b"".join(cli.files().values()).count(b"and more") == (lacking == "content update")


def test_doctor_names_the_copy_and_recommends_nothing_destructive(
    cli: Cli, tmp_path: Path, store: Store
) -> None:
    _attach(cli, tmp_path, "a.txt", b"a")
    backup = store.copy("backup")
    checks = {c["name"]: c for c in cli.json("--blob-url", backup, "doctor")["checks"]}
    found = checks["blob store location"]
    assert found["status"] == "warn" and MOVED in found["detail"]
    assert "blob_url" in found["detail"] and "--apply" not in found["detail"]
    assert "rm" not in found["detail"].split()
    here = {c["name"]: c for c in cli.json("doctor")["checks"]}["blob store location"]
    assert here["status"] == "ok" and "is where this database wrote" in here["detail"]


def test_writes_into_a_copy_are_refused_and_deletes_there_free_no_blob(
    cli: Cli, tmp_path: Path, store: Store
) -> None:
    """A file stored into a copy would be named by a row whose blob exists only in the
    copy (which its owner may delete as an old backup): refused before anything is
    written. A delete through the copy removes the row but never a blob of the copy."""
    ids = [_attach(cli, tmp_path, f"f{n}.txt", bytes([65 + n])) for n in range(2)]
    keys = _keys(cli)
    backup = store.copy("backup")
    copy = _in_copy(store, "backup")
    before = sorted(copy.keys())
    (tmp_path / "new.txt").write_bytes(b"new")

    _refused(
        cli("--blob-url", backup, "attach", str(tmp_path / "new.txt")),
        "write refused",
        MOVED,
        "blob_url",
    )
    with pytest.raises(StoreMoved, match="blob_url"):
        _append(cli, {"DOCBINDER_BLOB_URL": backup}, ids[0], b" more")
    assert sorted(copy.keys()) == before  # nothing written into the copy

    cli.ok("--blob-url", backup, "files", "rm", ids[1])
    assert copy.exists(keys[ids[1]])  # left for the copy's owner, never freed here
    assert cli.files() == {ids[0]: b"A"}


# -- legitimate moves -----------------------------------------------------------------


def test_a_store_moved_with_mv_on_one_file_system_keeps_working(cli: Cli, tmp_path: Path) -> None:
    ids = [_attach(cli, tmp_path, f"f{n}.txt", bytes([65 + n])) for n in range(3)]
    keys = _keys(cli)
    root = cli.home / "blobs"
    moved = tmp_path / "moved-blobs"
    os.rename(root, moved)  # mv: the same directories, another path
    there = cli.with_env({"DOCBINDER_BLOB_URL": moved.as_uri()})

    later = _attach(there, tmp_path, "later.txt", b"L")
    report = there.json("gc", "--apply", *NO_GRACE)
    assert report["locationChecked"] is True and report["refusal"] is None
    assert report["markedRows"] == [] and report["orphanRows"] == []
    there.ok("files", "rm", ids[0])
    assert not LocalDiskBlobStore(moved).exists(keys[ids[0]])  # freed: provably this store
    assert there.files() == {ids[1]: b"B", ids[2]: b"C", later: b"L"}
    checks = {c["name"]: c for c in there.json("doctor")["checks"]}
    assert checks["blob store location"]["status"] == "ok"


def test_a_store_moved_by_copying_is_accepted_with_store_adopt(
    cli: Cli, tmp_path: Path, store: Store
) -> None:
    """Copied to a new disk or prefix on purpose and the old place retired: refused until
    ``docbinder store adopt``, then everything works there (``--force`` never adopts)."""
    ids = [_attach(cli, tmp_path, f"f{n}.txt", bytes([65 + n])) for n in range(3)]
    keys = _keys(cli)
    target = store.copy("new-home")
    _retire(store)
    there = cli.with_env({"DOCBINDER_BLOB_URL": target})
    (tmp_path / "x.txt").write_bytes(b"x")

    _refused(there("attach", str(tmp_path / "x.txt")), MOVED)
    _refused(there("gc", "--apply", "--force", *NO_GRACE), MOVED, "--force does not")

    adopted = there.json("store", "adopt")
    assert adopted["previous"] and adopted["previous"] != adopted["location"]
    assert adopted["missingBlobs"] == 0
    assert "already" in there.ok("store", "adopt").stdout  # idempotent

    later = _attach(there, tmp_path, "later.txt", b"L")
    report = there.json("gc", "--apply", *NO_GRACE)
    assert report["locationChecked"] is True and report["orphanRows"] == []
    there.ok("files", "rm", ids[0])
    assert not _in_copy(store, "new-home").exists(keys[ids[0]])
    assert there.files() == {ids[1]: b"B", ids[2]: b"C", later: b"L"}


def test_store_adopt_refuses_an_older_copy_unless_forced(cli: Cli, tmp_path: Path) -> None:
    """Adopting a stale backup would re-arm gc against it: refused while FileItems of the
    store have no blob there. Forced, the copy becomes the store: the original is then the
    one refused, and in the copy the newest-rows guard still keeps the newer file."""
    ids = [_attach(cli, tmp_path, f"f{n}.txt", bytes([65 + n])) for n in range(3)]
    backup = Store(cli, "localdisk", None).copy("backup")  # type: ignore[arg-type]
    newer = _attach(cli, tmp_path, "newer.txt", b"N")

    _refused(cli("--blob-url", backup, "store", "adopt"), "1 of 4", "DOCBINDER_BLOB_URL", "--force")
    forced = cli.json("--blob-url", backup, "store", "adopt", "--force")
    assert forced["missingBlobs"] == 1

    _refused(cli("gc", "--apply", *NO_GRACE), MOVED)
    _refused(cli("--blob-url", backup, "gc", "--apply", *NO_GRACE), newer, "older copy")
    cli.json("store", "adopt")  # back to the original
    assert cli.files() == {ids[0]: b"A", ids[1]: b"B", ids[2]: b"C", newer: b"N"}


# -- library level: memory, SQL backends, a store without location --------------------


def _memory_copy(source: MemoryBlobStore) -> MemoryBlobStore:
    """Another memory store holding the same blobs under the same identity (a snapshot)."""
    copy = MemoryBlobStore()
    for key in source.keys():
        with source.open(key) as chunks:
            copy.put(key, [b"".join(chunks)])
    copy._identity = source.identity()  # the copy carries the identity
    for database_id in source.databases():
        copy.register_database(database_id)
    return copy


def test_memory_gc_in_a_copy_refuses_and_writes_there_are_refused(
    memory_uow: UnitOfWorkFactory,
) -> None:
    uow = memory_uow
    blobs = MemoryBlobStore()
    binder = make_binder(uow, blobs)
    items = [binder.start_run(U1).store_file(f"f{n}.txt", bytes([n])).item for n in range(5)]
    copy = _memory_copy(blobs)
    binder.update_file.append(U1, items[0].id, b"more")  # only in the original

    in_copy = make_binder(uow, copy)
    for _ in range(2):
        with pytest.raises(StoreMoved, match="DOCBINDER_BLOB_URL"):
            in_copy.collect_garbage(
                dry_run=False, grace_seconds=0, allow_short_grace=True, force=True
            )
    with pytest.raises(StoreMoved):
        in_copy.start_run(U1).store_file("new.txt", b"new")
    report = binder.collect_garbage(dry_run=False, grace_seconds=0, allow_short_grace=True)
    assert report.location_checked and report.marked_rows == () and report.orphan_rows == ()
    assert b"".join(binder.open_file(U1, items[0].id)) == bytes([0]) + b"more"


@pytest.fixture
def memory_uow() -> UnitOfWorkFactory:
    return MemoryMetadataStore().unit_of_work


@pytest.mark.parametrize("backend", ["sqlite", "postgresql", "mariadb"])
def test_gc_in_a_copied_blob_root_refuses_on_every_sql_backend(
    backend: str, tmp_path: Path
) -> None:
    """The F3 reproduction on each metadata backend: the location is recorded in its
    ``docbinder_meta``; ``store adopt`` replaces it, after which the copy is the store."""
    root, copied = tmp_path / "blobs", tmp_path / "copy"
    with provision(backend, tmp_path) as db:
        binder = binder_over(db.store, LocalDiskBlobStore(root))
        items = [binder.start_run(U1).store_file(f"f{n}.txt", bytes([n])).item for n in range(5)]
        shutil.copytree(root, copied, copy_function=shutil.copy2)  # cp -a
        binder.update_file.append(U1, items[0].id, b"more")
        with db.store.read_unit_of_work() as uow:
            [(store_id, recorded)] = uow.maintenance.store_locations().items()
        assert store_id == items[0].blob_store

        in_copy = binder_over(db.store, LocalDiskBlobStore(copied))
        for _ in range(2):
            with pytest.raises(StoreMoved):
                in_copy.collect_garbage(dry_run=False, grace_seconds=MIN_GRACE_SECONDS, force=True)
        with db.store.read_unit_of_work() as uow:
            assert uow.maintenance.marks() == {}
            assert len(list(uow.maintenance.iter_files())) == 5

        with pytest.raises(UnsafeOperation, match="1 of 5"):
            AdoptStoreLocation(db.store.unit_of_work, LocalDiskBlobStore(copied))()
        adopted = AdoptStoreLocation(db.store.unit_of_work, LocalDiskBlobStore(copied))(force=True)
        assert adopted.previous == recorded and adopted.location != recorded
        with db.store.read_unit_of_work() as uow:
            assert uow.maintenance.store_locations() == {store_id: adopted.location}


class _Unlocated(BlobStoreWrapper):
    """A third-party blob store without ``location``: the port as it was before ADR 0030."""


def test_a_store_without_location_keeps_the_guards_it_had(
    memory_uow: UnitOfWorkFactory,
) -> None:
    """No location: writes and deletes work as before, and gc in an older copy is held
    back by its other guards only (here the newest FileItems' missing blobs)."""
    uow = memory_uow
    original = _Unlocated(MemoryBlobStore())
    assert not isinstance(original, LocatingBlobStore)
    binder = make_binder(uow, original)  # type: ignore[arg-type]
    items = [binder.start_run(U1).store_file(f"f{n}.txt", bytes([n])).item for n in range(4)]
    binder.delete_file(U1, items[0].id)
    assert not original.exists(items[0].blob_key)  # freed as before
    copy = _Unlocated(_memory_copy(original.inner))
    newer = binder.start_run(U1).store_file("newer.txt", b"N").item

    in_copy = make_binder(uow, copy)
    with pytest.raises(UnsafeOperation, match="older copy") as refused:
        in_copy.collect_garbage(dry_run=False, grace_seconds=0, allow_short_grace=True)
    assert not isinstance(refused.value, StoreMoved) and newer.id in str(refused.value)
    report = in_copy.collect_garbage(dry_run=True, grace_seconds=0)
    assert not report.location_checked and not report.store_moved


def test_a_backup_restored_over_the_removed_root_is_not_the_store(tmp_path: Path) -> None:
    """The usual restore of a directory: remove it, copy the backup back under its name.
    The file system may hand the new ``.docbinder-location`` the inode number the removed
    one had (ext4 often does in the same parent directory); the change time, which a
    copy cannot keep, still tells them apart. Tried up to ten times."""
    for attempt in range(10):
        root = tmp_path / f"blobs{attempt}"
        store = LocalDiskBlobStore(root)
        store.put("ab/abcdef", [b"x"])
        original = store.location(create=True)
        inode = (root / ".docbinder-location").stat().st_ino
        backup = tmp_path / f"backup{attempt}"
        subprocess.run(["cp", "-a", str(root), str(backup)], check=True)
        subprocess.run(["rm", "-rf", str(root)], check=True)
        subprocess.run(["cp", "-a", str(backup), str(root)], check=True)
        if (root / ".docbinder-location").stat().st_ino == inode:
            assert LocalDiskBlobStore(root).location() != original
            return
    pytest.skip("this file system gave each restored directory a new inode number")
