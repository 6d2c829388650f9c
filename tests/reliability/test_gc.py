"""``gc`` never removes live data: races between its scan and writers (SPEC section 5, C15)."""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.localdisk.blobs import ORIGIN_XATTR
from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.s3 import S3BlobStore
from docbinder.application import DocBinder
from docbinder.application.steps.blob_rules import blob_key_for
from docbinder.application.use_cases.collect_garbage import MIN_GRACE_SECONDS, GcReport
from docbinder.domain.errors import UnsafeOperation
from docbinder.domain.model import Principal
from docbinder.ports.blobs import BlobStat, BlobStore, blob_origin, compact_blob_origin
from docbinder.ports.metadata import UnitOfWorkFactory
from tests.contract.sql_backends import SqlBackend, binder_over, provision
from tests.reliability.harness import (
    LEDGER,
    check_consistent,
    error_lines,
    invoke_cli,
    make_binder,
)
from tests.wiring import UnitOfWorkWrapper, wire_binder

U1 = Principal("u1", "m1", "f1", roles=("member",))


class _UpdateDuringScan:
    """A blob store that runs ``action`` right after gc listed its keys."""

    def __init__(self, inner: BlobStore) -> None:
        self.inner = inner
        self.key: str | None = None
        self.action: list[object] = []
        self.fired = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def keys(self) -> Iterator[str]:
        yield from list(self.inner.keys())
        if self.action:
            self.action.pop()()  # type: ignore[operator]
            self.fired += 1


@pytest.fixture(params=["memory", "sqlite+localdisk"])
def stack(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[UnitOfWorkFactory, BlobStore]]:
    if request.param == "memory":
        yield MemoryMetadataStore().unit_of_work, MemoryBlobStore()
        return
    backend: SqlBackend
    with provision("sqlite", tmp_path) as backend:
        yield backend.store.unit_of_work, LocalDiskBlobStore(tmp_path / "blobs")


class _PausingBlobs:
    """A blob store whose ``put`` sets ``written`` after writing, then waits for ``resume``."""

    def __init__(self, inner: BlobStore, written: threading.Event, resume: threading.Event) -> None:
        self.inner = inner
        self._written = written
        self._resume = resume

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def put(self, key: str, data: object) -> int:
        size = self.inner.put(key, data)  # type: ignore[arg-type]
        self._written.set()
        assert self._resume.wait(60), "gc never let the store go on"
        return size


def test_gc_keeps_a_file_whose_content_was_replaced_during_its_scan(
    stack: tuple[UnitOfWorkFactory, BlobStore],
) -> None:
    """The listing saw the old blob key; an update then switched the row to a new blob
    (not listed) and removed the old one.

    The row is live data: gc must not remove it as "FileItem without blob", nor
    its new blob as an orphan, even with no grace period.
    """
    uow_factory, blobs = stack
    racy = _UpdateDuringScan(blobs)
    binder = make_binder(uow_factory, racy)  # type: ignore[arg-type]
    writer = make_binder(uow_factory, blobs)
    item = binder.start_run(U1).store_file("notes.md", b"# v1\n").item
    racy.key = item.blob_key
    racy.action.append(lambda: writer.update_file.replace(U1, item.id, b"# v2\n"))

    # No grace period: no store runs here, only the one update the test makes.
    report = binder.collect_garbage(dry_run=False, grace_seconds=0, allow_short_grace=True)

    assert racy.fired == 1
    LEDGER.injected["gc.scan-vs-update"] += 1
    assert report.orphan_rows == () and report.marked_rows == () and report.orphan_blobs == ()
    current = binder.get_file(U1, item.id)
    assert current.blob_key != item.blob_key
    with binder.open_file(U1, item.id) as chunks:
        assert b"".join(chunks) == b"# v2\n"
    check_consistent(uow_factory, blobs)
    LEDGER.survived["gc.scan-vs-update"] += 1


