"""Fault injection at every write step of store + attach (SPEC section 5, C1, C3, C13).

Two stacks: local disk + SQLite (the embedded default) and S3 (moto server over
HTTP) + PostgreSQL. Each scenario arms one or more faults, runs the producer
path (``Run.produce_file``, or the strict ``Run.attach``), and then checks:

* the caller got a docbinder error (an input stream's own exception propagates
  unchanged, as the blob port documents), or, for faults while attaching, the
  documented behaviour: no exception, no ``documentList ref`` line, one warning;
* no FileItem without its blob, no ChatDocument without its FileItem and message;
* every leftover blob is listed by ``docbinder gc --dry-run --grace 0`` and
  removed by ``docbinder gc --apply --grace 0 --below-grace-floor`` (the real
  CLI; nothing writes meanwhile), no temp file and no
  unfinished multipart upload is left;
* the next store + attach works.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

import docbinder.adapters.localdisk.durable as durable_module
import docbinder.adapters.localdisk.tree as tree_module
from docbinder.adapters.inline import InlineTierBlobStore
from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.s3 import S3BlobStore
from docbinder.application import DocBinder
from docbinder.domain.errors import DocbinderError, DuplicateFileItem, DuplicateLabel
from docbinder.domain.model import Principal
from docbinder.ports.blobs import BlobStore
from docbinder.ports.metadata import UnitOfWorkFactory
from tests.contract.sql_backends import SqlBackend, provision
from tests.reliability.harness import (
    LEDGER,
    Fault,
    FaultPlan,
    FaultyBlobStore,
    InputBroke,
    check_consistent,
    chunks,
    faulty_factory,
    injected,
    invoke_cli,
    make_binder,
)

MiB = 1 << 20
U1 = Principal("u1", "m1", "f1", roles=("member",))
SMALL = b"quarterly figures, region by region\n" * 8

# ----------------------------------------------------------------------------- stacks


@attrs.define
class Rig:
    """One storage stack with fault hooks installed (inert until the plan is armed)."""

    name: str
    binder: DocBinder
    plan: FaultPlan
    uow_factory: UnitOfWorkFactory
    blobs: BlobStore
    cli_args: list[str]
    cli_env: dict[str, str]
    large: int
    """Bytes of the "large" payload: several writes on disk, a multipart upload on S3."""
    extra_leftovers: Callable[[], list[str]]
    """Temp files or unfinished multipart uploads left behind (must stay empty)."""

    def gc(self, *, dry_run: bool, force: bool = False) -> dict[str, Any]:
        # The leftovers are moments old and nothing writes while gc runs.
        args = [*self.cli_args, "--json", "gc", "--grace", "0", "--below-grace-floor"]
        args.append("--dry-run" if dry_run else "--apply")
        if force:
            args.append("--force")
        result = invoke_cli(args, self.cli_env)
        assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
        payload: dict[str, Any] = json.loads(result.stdout)
        return payload


class _OsWithFaults:
    """Stands in for ``os`` inside the local-disk write path: write, fsync and replace can fail."""

    def __init__(self, plan: FaultPlan) -> None:
        self._plan = plan
        self.renamed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def open(self, path: Any, flags: int, mode: int = 0o777, **dir_fd: Any) -> int:
        if flags & os.O_EXCL:  # a new temp file: a new put begins
            self.renamed = False
        return os.open(path, flags, mode, **dir_fd)

    def write(self, fd: int, data: Any) -> int:
        return int(self._plan.call("disk.write", os.write, fd, data))

    def fsync(self, fd: int) -> None:
        is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
        point = "disk.file-fsync" if not is_dir else "disk.dir-fsync-after-rename"
        if is_dir and not self.renamed:
            point = "disk.dir-fsync"
        self._plan.call(point, os.fsync, fd)

    def replace(self, src: Any, dst: Any, **dir_fds: Any) -> None:
        self._plan.call("disk.replace", os.replace, src, dst, **dir_fds)
        self.renamed = True


def _disk_error(code: int) -> Callable[[str], BaseException]:
    def make(point: str) -> BaseException:
        return OSError(code, f"{os.strerror(code)} (injected at {point})")

    return make


def _s3_error(point: str) -> BaseException:
    from botocore.exceptions import ClientError

    operation = point.split(".", 1)[1]
    return ClientError(
        {
            "Error": {"Code": "InternalError", "Message": f"injected at {point}"},
            "ResponseMetadata": {"HTTPStatusCode": 500},
        },
        operation,
    )


@pytest.fixture(scope="module")
def sqlite_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqlBackend]:
    with provision("sqlite", tmp_path_factory.mktemp("faults-sqlite")) as backend:
        yield backend


@pytest.fixture(scope="module")
def postgres_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqlBackend]:
    with provision("postgresql", tmp_path_factory.mktemp("faults-pg")) as backend:
        yield backend


def _url(backend: SqlBackend) -> str:
    return backend.url.render_as_string(hide_password=False)


@pytest.fixture
def local_rig(sqlite_db: SqlBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Rig:
    return _local_rig(sqlite_db, tmp_path, monkeypatch)


def _local_rig(sqlite_db: SqlBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Rig:
    sqlite_db.clean()
    plan = FaultPlan()
    store = LocalDiskBlobStore(tmp_path / "blobs")
    faulty_os = _OsWithFaults(plan)  # one stand-in: it tells a put's steps apart
    monkeypatch.setattr(durable_module, "os", faulty_os)
    monkeypatch.setattr(tree_module, "os", faulty_os)
    binder = make_binder(
        faulty_factory(sqlite_db.store.unit_of_work, plan), FaultyBlobStore(store, plan)
    )
    binder.store_file.registration.ensure()  # once per process, before any fault is armed
    return Rig(
        name="localdisk+sqlite",
        binder=binder,
        plan=plan,
        uow_factory=sqlite_db.store.unit_of_work,
        blobs=store,
        cli_args=[
            "--home",
            str(tmp_path / "home"),
            "--database-url",
            _url(sqlite_db),
            "--blob-url",
            store.url,
        ],
        cli_env={},
        large=4 * 128 * 1024,
        extra_leftovers=lambda: [str(p) for p in store.stale_temp_files(0)],
    )


@pytest.fixture
def local_inline_rig(sqlite_db: SqlBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Rig:
    """SQLite + local disk with the shipped inline tier (ADR 0110) over the faulty store."""
    rig = _local_rig(sqlite_db, tmp_path, monkeypatch)
    units, read_units = sqlite_db.store.unit_of_work, sqlite_db.store.read_unit_of_work
    assert isinstance(rig.binder.blobs, FaultyBlobStore)
    # The tier's own reads use plain units: the scenarios count the units of the use case.
    tier = InlineTierBlobStore(rig.binder.blobs, units, read_units)
    binder = make_binder(faulty_factory(units, rig.plan), tier)
    binder.store_file.registration.ensure()
    return attrs.evolve(
        rig,
        name="localdisk+sqlite+inline",
        binder=binder,
        blobs=InlineTierBlobStore(rig.blobs, units, read_units),
    )


@pytest.fixture
def s3_rig(
    postgres_db: SqlBackend,
    s3_bucket: str,
    s3_endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
) -> Rig:
    postgres_db.clean()
    plan = FaultPlan()
    store = S3BlobStore(
        s3_bucket,
        "blobs",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        multipart_threshold=5 * MiB,
        multipart_chunksize=5 * MiB,
        max_concurrency=2,
    )
    store.identity(create=True)  # made once per store; the faults below aim at blob writes
    client = store.client
    for operation in (
        "put_object",
        "create_multipart_upload",
        "upload_part",
        "complete_multipart_upload",
    ):
        original = getattr(client, operation)

        def wrapper(*args: Any, _op: str = operation, _orig: Any = original, **kw: Any) -> Any:
            return plan.call(f"s3.{_op}", _orig, *args, **kw)

        monkeypatch.setattr(client, operation, wrapper)

    def pending() -> list[str]:
        return [u.key for u in store.pending_uploads(older_than_seconds=-3600)]

    binder = make_binder(
        faulty_factory(postgres_db.store.unit_of_work, plan), FaultyBlobStore(store, plan)
    )
    binder.store_file.registration.ensure()  # once per process, before any fault is armed
    return Rig(
        name="s3+postgresql",
        binder=binder,
        plan=plan,
        uow_factory=postgres_db.store.unit_of_work,
        blobs=store,
        cli_args=["--database-url", _url(postgres_db), "--blob-url", store.url],
        cli_env={"DOCBINDER_S3_ENDPOINT_URL": s3_endpoint, "DOCBINDER_S3_REGION": "us-east-1"},
        large=6 * MiB + 12345,
        extra_leftovers=pending,
    )


# ----------------------------------------------------------------------------- scenarios


class Expect:
    ERROR = "docbinder error"
    INPUT_ERROR = "the input's own exception, unchanged"
    NO_ATTACH = "stored, not attached, one warning"
    OK = "stored and attached"
    DUPLICATE = "duplicate returned"


@attrs.frozen
class Scenario:
    id: str
    faults: tuple[Fault, ...]
    expect: str
    stage: str = "produce"
    """``produce`` (Run.produce_file), ``strict`` (store, then Run.attach) or
    ``duplicate`` (the same file stored once before the faults are armed)."""
    payload: str = "small"
    leftovers: int = 0
    rows: int = 0
    """FileItems named like the payload after the fault."""
    warnings: int | None = None


def _then(first: Callable[[str], BaseException], rest: Callable[[str], BaseException]) -> Any:
    """A ``make`` that raises ``first`` on its first use and ``rest`` afterwards."""
    used: list[bool] = []

    def make(point: str) -> BaseException:
        if not used:
            used.append(True)
            return first(point)
        return rest(point)

    return make


def _duplicate(point: str) -> BaseException:
    return DuplicateFileItem(f"another writer stored the same file (injected at {point})")


def _label_taken(point: str) -> BaseException:
    return DuplicateLabel(f"label taken (injected at {point})")


def _host_bug(point: str) -> BaseException:
    return RuntimeError(f"a host adapter failed (injected at {point})")


def _broken_input(point: str) -> BaseException:
    return InputBroke(f"the producer's input broke (injected at {point})")


COMMON: list[Scenario] = [
    # -- blob stage
    Scenario(
        "input-raises-docbinder-error", (Fault("input", (3,)),), Expect.ERROR, payload="large"
    ),
    Scenario(
        "input-raises-its-own-error",
        (Fault("input", (3,), _broken_input),),
        Expect.INPUT_ERROR,
        payload="large",
    ),
    Scenario("blob-put-fails", (Fault("blob.put"),), Expect.ERROR),
    Scenario(
        "blob-put-took-effect-but-failed",
        (Fault("blob.put", after=True),),
        Expect.ERROR,
        leftovers=1,
    ),
    # -- metadata stage of store
    # The candidates are looked up only when the FileItem's duplicate key is taken.
    Scenario(
        "duplicate-check-fails",
        (Fault("files.find_duplicates"),),
        Expect.ERROR,
        stage="duplicate",
        rows=1,
    ),
    # Unit 1 records the FileItem (looking for duplicates only if its key is
    # taken) and the message; a second one (opened only after a failed commit)
    # checks whether the commit took effect.
    Scenario("metadata-unit-cannot-open", (Fault("uow.open", (1,)),), Expect.ERROR),
    Scenario("metadata-insert-fails", (Fault("files.add"),), Expect.ERROR),
    Scenario(
        "insert-race-then-insert-fails",
        (Fault("files.add", (1, 2), _then(_duplicate, injected)),),
        Expect.ERROR,
    ),
    Scenario("commit-fails", (Fault("commit"),), Expect.ERROR),
    Scenario(
        "commit-took-effect-but-failed",
        (Fault("commit", after=True),),
        Expect.OK,
        rows=1,
        warnings=1,
    ),
    Scenario(
        "commit-took-effect-but-failed-and-check-fails",
        (Fault("commit", after=True), Fault("uow.open", (2,))),
        Expect.ERROR,
        rows=1,
    ),
    Scenario(
        "commit-fails-and-check-fails",
        (Fault("commit"), Fault("uow.open", (2,))),
        Expect.ERROR,
        leftovers=1,
    ),
    Scenario(
        "insert-fails-and-blob-removal-fails",
        (Fault("files.add"), Fault("blob.delete")),
        Expect.ERROR,
        leftovers=1,
    ),
    Scenario(
        "duplicate-blob-removal-fails",
        (Fault("blob.delete"),),
        Expect.DUPLICATE,
        stage="duplicate",
        leftovers=1,
        rows=1,
    ),
    # -- attach stage
    Scenario(
        "message-insert-fails",
        (Fault("workflows.add_message"),),
        Expect.NO_ATTACH,
        rows=1,
        warnings=1,
    ),
    Scenario(
        "message-insert-raises-foreign-error",
        (Fault("workflows.add_message", make=_host_bug),),
        Expect.NO_ATTACH,
        rows=1,
        warnings=1,
    ),
    Scenario(
        "label-retries-exhausted",
        (Fault("workflows.add_message", (1, 2, 3, 4), _label_taken),),
        Expect.NO_ATTACH,
        rows=1,
        warnings=1,
    ),
    Scenario(
        "message-insert-fails-then-commit-fails",
        (Fault("workflows.add_message"), Fault("commit")),
        Expect.ERROR,
    ),
    Scenario(
        "message-insert-fails-then-commit-took-effect-but-failed",
        (Fault("workflows.add_message"), Fault("commit", after=True)),
        Expect.NO_ATTACH,
        rows=1,
        warnings=2,
    ),
    # Reusing a duplicate: nothing proves it still exists when the commit fails,
    # so the fresh blob is kept (for gc) and both causes are logged.
    Scenario(
        "duplicate-then-commit-fails",
        (Fault("commit"),),
        Expect.NO_ATTACH,
        stage="duplicate",
        leftovers=1,
        rows=1,
        warnings=2,
    ),
    Scenario(
        "strict-attach-unit-cannot-open",
        (Fault("uow.open", (2,)),),
        Expect.ERROR,
        stage="strict",
        rows=1,
    ),
    Scenario(
        "strict-attach-commit-took-effect-but-failed",
        (Fault("commit", (2,), after=True),),
        Expect.ERROR,
        stage="strict",
        rows=1,
    ),
    Scenario(
        "strict-attach-message-insert-fails",
        (Fault("workflows.add_message"),),
        Expect.ERROR,
        stage="strict",
        rows=1,
    ),
    Scenario(
        "strict-attach-commit-fails", (Fault("commit", (2,)),), Expect.ERROR, stage="strict", rows=1
    ),
]

LOCAL_ONLY: list[Scenario] = [
    Scenario(
        "disk-write-fails-midway",
        (Fault("disk.write", (2,), _disk_error(errno.ENOSPC)),),
        Expect.ERROR,
        payload="large",
    ),
    Scenario(
        "disk-flush-fails", (Fault("disk.file-fsync", make=_disk_error(errno.EIO)),), Expect.ERROR
    ),
    Scenario(
        "disk-rename-fails", (Fault("disk.replace", make=_disk_error(errno.EIO)),), Expect.ERROR
    ),
    Scenario(
        "disk-directory-flush-after-rename-fails",
        (Fault("disk.dir-fsync-after-rename", make=_disk_error(errno.EIO)),),
        Expect.ERROR,
    ),
]

S3_ONLY: list[Scenario] = [
    Scenario("s3-put-fails", (Fault("s3.put_object", make=_s3_error),), Expect.ERROR),
    Scenario(
        "s3-put-took-effect-but-failed",
        (Fault("s3.put_object", make=_s3_error, after=True),),
        Expect.ERROR,
        leftovers=1,
    ),
    Scenario(
        "s3-multipart-start-fails",
        (Fault("s3.create_multipart_upload", make=_s3_error),),
        Expect.ERROR,
        payload="large",
    ),
    Scenario(
        "s3-part-upload-fails-midway",
        (Fault("s3.upload_part", (2,), _s3_error),),
        Expect.ERROR,
        payload="large",
    ),
    Scenario(
        "s3-multipart-complete-fails",
        (Fault("s3.complete_multipart_upload", make=_s3_error),),
        Expect.ERROR,
        payload="large",
    ),
    Scenario(
        "s3-multipart-complete-took-effect-but-failed",
        (Fault("s3.complete_multipart_upload", make=_s3_error, after=True),),
        Expect.ERROR,
        payload="large",
        leftovers=1,
    ),
]


def _inline(scenario: Scenario) -> Scenario | None:
    """``scenario`` with the inline tier on: a small file's bytes go with its unit of work.

    Faults of the blob stage need a file over the limit (the large payload); a
    duplicate stored again writes no blob to fail on, so those are left out;
    every other leftover blob disappears (an inline blob is written in the
    unit that records its FileItem, and goes when that unit does not commit).
    """
    blob_stage = any(f.point.startswith(("blob.", "disk.")) for f in scenario.faults)
    if scenario.payload == "large":
        return scenario
    if blob_stage:
        return None if scenario.stage == "duplicate" else attrs.evolve(scenario, payload="large")
    return attrs.evolve(scenario, leftovers=0)


INLINE = [
    *(s for s in map(_inline, COMMON + LOCAL_ONLY) if s is not None),
    # The inline write fails inside the unit: nothing was committed, nothing to check.
    Scenario("inline-write-fails", (Fault("inline_blobs.put"),), Expect.ERROR),
]

CASES = [
    *(pytest.param("local_rig", s, id=f"localdisk+sqlite-{s.id}") for s in COMMON + LOCAL_ONLY),
    *(pytest.param("local_inline_rig", s, id=f"localdisk+sqlite+inline-{s.id}") for s in INLINE),
    *(pytest.param("s3_rig", s, id=f"s3+postgresql-{s.id}") for s in COMMON + S3_ONLY),
]


def _payload(rig: Rig, scenario: Scenario) -> Iterator[bytes] | bytes:
    if scenario.payload == "small":
        return SMALL
    plan = rig.plan

    def stream() -> Iterator[bytes]:
        for chunk in chunks(rig.large):
            plan.call("input", lambda: None)
            yield chunk

    return stream()


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name.startswith("docbinder")
    ]


@pytest.mark.parametrize(("rig_name", "scenario"), CASES)
def test_fault_is_survived(
    rig_name: str,
    scenario: Scenario,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    rig: Rig = request.getfixturevalue(rig_name)
    run = rig.binder.start_new_run(U1)
    name = "report.bin"
    if scenario.stage == "duplicate":
        first = run.produce_file(name, SMALL)
        assert first.document_id is not None
    rig.plan.arm(*scenario.faults)
    outcome: object = None
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="docbinder"):
        try:
            if scenario.stage == "strict":
                stored = run.store_file(name, _payload(rig, scenario))
                outcome = run.attach(stored.item, label="strict")
            else:
                outcome = run.produce_file(name, _payload(rig, scenario), label="writeFile:r")
        except BaseException as exc:  # judged below against the scenario
            outcome = exc
    rig.plan.disarm()
    fired = list(rig.plan.fired)
    LEDGER.injected.update(fired)
    assert {f.point for f in scenario.faults} <= set(fired), f"faults did not fire: {fired}"

    # 1. what the caller saw
    if scenario.expect == Expect.ERROR:
        assert isinstance(outcome, DocbinderError), repr(outcome)
    elif scenario.expect == Expect.INPUT_ERROR:
        assert isinstance(outcome, InputBroke), repr(outcome)
    elif scenario.expect == Expect.NO_ATTACH:
        assert not isinstance(outcome, BaseException), repr(outcome)
        assert outcome.document_id is None  # type: ignore[attr-defined]
        assert "documentList ref" not in outcome.text  # type: ignore[attr-defined]
        assert outcome.text.endswith(f"file id: {outcome.item.id}")  # type: ignore[attr-defined]
    elif scenario.expect == Expect.DUPLICATE:
        assert not isinstance(outcome, BaseException), repr(outcome)
        assert outcome.duplicate and outcome.document_id is not None  # type: ignore[attr-defined]
    else:
        assert not isinstance(outcome, BaseException), repr(outcome)
        assert outcome.document_id is not None  # type: ignore[attr-defined]
    if scenario.warnings is not None:
        assert len(_warnings(caplog)) == scenario.warnings, _warnings(caplog)

    # 2. the invariants
    state = check_consistent(rig.uow_factory, rig.blobs)
    assert len([i for i in state.items if i.file_name == name]) == scenario.rows
    assert len(state.leftovers) == scenario.leftovers, sorted(state.leftovers)
    assert rig.extra_leftovers() == []

    # 3. gc finds every leftover, removes it, and nothing else
    dry = rig.gc(dry_run=True)
    assert sorted(dry["orphanBlobs"]) == sorted(state.leftovers)
    assert dry["orphanRows"] == [] and dry["staleTempFiles"] == []
    assert set(rig.blobs.keys()) == state.keys
    # Leftovers facing a database with no FileItem look like a wrong database_url:
    # gc refuses those unless forced, and says so in the dry run.
    ambiguous = bool(state.leftovers) and not state.items
    assert (dry["refusal"] is not None) == ambiguous, dry["refusal"]
    done = rig.gc(dry_run=False, force=ambiguous)
    assert sorted(done["orphanBlobs"]) == sorted(state.leftovers)
    after = check_consistent(rig.uow_factory, rig.blobs)
    assert after.leftovers == frozenset() and after.items == state.items

    # 4. the next store + attach works
    again = rig.binder.start_new_run(U1).produce_file("after.txt", b"after the fault")
    assert again.document_id is not None
    LEDGER.survived.update(fired)


def test_update_whose_commit_took_effect_keeps_its_blob(local_rig: Rig) -> None:
    item = local_rig.binder.start_run(U1).store_file("notes.md", b"# v1\n").item
    local_rig.plan.arm(Fault("commit", after=True))
    # The commit took effect although it reported a fault: the update counts as done.
    update = local_rig.binder.update_file.replace(U1, item.id, b"# v2\n")
    local_rig.plan.disarm()
    with local_rig.binder.open_file(U1, item.id) as chunks:
        assert b"".join(chunks) == b"# v2\n"
    assert update.item.size == 5
    assert local_rig.plan.fired == ["commit"]
    check_consistent(local_rig.uow_factory, local_rig.blobs)
