"""A producer process killed with SIGKILL while storing a file (SQLite + local disk).

The child stores a 64 MiB file through docbinder and signals readiness at the
chosen moment by writing a marker file, then waits; the parent kills it with
SIGKILL there. Two moments: between the blob write and the metadata commit
(inside ``files.add``), and half-way through the blob write (the temp file is
on disk, the rename has not happened). Afterwards no FileItem lacks its blob,
and ``docbinder gc`` finds and removes what the killed process left.

With the inline tier (ADR 0110) the child stores a 1 KiB file whose bytes go
into the metadata database in the unit that records its FileItem: killed
before that unit commits, nothing of the file is anywhere; killed once
``produce_file`` returned, the file, its bytes and its ChatDocument are there
and ``gc`` takes nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from docbinder.adapters.inline import InlineTierBlobStore
from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.sql import migrate
from docbinder.adapters.sqlite import SqliteMetadata
from tests.reliability.harness import LEDGER, check_consistent, files_under, invoke_cli

REPO = Path(__file__).resolve().parents[2]
SIZE_MIB = 64

CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path

    from docbinder.adapters.extract import DefaultContentExtractor, SniffingMimeDetector
    from docbinder.adapters.inline import InlineTierBlobStore
    from docbinder.adapters.localdisk import LocalDiskBlobStore
    from docbinder.adapters.rbac import RoleTableAuthorizer
    from docbinder.adapters.sqlite import SqliteMetadata
    from docbinder.adapters.system import UtcClock, UuidIdFactory
    from docbinder.container import compose_binder
    from docbinder.domain.model import Principal

    database_url, blob_root, marker, moment, size_mib, inline_limit, size = sys.argv[1:8]
    metadata = SqliteMetadata.from_url(database_url)

    def ready_and_wait():
        Path(marker).write_text("ready")
        time.sleep(600)  # the parent kills us here
        raise SystemExit("not killed")

    class Files:
        def __init__(self, inner):
            self._inner = inner
        def __getattr__(self, name):
            return getattr(self._inner, name)
        def add(self, item, **kw):
            if moment == "before-commit":
                ready_and_wait()
            return self._inner.add(item, **kw)

    class Unit:
        def __init__(self, inner):
            self._inner = inner
            self.files = Files(inner.files)
            self.workflows = inner.workflows
            self.versions = inner.versions
            self.maintenance = inner.maintenance
            self.inline_blobs = inner.inline_blobs
        def __enter__(self):
            self._inner.__enter__()
            return self
        def __exit__(self, *exc):
            return self._inner.__exit__(*exc)
        def commit(self):
            self._inner.commit()
        def rollback(self):
            self._inner.rollback()

    units = lambda: Unit(metadata.unit_of_work())
    blobs = LocalDiskBlobStore(blob_root)
    if int(inline_limit):
        blobs = InlineTierBlobStore(
            blobs, metadata.unit_of_work, metadata.read_unit_of_work, limit=int(inline_limit)
        )
    binder = compose_binder(
        uow_factory=units,
        blobs=blobs,
        authorizer=RoleTableAuthorizer(),
        clock=UtcClock(),
        ids=UuidIdFactory(),
        extractor=DefaultContentExtractor(),
        mime=SniffingMimeDetector(),
    )

    def data():
        if int(size):
            yield bytes(range(256)) * (int(size) // 256)
            return
        chunk = bytes(range(256)) * 4096  # 1 MiB
        for index in range(int(size_mib)):
            if moment == "mid-blob" and index == int(size_mib) // 2:
                ready_and_wait()
            yield chunk

    run = binder.start_new_run(Principal("u1", "m1", "f1"))
    run.produce_file("large.bin", data(), label="download:large.bin")
    if moment == "after-return":
        ready_and_wait()
    raise SystemExit("finished without being killed")
    """
)