def test_gc_still_removes_a_row_whose_blob_is_really_gone(
    stack: tuple[UnitOfWorkFactory, BlobStore],
) -> None:
    uow_factory, blobs = stack
    binder = make_binder(uow_factory, blobs)
    lost = binder.start_run(U1).store_file("lost.txt", b"lost").item
    kept = {binder.start_run(U1).store_file(f"kept{n}.txt", b"kept").item.id for n in range(3)}
    blobs.delete(lost.blob_key)  # an operator removed it by hand (not one of the newest)
    dry = binder.collect_garbage(dry_run=True, grace_seconds=0)
    assert dry.orphan_rows == () and dry.marked_rows == (lost.id,) and dry.refusal is None
    assert {i.id for i in binder.list_files(U1)} == {*kept, lost.id}
    # One run only marks it: a run can never remove a row it has just seen without blob.
    first = binder.collect_garbage(dry_run=False, grace_seconds=0, allow_short_grace=True)
    assert first.orphan_rows == () and first.marked_rows == (lost.id,)
    assert {i.id for i in binder.list_files(U1)} == {*kept, lost.id}
    done = binder.collect_garbage(dry_run=False, grace_seconds=0, allow_short_grace=True)
    assert done.orphan_rows == (lost.id,)
    assert {i.id for i in binder.list_files(U1)} == kept


def test_gc_with_the_default_grace_never_takes_a_blob_from_a_running_store(
    stack: tuple[UnitOfWorkFactory, BlobStore],
) -> None:
    """gc runs while a store is between its blob write and its metadata commit."""
    uow_factory, blobs = stack
    written = threading.Event()
    resume = threading.Event()

    producer = make_binder(uow_factory, _PausingBlobs(blobs, written, resume))  # type: ignore[arg-type]
    collector: DocBinder = make_binder(uow_factory, blobs)
    outcome: list[object] = []

    def store() -> None:
        outcome.append(producer.start_new_run(U1).produce_file("slow.csv", b"a,b\n1,2\n"))

    thread = threading.Thread(target=store)
    thread.start()
    try:
        assert written.wait(60), "the store never wrote its blob"
        report = collector.collect_garbage(dry_run=False)
    finally:
        resume.set()
        thread.join(60)
    assert report.orphan_blobs == () and len(report.young_blobs) == 1
    [result] = outcome
    with collector.open_file(U1, result.item.id) as chunks:
        assert b"".join(chunks) == b"a,b\n1,2\n"  # type: ignore[attr-defined]
    check_consistent(uow_factory, blobs)


def test_gc_aborts_a_multipart_upload_left_by_a_killed_process(
    s3_bucket: str, s3_endpoint: str, tmp_path: Path
) -> None:
    store = S3BlobStore(s3_bucket, "blobs", endpoint_url=s3_endpoint, region_name="us-east-1")
    started = store.client.create_multipart_upload(Bucket=s3_bucket, Key="blobs/ab/abandoned")
    store.client.upload_part(
        Bucket=s3_bucket,
        Key="blobs/ab/abandoned",
        UploadId=started["UploadId"],
        PartNumber=1,
        Body=b"x" * (5 << 20),
    )
    where = ["--database-url", f"sqlite:///{tmp_path / 'docbinder.db'}", "--blob-url", store.url]
    env = {"DOCBINDER_S3_ENDPOINT_URL": s3_endpoint, "DOCBINDER_S3_REGION": "us-east-1"}
    assert invoke_cli([*where, "migrate"], env).exit_code == 0
    # The upload was started a moment ago: only an explicit override lets gc take it.
    refused = invoke_cli([*where, "gc", "--apply", "--grace", "0"], env)
    assert refused.exit_code == 1 and "--below-grace-floor" in refused.stderr
    assert len(store.pending_uploads(older_than_seconds=-3600)) == 1
    args = ["--json", "gc", "--apply", "--grace", "0", "--below-grace-floor"]
    result = invoke_cli([*where, *args], env)
    assert result.exit_code == 0, result.stderr
    assert store.pending_uploads(older_than_seconds=-3600) == []


class _AheadClock:
    """A clock a day ahead: every blob looks older than any grace period to gc."""

    def now(self) -> datetime:
        return datetime.now(UTC) + timedelta(days=1)


