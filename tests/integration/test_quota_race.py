"""Several processes storing into one scope at once never overshoot its quota (B12, ADR 0090).

Each backend (SQLite file, PostgreSQL, MariaDB) gets a fresh migrated
database; worker processes (``spawn``: nothing shared but the database and
the blob directory) each build their own binder and store one file at the
same moment. Exactly as many stores succeed as the quota admits; the others
get ``QuotaExceeded`` and leave nothing.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from docbinder.container import build_binder
from docbinder.domain.model import Principal, Scope
from tests.contract.sql_backends import SQL_BACKENDS, provision

WORKERS = 6
ALLOWED = 2
SIZE = 1000


def _racer(url: str, blob_dir: str, index: int, barrier: object, results: object) -> None:
    binder = build_binder(database_url=url, blob_url=f"file://{blob_dir}", prepare=False)
    try:
        principal = Principal(f"user-{index}", "race", "fi")
        barrier.wait(timeout=60)  # type: ignore[attr-defined]
        try:
            binder.store_file(principal, f"f{index}.bin", [bytes([index]) * SIZE])
            outcome = "stored"
        except Exception as exc:
            outcome = type(exc).__name__
        results.put(outcome)  # type: ignore[attr-defined]
    finally:
        binder.close()


@pytest.mark.parametrize("backend_name", SQL_BACKENDS)
def test_concurrent_processes_never_overshoot_a_quota(backend_name: str, tmp_path: Path) -> None:
    with provision(backend_name, tmp_path) as backend:
        url = backend.url.render_as_string(hide_password=False)
        blob_dir = tmp_path / "blobs"
        blob_dir.mkdir()
        setup = build_binder(database_url=url, blob_url=f"file://{blob_dir}", prepare=False)
        try:
            setup.quotas.set(Scope("race"), max_bytes=ALLOWED * SIZE)
            setup.quotas.set(Scope("race", "fi"), max_files=WORKERS)
        finally:
            setup.close()
        context = multiprocessing.get_context("spawn")
        barrier = context.Barrier(WORKERS)
        results = context.Queue()
        workers = [
            context.Process(target=_racer, args=(url, str(blob_dir), i, barrier, results))
            for i in range(WORKERS)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=180)
        outcomes = sorted(results.get(timeout=10) for _ in workers)
        assert all(worker.exitcode == 0 for worker in workers)
        assert outcomes == ["QuotaExceeded"] * (WORKERS - ALLOWED) + ["stored"] * ALLOWED
        check = build_binder(database_url=url, blob_url=f"file://{blob_dir}", prepare=False)
        try:
            whole = check.quotas.show(Scope("race"))
            feature = check.quotas.show(Scope("race", "fi"))
            with check.uow_factory() as uow:
                counted = uow.quotas.usage(Scope("race"))
        finally:
            check.close()
        assert (whole.used_bytes, whole.used_files) == (ALLOWED * SIZE, ALLOWED)
        assert (feature.used_bytes, feature.used_files) == (ALLOWED * SIZE, ALLOWED)
        assert counted == (ALLOWED * SIZE, ALLOWED)


STORERS = 4
CYCLES = 6
LIMIT = 10_000


def _storer(
    url: str, blob_dir: str, index: int, barrier: object, stop: object, results: object
) -> None:
    binder = build_binder(database_url=url, blob_url=f"file://{blob_dir}", prepare=False)
    stored = refused = 0
    try:
        principal = Principal(f"writer-{index}", "count", "fi")
        barrier.wait(timeout=60)  # type: ignore[attr-defined]
        number = 0
        while not stop.is_set():  # type: ignore[attr-defined]
            number += 1
            try:
                binder.store_file(
                    principal, f"w{index}-{number}.bin", [f"{index}:{number}".encode()]
                )
                stored += 1
            except Exception as exc:
                if type(exc).__name__ != "QuotaExceeded":
                    raise
                refused += 1
        results.put((stored, refused))  # type: ignore[attr-defined]
    finally:
        binder.close()


def _setter(url: str, blob_dir: str, barrier: object, stop: object, results: object) -> None:
    binder = build_binder(database_url=url, blob_url=f"file://{blob_dir}", prepare=False)
    try:
        barrier.wait(timeout=60)  # type: ignore[attr-defined]
        counted = []
        for _ in range(CYCLES):
            # Each cycle makes the quota anew while the writers store: the count of a new
            # quota is the moment a file in flight could be missed.
            binder.quotas.remove(Scope("count"))
            counted.append(binder.quotas.set(Scope("count"), max_files=LIMIT).used_files)
        results.put(counted)  # type: ignore[attr-defined]
    finally:
        stop.set()  # type: ignore[attr-defined]
        binder.close()


@pytest.mark.parametrize("backend_name", SQL_BACKENDS)
def test_setting_a_quota_while_processes_store_counts_every_file_once(
    backend_name: str, tmp_path: Path
) -> None:
    """``quota set`` of a new quota while four processes store: its usage is then exact (ADR 0096)."""
    with provision(backend_name, tmp_path) as backend:
        url = backend.url.render_as_string(hide_password=False)
        blob_dir = tmp_path / "blobs"
        blob_dir.mkdir()
        context = multiprocessing.get_context("spawn")
        barrier = context.Barrier(STORERS + 1)
        stop = context.Event()
        results = context.Queue()
        storers = [
            context.Process(target=_storer, args=(url, str(blob_dir), i, barrier, stop, results))
            for i in range(STORERS)
        ]
        setter = context.Process(target=_setter, args=(url, str(blob_dir), barrier, stop, results))
        for process in [*storers, setter]:
            process.start()
        for process in [setter, *storers]:
            process.join(timeout=300)
        assert all(p.exitcode == 0 for p in [setter, *storers])
        outcomes = [results.get(timeout=10) for _ in range(STORERS + 1)]
        [counted] = [o for o in outcomes if isinstance(o, list)]
        stores = [o for o in outcomes if isinstance(o, tuple)]
        stored = sum(s for s, _ in stores)
        assert stored > 0 and all(r == 0 for _, r in stores)  # the limit is never reached
        assert counted == sorted(counted)  # each count saw at least the files of the one before
        check = build_binder(database_url=url, blob_url=f"file://{blob_dir}", prepare=False)
        try:
            quota = check.quotas.show(Scope("count"))
            with check.uow_factory() as uow:
                really = uow.quotas.usage(Scope("count"))
        finally:
            check.close()
        assert really[1] == stored
        assert (quota.used_bytes, quota.used_files) == really