def _kill_at(
    moment: str, tmp_path: Path, *, inline_limit: int = 0, size: int = 0
) -> tuple[str, LocalDiskBlobStore, SqliteMetadata]:
    database_url = f"sqlite:///{tmp_path / 'docbinder.db'}"
    migrate(database_url)
    blob_root = tmp_path / "blobs"
    marker = tmp_path / "ready"
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCBINDER_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    child = subprocess.Popen(
        [
            sys.executable,
            str(script),
            database_url,
            str(blob_root),
            str(marker),
            moment,
            str(SIZE_MIB),
            str(inline_limit),
            str(size),
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            if child.poll() is not None:
                _out, err = child.communicate()
                pytest.fail(
                    f"child ended before the kill point: {child.returncode}\n{err.decode()}"
                )
            if time.monotonic() > deadline:
                pytest.fail("child never reached the kill point")
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == -signal.SIGKILL
    LEDGER.injected[f"sigkill.{moment}"] += 1
    return database_url, LocalDiskBlobStore(blob_root), SqliteMetadata.from_url(database_url)


def _gc(
    database_url: str, store: LocalDiskBlobStore, home: Path, *, dry_run: bool, force: bool = False
) -> dict[str, object]:
    args = ["--home", str(home), "--database-url", database_url, "--blob-url", store.url]
    # The crash left its leftovers a moment ago, and nothing writes any more.
    args += ["--json", "gc", "--grace", "0", "--below-grace-floor"]
    args += ["--dry-run"] if dry_run else ["--apply"]
    args += ["--force"] if force else []
    result = invoke_cli(args)
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    payload: dict[str, object] = json.loads(result.stdout)
    return payload


def test_killed_between_blob_write_and_metadata_commit(tmp_path: Path) -> None:
    database_url, store, metadata = _kill_at("before-commit", tmp_path)
    state = check_consistent(metadata.unit_of_work, store)
    assert state.items == ()
    [orphan] = state.leftovers
    assert store.stat(orphan).size == SIZE_MIB << 20
    assert store.stale_temp_files(0) == []

    dry = _gc(database_url, store, tmp_path / "home", dry_run=True)
    assert dry["orphanBlobs"] == [orphan] and dry["bytesFreed"] == SIZE_MIB << 20
    assert store.exists(orphan)
    # The database holds no FileItem while the store holds a blob: that is also what a
    # wrong database_url looks like, so gc refuses unless forced.
    assert "database_url" in str(dry["refusal"])
    args = ["--home", str(tmp_path / "home"), "--database-url", database_url]
    gc_args = ["gc", "--apply", "--grace", "0", "--below-grace-floor"]
    refused = invoke_cli([*args, "--blob-url", store.url, *gc_args])
    assert refused.exit_code == 1 and "database_url" in refused.stderr
    assert store.exists(orphan)
    done = _gc(database_url, store, tmp_path / "home", dry_run=False, force=True)
    assert done["orphanBlobs"] == [orphan] and done["forced"] is True
    assert files_under(store.root) == []
    # the workflow the child created is intact, without a message
    with metadata.unit_of_work() as uow:
        [workflow] = uow.workflows.list_workflows("m1")
        assert uow.workflows.list_messages(workflow.id) == []
    assert check_consistent(metadata.unit_of_work, store).items == ()
    LEDGER.survived["sigkill.before-commit"] += 1


def test_killed_half_way_through_the_blob_write(tmp_path: Path) -> None:
    database_url, store, metadata = _kill_at("mid-blob", tmp_path)
    state = check_consistent(metadata.unit_of_work, store)
    assert state.items == () and state.keys == frozenset()
    [temp] = store.stale_temp_files(0)
    assert temp.name.startswith(".tmp-") and temp.stat().st_size >= (SIZE_MIB // 2 - 1) << 20

    dry = _gc(database_url, store, tmp_path / "home", dry_run=True)
    assert dry["staleTempFiles"] == [str(temp)] and dry["orphanBlobs"] == []
    assert temp.exists()
    done = _gc(database_url, store, tmp_path / "home", dry_run=False)
    assert done["staleTempFiles"] == [str(temp)]
    assert files_under(store.root) == []
    LEDGER.survived["sigkill.mid-blob"] += 1


def _tier(store: LocalDiskBlobStore, metadata: SqliteMetadata) -> InlineTierBlobStore:
    return InlineTierBlobStore(store, metadata.unit_of_work, metadata.read_unit_of_work)


def test_killed_before_the_commit_of_a_small_inline_file(tmp_path: Path) -> None:
    database_url, store, metadata = _kill_at(
        "before-commit", tmp_path, inline_limit=64 * 1024, size=1024
    )
    tier = _tier(store, metadata)
    state = check_consistent(metadata.unit_of_work, tier)
    # The bytes were to be written in the unit that was never committed: nowhere now.
    assert state.items == () and state.keys == frozenset()
    assert tier.inline_totals() == (0, 0)
    assert files_under(store.root) == []
    dry = _gc(database_url, store, tmp_path / "home", dry_run=True)
    assert dry["orphanBlobs"] == [] and dry["refusal"] is None
    LEDGER.survived["sigkill.before-commit"] += 1


def test_a_small_inline_file_survives_once_produce_file_returned(tmp_path: Path) -> None:
    database_url, store, metadata = _kill_at(
        "after-return", tmp_path, inline_limit=64 * 1024, size=1024
    )
    tier = _tier(store, metadata)
    state = check_consistent(metadata.unit_of_work, tier)
    [item] = state.items
    assert state.keys == {item.blob_key}
    assert tier.is_inline(item.blob_key) and tier.is_committed(item.blob_key)
    with tier.open(item.blob_key) as chunks:
        assert b"".join(chunks) == bytes(range(256)) * 4
    assert files_under(store.root) == []  # no blob file: one commit held the bytes
    with metadata.unit_of_work() as uow:
        [workflow] = uow.workflows.list_workflows("m1")
        [message] = uow.workflows.list_messages(workflow.id)
        assert [d.file_id for d in message.documents] == [item.id]
    # gc, dry run and applied, keeps the inline blob its FileItem names.
    dry = _gc(database_url, store, tmp_path / "home", dry_run=True)
    assert dry["orphanBlobs"] == [] and dry["orphanRows"] == []
    done = _gc(database_url, store, tmp_path / "home", dry_run=False)
    assert done["orphanBlobs"] == [] and done["orphanRows"] == []
    assert tier.exists(item.blob_key)
    LEDGER.survived["sigkill.after-return"] += 1