def test_gc_keeps_a_blob_whose_file_commits_between_its_scan_and_the_removal(
    stack: tuple[UnitOfWorkFactory, BlobStore],
) -> None:
    """A store slower than the grace period: its blob looks like an orphan when gc reads the
    rows, and its FileItem commits before gc removes blobs. gc reads the rows again right
    before removing and keeps the blob."""
    uow_factory, blobs = stack
    written = threading.Event()
    resume = threading.Event()
    outcome: list[Any] = []

    class _CommitBeforeRemoval:
        """Lets the paused store finish when gc looks at the blobs after reading the rows."""

        def __init__(self, inner: BlobStore) -> None:
            self.inner = inner

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

        def stat(self, key: str) -> BlobStat:
            if not resume.is_set():
                resume.set()
                thread.join(60)
                assert outcome, "the store did not finish"
            return self.inner.stat(key)

    producer = make_binder(uow_factory, _PausingBlobs(blobs, written, resume))  # type: ignore[arg-type]
    collector = wire_binder(uow_factory, _CommitBeforeRemoval(blobs), clock=_AheadClock())  # type: ignore[arg-type]
    writer = make_binder(uow_factory, blobs)
    seeds = [writer.start_run(U1).store_file(f"seed{n}.txt", bytes([n])) for n in range(3)]

    def store() -> None:
        outcome.append(producer.start_new_run(U1).produce_file("slow.csv", b"a,b\n1,2\n"))

    thread = threading.Thread(target=store)
    thread.start()
    try:
        assert written.wait(60), "the store never wrote its blob"
        report = collector.collect_garbage(dry_run=False)
    finally:
        resume.set()
        thread.join(60)
    assert report.orphan_blobs == ()
    [result] = outcome
    assert b"".join(collector.open_file(U1, result.item.id)) == b"a,b\n1,2\n"
    assert all(collector.get_file(U1, s.item.id) for s in seeds)
    check_consistent(uow_factory, blobs)


def test_gc_below_the_grace_floor_is_refused_even_with_force(
    stack: tuple[UnitOfWorkFactory, BlobStore],
) -> None:
    uow_factory, blobs = stack
    binder = make_binder(uow_factory, blobs)
    item = binder.start_run(U1).store_file("a.txt", b"a").item
    for grace, force in ((0, False), (0, True), (MIN_GRACE_SECONDS - 1, True)):
        with pytest.raises(UnsafeOperation, match="--below-grace-floor") as caught:
            binder.collect_garbage(dry_run=False, grace_seconds=grace, force=force)
        assert f"floor of {MIN_GRACE_SECONDS} s" in str(caught.value)
    assert binder.collect_garbage(dry_run=True, grace_seconds=0).dry_run
    report = binder.collect_garbage(dry_run=False, grace_seconds=MIN_GRACE_SECONDS)
    assert not report.short_grace and report.orphan_blobs == ()
    assert b"".join(binder.open_file(U1, item.id)) == b"a"


def test_the_cli_refuses_a_grace_below_the_floor_and_names_the_option(tmp_path: Path) -> None:
    home = ["--home", str(tmp_path / "home")]
    (tmp_path / "a.txt").write_bytes(b"a")
    assert invoke_cli([*home, "attach", str(tmp_path / "a.txt")]).exit_code == 0
    for extra in ([], ["--force"]):
        refused = invoke_cli([*home, "gc", "--apply", "--grace", "0", *extra])
        assert refused.exit_code == 1
        [line] = error_lines(refused)
        assert "below the floor of 300 s" in line and "--below-grace-floor" in line
    dry = invoke_cli([*home, "gc", "--grace", "0"])
    assert dry.exit_code == 0 and "would refuse: below the floor" in dry.stderr
    applied = invoke_cli([*home, "--json", "gc", "--apply", "--grace", "0", "--below-grace-floor"])
    assert applied.exit_code == 0 and json.loads(applied.stdout)["belowGraceFloor"] is True
    text = invoke_cli([*home, "gc", "--apply", "--grace", "0", "--below-grace-floor"])
    assert text.exit_code == 0 and "note: --below-grace-floor" in text.stderr


@pytest.fixture(params=["memory", "sqlite+localdisk", "sqlite+s3"])
def loop_stack(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[UnitOfWorkFactory, BlobStore]]:
    if request.param == "memory":
        yield MemoryMetadataStore().unit_of_work, MemoryBlobStore()
        return
    blobs: BlobStore
    if request.param == "sqlite+s3":
        bucket = request.getfixturevalue("s3_bucket")
        endpoint = request.getfixturevalue("s3_endpoint")
        blobs = S3BlobStore(bucket, "blobs", endpoint_url=endpoint, region_name="us-east-1")
    else:
        blobs = LocalDiskBlobStore(tmp_path / "blobs")
    backend: SqlBackend
    with provision("sqlite", tmp_path) as backend:
        yield backend.store.unit_of_work, blobs


def test_gc_in_a_loop_beside_concurrent_attaches_loses_nothing(
    loop_stack: tuple[UnitOfWorkFactory, BlobStore],
) -> None:
    """The issue's race: ``gc --apply`` over and over while producers store and attach.
    Asking for no grace is refused every time; gc at the floor removes old leftovers and
    never a file being stored."""
    uow_factory, blobs = loop_stack
    collector = make_binder(uow_factory, blobs)
    seeds = [collector.start_run(U1).store_file(f"seed{n}.txt", bytes([n])).item for n in range(4)]
    planted: list[str] = []
    if isinstance(blobs, LocalDiskBlobStore):  # leftovers of a crash long ago (mtime can be set)
        collector.store_file.registration.ensure()
        for _ in range(2):
            key = blob_key_for(uuid.uuid4().hex)
            blobs.put(key, [b"left behind"])
            os.utime(blobs.root / key, (1_000_000_000, 1_000_000_000))
            planted.append(key)
    started = threading.Event()
    done = threading.Event()
    refused: list[UnsafeOperation] = []
    reports: list[GcReport] = []
    failures: list[BaseException] = []
    produced: list[tuple[str, bytes]] = []

    def collect() -> None:
        try:
            while True:
                last = done.is_set()
                started.set()
                try:
                    collector.collect_garbage(dry_run=False, grace_seconds=0)
                except UnsafeOperation as exc:
                    refused.append(exc)
                reports.append(
                    collector.collect_garbage(dry_run=False, grace_seconds=MIN_GRACE_SECONDS)
                )
                if last:
                    return
        except BaseException as exc:
            failures.append(exc)

    def produce(worker: int) -> None:
        binder = make_binder(uow_factory, blobs)
        run = binder.start_new_run(U1)
        assert started.wait(60), "gc never started"
        try:
            for n in range(20):
                data = f"worker {worker} file {n}\n".encode() * (n + 1)
                result = run.produce_file(f"w{worker}-{n}.txt", data)
                produced.append((result.item.id, data))
        except BaseException as exc:
            failures.append(exc)

    collector_thread = threading.Thread(target=collect)
    producers = [threading.Thread(target=produce, args=(w,)) for w in range(4)]
    collector_thread.start()
    for thread in producers:
        thread.start()
    for thread in producers:
        thread.join(300)
    done.set()
    collector_thread.join(300)

    assert failures == []
    assert len(produced) == 80 and len(refused) == len(reports) >= 2
    for file_id, data in produced:
        assert b"".join(collector.open_file(U1, file_id)) == data
    for item in seeds:
        assert b"".join(collector.open_file(U1, item.id)) == bytes([int(item.file_name[4])])
    assert all(not blobs.exists(key) for key in planted)
    assert sorted(k for r in reports for k in r.orphan_blobs) == sorted(planted)
    state = check_consistent(uow_factory, blobs)
    assert len(state.items) == 84


def _restore(source: SqlBackend, target: SqlBackend) -> None:
    """Every row of ``source`` into ``target`` (a dump restored into another database)."""
    from docbinder.adapters.sql.schema import TABLES

    with source.engine.connect() as src, target.engine.begin() as dst:
        for table in TABLES:
            rows = [dict(row._mapping) for row in src.execute(sa.select(table))]
            if rows:
                dst.execute(sa.insert(table), rows)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql", "mariadb"])
def test_a_database_restored_elsewhere_gets_its_own_id_and_gc_keeps_its_blobs(
    backend: str, tmp_path: Path
) -> None:
    """A dump of database A restored into database B (another file, schema or database)
    carried A's id: B's blobs were marked as A's, and A's gc removed them. B now makes
    its own id before its first write and keeps A's as a former id."""
    root = tmp_path / "blobs"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with (
        provision(backend, tmp_path / "a") as a,
        provision(backend, tmp_path / "b") as b,
    ):
        first = binder_over(a.store, LocalDiskBlobStore(root))
        seeds = [first.start_run(U1).store_file(f"s{n}.txt", bytes([n])).item for n in range(3)]
        with a.store.unit_of_work() as uow:
            original = uow.maintenance.database_id()
        assert original is not None
        b.clean()
        _restore(a, b)
        with b.store.read_unit_of_work() as uow:
            assert uow.maintenance.database_id() is None  # not B's: a new one on the first write
            assert uow.maintenance.former_database_ids() == (original,)
        second = binder_over(b.store, LocalDiskBlobStore(root))
        late = second.start_run(U1).store_file("late.txt", b"only in b").item
        with b.store.read_unit_of_work() as uow:
            copy_id = uow.maintenance.database_id()
            assert copy_id not in (None, original)
            assert uow.maintenance.former_database_ids() == (original,)
        with a.store.read_unit_of_work() as uow:
            assert uow.maintenance.database_id() == original
            assert uow.maintenance.former_database_ids() == ()

        ahead = wire_binder(
            a.store.unit_of_work,
            LocalDiskBlobStore(root),
            a.store.read_unit_of_work,
            clock=_AheadClock(),
        )
        report = ahead.collect_garbage(dry_run=False, grace_seconds=MIN_GRACE_SECONDS)
        assert report.orphan_blobs == () and report.other_database_blobs == 1
        with second.open_file(U1, late.id) as chunks:
            assert b"".join(chunks) == b"only in b"
        for item in seeds:
            assert b"".join(first.open_file(U1, item.id)) == bytes([int(item.file_name[1])])


# -- a database restored from a backup in place (ADR 0031) --------------------------------


class _Backup:
    """A backup of one database, restored in place: same SQLite file (its bytes copied back
    over it, so the inode and the location fingerprint stay), same PostgreSQL schema or
    MariaDB database (every row replaced)."""

    def __init__(self, backend: SqlBackend, tmp_path: Path, name: str) -> None:
        self._backend = backend
        self._rows: dict[str, list[dict[str, Any]]] = {}
        self._copy = tmp_path / f"{name}.db"
        if backend.name == "sqlite":
            backend.engine.dispose()  # the last connection closing folds the WAL in
            self._copy.write_bytes(self._file.read_bytes())
            return
        from docbinder.adapters.sql.schema import TABLES

        with backend.engine.connect() as conn:
            for table in TABLES:
                self._rows[table.name] = [dict(r._mapping) for r in conn.execute(sa.select(table))]

    @property
    def _file(self) -> Path:
        database = self._backend.url.database
        assert database is not None
        return Path(database)

    def restore(self) -> None:
        backend = self._backend
        if backend.name == "sqlite":
            backend.engine.dispose()
            inode = os.stat(self._file).st_ino
            with open(self._file, "r+b") as target:
                target.write(self._copy.read_bytes())
                target.truncate()
            assert os.stat(self._file).st_ino == inode  # in place, as `cp backup.db live.db`
            return
        from docbinder.adapters.sql.schema import TABLES

        backend.clean()
        with backend.engine.begin() as conn:
            for table in TABLES:
                if self._rows[table.name]:
                    conn.execute(sa.insert(table), self._rows[table.name])


class _DeleteFails:
    """A blob store whose ``delete`` fails: a store whose unit failed cannot clean up."""

    def __init__(self, inner: BlobStore) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def delete(self, key: str) -> None:
        from docbinder.domain.errors import StorageError

        raise StorageError("delete refused by the test")


class _CommitFails(UnitOfWorkWrapper):
    def commit(self) -> None:
        from docbinder.domain.errors import StorageError

        raise StorageError("commit refused by the test")


@pytest.mark.parametrize("backend", ["sqlite", "postgresql", "mariadb"])
def test_gc_after_a_backup_restored_in_place_keeps_every_committed_blob(
    backend: str, tmp_path: Path
) -> None:
    """The wrong backup restored in place keeps the database id: every file stored after
    it looked like an orphan blob of this database, and ``gc --apply`` past the grace
    period deleted them, so restoring the right backup afterwards found them gone. The
    store now records each committed blob: gc keeps and reports them, and still removes
    the blobs whose FileItem never committed (a crash, a unit of work that failed)."""
    root = tmp_path / "blobs"
    with provision(backend, tmp_path) as db:
        binder = binder_over(db.store, LocalDiskBlobStore(root))
        seeds = [binder.start_run(U1).store_file(f"s{n}.txt", bytes([n])).item for n in range(8)]
        wrong = _Backup(db, tmp_path, "wrong")
        late = [
            binder.start_run(U1).store_file("late.txt", b"stored after the backup").item,
            binder.start_new_run(U1).produce_file("late.csv", b"a,b\n").item,
            binder.versions.save(U1, "notes", b"v0").item,
        ]
        with db.store.read_unit_of_work() as uow:
            database_id = uow.maintenance.database_id()
        crashed = blob_key_for(uuid.uuid4().hex)  # killed between blob write and commit
        binder.blobs.put(crashed, [b"left behind"])
        failing = wire_binder(
            lambda: _CommitFails(db.store.unit_of_work()),  # type: ignore[arg-type,return-value]
            _DeleteFails(LocalDiskBlobStore(root)),  # type: ignore[arg-type]
            db.store.read_unit_of_work,
        )
        with pytest.raises(Exception, match="commit refused"):
            failing.start_run(U1).store_file("failed.txt", b"never committed")
        failed = sorted(set(LocalDiskBlobStore(root).keys()) - {i.blob_key for i in seeds + late})
        failed.remove(crashed)
        assert len(failed) == 1  # its unit failed and the blob could not be removed
        right = _Backup(db, tmp_path, "right")

        wrong.restore()
        with db.store.read_unit_of_work() as uow:
            assert uow.maintenance.database_id() == database_id  # restored in place: same id
        collector = binder_over(db.store, LocalDiskBlobStore(root), clock=_AheadClock())
        report = collector.collect_garbage(dry_run=False, grace_seconds=MIN_GRACE_SECONDS)
        assert sorted(report.orphan_blobs) == sorted([crashed, *failed])
        assert sorted(report.committed_blobs) == sorted(i.blob_key for i in late)
        again = collector.collect_garbage(dry_run=False, grace_seconds=MIN_GRACE_SECONDS)
        assert again.orphan_blobs == () and len(again.committed_blobs) == 3

        right.restore()
        reader = binder_over(db.store, LocalDiskBlobStore(root))
        assert b"".join(reader.open_file(U1, late[0].id)) == b"stored after the backup"
        assert b"".join(reader.open_file(U1, late[1].id)) == b"a,b\n"
        assert b"".join(reader.open_file(U1, late[2].id)) == b"v0"
        for item in seeds:
            assert b"".join(reader.open_file(U1, item.id)) == bytes([int(item.file_name[1])])
        assert not any(LocalDiskBlobStore(root).exists(k) for k in [crashed, *failed])


class _SteppingClock:
    """A clock a day ahead that moves on by ``step`` at each reading."""

    def __init__(self, step: timedelta) -> None:
        self._now = datetime.now(UTC) + timedelta(days=1)
        self._step = step

    def now(self) -> datetime:
        self._now += self._step
        return self._now


@pytest.mark.parametrize("backend", ["sqlite", "postgresql", "mariadb"])
def test_gc_after_a_backup_restored_in_place_keeps_a_file_whose_content_changed_since(
    backend: str, tmp_path: Path
) -> None:
    """A file whose content was replaced after the backup: the restored row names the former
    blob (removed by the update), the current bytes are a committed blob no row names. gc
    marked the row as without blob and a later ``gc --apply`` removed the FileItem (its
    name, id and every document referring to it), while reporting the committed blob as a
    sign of a restore. Rows without blob facing committed blobs no row names are now a
    refusal: nothing is marked or removed unless ``force``."""
    root = tmp_path / "blobs"
    with provision(backend, tmp_path) as db:
        binder = binder_over(db.store, LocalDiskBlobStore(root))
        seeds = [binder.start_run(U1).store_file(f"s{n}.txt", bytes([n])).item for n in range(8)]
        backup = _Backup(db, tmp_path, "backup")
        binder.update_file.replace(U1, seeds[0].id, b"the content that matters")
        backup.restore()

        collector = binder_over(
            db.store, LocalDiskBlobStore(root), clock=_SteppingClock(timedelta(hours=2))
        )
        dry = collector.collect_garbage(dry_run=True, grace_seconds=MIN_GRACE_SECONDS)
        assert dry.refusal is not None and "restored" in dry.refusal
        for _ in range(2):
            with pytest.raises(UnsafeOperation, match="database_url"):
                collector.collect_garbage(dry_run=False, grace_seconds=MIN_GRACE_SECONDS)
        with db.store.read_unit_of_work() as uow:
            assert uow.files.get(seeds[0].id) is not None
            assert uow.maintenance.marks() == {}


class _WithoutCommitRecords:
    """A store plug-in written before commit records existed: the port's other methods only."""

    def __init__(self, inner: BlobStore) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> object:
        if name in ("mark_committed", "is_committed"):
            raise AttributeError(name)
        return getattr(self.inner, name)


def test_a_store_without_commit_records_has_its_orphans_collected_as_before() -> None:
    """A third-party store without ``mark_committed``: storing works, and gc treats a blob
    no row names as unconfirmed (removed past the grace period), as it did before."""
    metadata, inner = MemoryMetadataStore(), MemoryBlobStore()
    blobs = _WithoutCommitRecords(inner)
    binder = make_binder(metadata.unit_of_work, blobs)  # type: ignore[arg-type]
    kept = [binder.start_run(U1).store_file(f"k{n}.txt", bytes([n])).item for n in range(3)]
    gone = binder.start_run(U1).store_file("gone.txt", b"row lost").item
    assert not inner.is_committed(gone.blob_key)  # nothing was recorded
    with metadata.unit_of_work() as uow:  # the row is lost (a restore, say)
        uow.files.delete(gone.id)
        uow.commit()
    collector = wire_binder(metadata.unit_of_work, blobs, clock=_AheadClock())  # type: ignore[arg-type]
    report = collector.collect_garbage(dry_run=False, grace_seconds=MIN_GRACE_SECONDS)
    assert report.orphan_blobs == (gone.blob_key,) and report.committed_blobs == ()
    assert all(inner.exists(i.blob_key) for i in kept)


def test_a_freed_blob_whose_removal_failed_is_kept_by_gc_and_named(
    stack: tuple[UnitOfWorkFactory, BlobStore], caplog: pytest.LogCaptureFixture
) -> None:
    """``files rm`` commits, then its blob removal fails: the blob keeps its commit record,
    so gc cannot tell it from a file of a restored database. It stays (space, not data),
    gc lists it, and the delete's warning names it for removal by hand (ADR 0031)."""
    uow_factory, blobs = stack
    binder = make_binder(uow_factory, blobs)
    kept = [binder.start_run(U1).store_file(f"k{n}.txt", bytes([n])).item for n in range(3)]
    freed = binder.start_run(U1).store_file("freed.txt", b"freed").item
    failing = make_binder(uow_factory, _DeleteFails(blobs))  # type: ignore[arg-type]
    with caplog.at_level("WARNING", logger="docbinder"):
        failing.delete_file(U1, freed.id, force=True)
    assert any(
        freed.blob_key in r.getMessage() and "remove it by hand" in r.getMessage()
        for r in caplog.records
    )
    collector = wire_binder(uow_factory, blobs, clock=_AheadClock())
    report = collector.collect_garbage(dry_run=False, grace_seconds=MIN_GRACE_SECONDS)
    assert report.orphan_blobs == () and report.committed_blobs == (freed.blob_key,)
    assert blobs.exists(freed.blob_key) and all(blobs.exists(i.blob_key) for i in kept)


def test_two_physical_postgres_copies_sharing_one_id_keep_each_others_committed_blobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two physical copies of one data directory reached at the same address (tunnels to
    ``127.0.0.1:5432`` with the same ``data_directory``) have one fingerprint and share the
    database id; the gc of one took the files the other stored since. The fingerprint of
    that situation is forced here; the committed record in the store keeps those blobs."""
    from docbinder.adapters.sql import maintenance

    monkeypatch.setattr(maintenance, "database_location", lambda _session: "one-fingerprint")
    root = tmp_path / "blobs"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with (
        provision("postgresql", tmp_path / "a") as a,
        provision("postgresql", tmp_path / "b") as b,
    ):
        first = binder_over(a.store, LocalDiskBlobStore(root))
        seeds = [first.start_run(U1).store_file(f"s{n}.txt", bytes([n])).item for n in range(4)]
        b.clean()
        _restore(a, b)  # the physical copy
        second = binder_over(b.store, LocalDiskBlobStore(root))
        only_b = second.start_run(U1).store_file("b.txt", b"only in the copy").item
        with a.store.read_unit_of_work() as ua, b.store.read_unit_of_work() as ub:
            assert (
                ua.maintenance.database_id() == ub.maintenance.database_id() is not None
            )  # shared

        ahead = binder_over(a.store, LocalDiskBlobStore(root), clock=_AheadClock())
        report = ahead.collect_garbage(dry_run=False, grace_seconds=MIN_GRACE_SECONDS)
        assert report.orphan_blobs == () and report.committed_blobs == (only_b.blob_key,)
        assert b"".join(second.open_file(U1, only_b.id)) == b"only in the copy"
        for item in seeds:
            assert b"".join(first.open_file(U1, item.id)) == bytes([int(item.file_name[1])])


# -- compact provenance marks on local disk (ADR 0036) -----------------------------------


def _mark_by_hand(root: Path, key: str, data: bytes, mark: str) -> None:
    """A file in the layout carrying ``mark``, as a blob written earlier or elsewhere would."""
    path = root / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.setxattr(path, ORIGIN_XATTR, mark.encode("ascii"))


@pytest.mark.skipif(not hasattr(os, "setxattr"), reason="this platform has no os.setxattr")
def test_gc_sorts_compact_local_disk_marks_as_it_sorted_full_ones(tmp_path: Path) -> None:
    """Local disk writes compact marks that name no database; gc verifies them against
    this database, its former ids, the registered ones and none, so every blob lands in
    the category its full mark gave it. Full marks written before still count."""
    root = tmp_path / "blobs"
    metadata = MemoryMetadataStore()
    binder = make_binder(metadata.unit_of_work, LocalDiskBlobStore(root))
    kept = binder.start_run(U1).store_file("kept.txt", b"named").item
    store_id = LocalDiskBlobStore(root).identity()
    with metadata.unit_of_work() as uow:
        mine = uow.maintenance.database_id()
    assert store_id is not None and mine is not None
    if not os.listxattr(root / kept.blob_key):
        pytest.skip(f"{root} keeps no user extended attributes")

    own = LocalDiskBlobStore(root)
    own.identity()  # a store writes marks once it knows its identity
    own.register_database(mine)
    own.put("ow/own1", [b"a crash's leftover"])
    own.put("co/committed1", [b"a restored database's file"])
    own.mark_committed("co/committed1")
    theirs = LocalDiskBlobStore(root)
    theirs.identity()  # a store writes marks once it knows its identity
    theirs.register_database("other-database")
    theirs.put("ot/other1", [b"another database's"])
    both = LocalDiskBlobStore(root)
    both.identity()  # a store writes marks once it knows its identity
    both.register_database(mine)
    both.register_database("other-database")
    both.put("an/anon1", [b"no database named"])
    # a database that never registered here, another store, a mark copied onto another key
    _mark_by_hand(root, "gh/ghost1", b"?", compact_blob_origin(store_id, "ghost", "gh/ghost1"))
    _mark_by_hand(root, "fo/foreign1", b"?", compact_blob_origin("s2", mine, "fo/foreign1"))
    _mark_by_hand(root, "cp/cpcopy1", b"?", compact_blob_origin(store_id, mine, "ow/own1"))
    # full marks of blobs written before compact marks existed
    _mark_by_hand(root, "ol/old1", b"old", blob_origin(store_id, mine, "ol/old1"))
    _mark_by_hand(root, "ol/old2", b"old", blob_origin(store_id, "other-database", "ol/old2"))

    for key in ("ow/own1", "co/committed1", "ot/other1", "an/anon1"):
        mark = LocalDiskBlobStore(root).stat(key).origin
        assert mark is not None and mark.startswith("v2 ") and len(mark) == 15

    collector = wire_binder(metadata.unit_of_work, LocalDiskBlobStore(root), clock=_AheadClock())
    report = collector.collect_garbage(dry_run=True, grace_seconds=MIN_GRACE_SECONDS)
    assert report.orphan_blobs == ("an/anon1", "ol/old1", "ow/own1")
    assert report.other_database_blobs == 2
    assert report.unproven_blobs == ("cp/cpcopy1", "fo/foreign1", "gh/ghost1")
    assert report.committed_blobs == ("co/committed1",)
    assert report.refusal is not None and "other-database" not in report.refusal  # anon1

    LocalDiskBlobStore(root).delete("an/anon1")
    report = collector.collect_garbage(dry_run=False, grace_seconds=MIN_GRACE_SECONDS)
    assert report.refusal is None
    assert report.orphan_blobs == ("ol/old1", "ow/own1")
    left = set(LocalDiskBlobStore(root).keys())
    assert left >= {kept.blob_key, "co/committed1", "ot/other1", "ol/old2"}
    assert left >= {"cp/cpcopy1", "fo/foreign1", "gh/ghost1"}
    assert not left & {"ol/old1", "ow/own1"}
