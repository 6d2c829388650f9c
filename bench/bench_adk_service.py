"""DocbinderArtifactService against Google ADK's FileArtifactService, through ADK's own async API.

Usage::

    python bench/bench_adk_service.py [--runs 3] [--out FILE]

Both services are ``BaseArtifactService`` objects in this process (google-adk
comes with docbinder's ``[adk]`` extra) and are called with the same
``await service.save_artifact(...)`` / ``load_artifact(...)`` in one asyncio
event loop, as an ADK ``Runner`` calls them:

* ``file``: ``FileArtifactService(root)`` (local files, no ``fsync``);
* ``docbinder``: ``DocbinderArtifactService(build_binder(...))`` on SQLite +
  local disk, the shipped configuration (SQLite ``synchronous=FULL``, blobs
  ``fsync``-ed), each session-scoped version also attached to the session's
  workflow as a ChatDocument;
* ``docbinder inline off``: the same with ``inline_blob_limit = 0``, every
  blob a local-disk file as before the inline tier (ADR 0110), for the
  before/after comparison in one run;
* ``docbinder no fsync``: the same with ``os.fsync`` a no-op during its turns
  and ``PRAGMA synchronous=OFF``, the durability of ``FileArtifactService``
  (which never calls ``fsync``); labelled, not the shipped configuration.

Measurements (session-scoped artifacts, distinct payloads per operation):

* save + load at 1 KiB and 10 MiB: one op = ``save_artifact`` of a new name +
  ``load_artifact`` of it (the loaded size is checked);
* saves at 1,000 versions: one name is filled with 1,000 versions (untimed),
  then ``--late`` more saves of that name are timed; docbinder's own
  reference is the same number of saves at versions 1 to 10 of fresh names
  (version 0 of each untimed).

Before every timed turn of the save + load measurements the page cache is
written back (``os.sync()``, untimed) and the sides' order rotates by one
per turn: ext4 in ``data=ordered`` mode makes a durable side's ``fsync``
also write the dirty pages an unsynced side left behind, so without the
sync the side after ``FileArtifactService`` paid for its writes.

Targets (issue 14): not slower than ``FileArtifactService`` at 1 KiB and
10 MiB; at 1,000 versions at least 4x its speed, and within 0.8x of
docbinder's own speed at version 1. Sides take turns in chunks in one run, so
they see the same machine conditions; ops/s are medians over ``--runs``.
A cProfile summary of docbinder's side at 1,000 versions is included.
Prints one JSON document on stdout and a table on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import benchlib
from sqlalchemy import event

APP, USER, SESSION = "bench", "alice", "session-1"
MIME = "application/octet-stream"
SIZES = {"1 KiB": (benchlib.KiB, 200, 20), "10 MiB": (10 * benchlib.MiB, 10, 2)}
"""label -> (bytes, ops per run, ops per turn)."""
NOSYNC = "docbinder no fsync"
"""Label of the side without fsync (not the shipped configuration)."""
INLINE_OFF = "docbinder inline off"
"""Label of the shipped configuration with ``inline_blob_limit = 0`` (before ADR 0110)."""
FILL = 1000
"""Versions a name holds before the late saves are timed."""


def _services(tmp: Path) -> dict[str, Any]:
    from google.adk.artifacts.file_artifact_service import FileArtifactService

    from docbinder.integrations.adk import DocbinderArtifactService

    def binder(home: Path, **settings: Any) -> Any:
        db, blobs = f"sqlite:///{home / 'docbinder.db'}", (home / "blobs").as_uri()
        return benchlib.build(db, blobs, home, **settings)

    unsynced = binder(tmp / "nosync")
    engine = benchlib.sql_engine(unsynced)

    def synchronous_off(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.execute("PRAGMA synchronous = OFF")

    event.listen(engine, "connect", synchronous_off)
    engine.dispose()
    return {
        "file": FileArtifactService(tmp / "adk-files"),
        "docbinder": DocbinderArtifactService(binder(tmp / "db"), mandate_id="bench"),
        INLINE_OFF: DocbinderArtifactService(
            binder(tmp / "off", inline_blob_limit=0), mandate_id="bench"
        ),
        NOSYNC: DocbinderArtifactService(unsynced, mandate_id="bench"),
    }


@contextlib.contextmanager
def guard(side: str) -> Iterator[None]:
    """``os.fsync`` is a no-op during the turns of the no-fsync side (ADK's file durability)."""
    if side != NOSYNC:
        yield
        return
    real = os.fsync
    os.fsync = _skip_fsync
    try:
        yield
    finally:
        os.fsync = real


def _skip_fsync(_fd: Any) -> None:
    """Stands in for ``os.fsync``: flushes nothing."""


def _part(data: bytes) -> Any:
    from google.genai import types

    return types.Part.from_bytes(data=data, mime_type=MIME)


def _payload(size: int) -> bytes:
    return os.urandom(16) + b"\0" * (size - 16) if size > 16 else os.urandom(size)


async def _save_load(service: Any, name: str, data: bytes) -> None:
    where = {"app_name": APP, "user_id": USER, "session_id": SESSION}
    await service.save_artifact(**where, filename=name, artifact=_part(data))
    part = await service.load_artifact(**where, filename=name)
    assert part is not None and len(part.inline_data.data) == len(data)


async def _save(service: Any, name: str, data: bytes) -> int:
    where = {"app_name": APP, "user_id": USER, "session_id": SESSION}
    version: int = await service.save_artifact(**where, filename=name, artifact=_part(data))
    return version


async def _timed(coros: list[Any]) -> float:
    started = time.perf_counter()
    for coro in coros:
        await coro
    return time.perf_counter() - started


def _rotated(services: dict[str, Any], turn: int) -> list[tuple[str, Any]]:
    """The sides in the order of ``turn``: each turn starts one side later, so none always follows the same one."""
    sides = list(services.items())
    start = turn % len(sides)
    return sides[start:] + sides[:start]


async def one_run(late: int) -> dict[str, float]:
    """ops/s of every side and measurement in one run (fresh stores)."""
    with benchlib.temp_dir("bench-adk-service-") as tmp:
        services = _services(tmp)
        spent: dict[str, float] = {}
        done: dict[str, int] = {}
        counter = 0
        for label, (size, ops, per_turn) in SIZES.items():
            for turn in range(ops // per_turn):
                for side, service in _rotated(services, turn):
                    calls = []
                    for _ in range(per_turn):
                        counter += 1
                        calls.append(_save_load(service, f"f{counter}.bin", _payload(size)))
                    key = f"{side} {label}"
                    os.sync()  # untimed: no side's turn pays for the writeback another side left
                    with guard(side):
                        spent[key] = spent.get(key, 0.0) + await _timed(calls)
                    done[key] = done.get(key, 0) + per_turn
        # 1,000 versions of one name on each side (untimed), then the late saves.
        small = benchlib.KiB
        for side, service in services.items():
            with guard(side):
                for _ in range(FILL):
                    await _save(service, "many.bin", _payload(small))
        for _turn in range(late // 10):
            for side, service in services.items():
                calls = [_save(service, "many.bin", _payload(small)) for _ in range(10)]
                key = f"{side} at {FILL} versions"
                with guard(side):
                    spent[key] = spent.get(key, 0.0) + await _timed(calls)
                done[key] = done.get(key, 0) + 10
            fresh = f"fresh{_turn}.bin"
            await _save(services["docbinder"], fresh, _payload(small))  # version 0, untimed
            calls = [_save(services["docbinder"], fresh, _payload(small)) for _ in range(10)]
            key = "docbinder at version 1"
            spent[key] = spent.get(key, 0.0) + await _timed(calls)
            done[key] = done.get(key, 0) + 10
        versions = await services["docbinder"].list_versions(
            app_name=APP, user_id=USER, session_id=SESSION, filename="many.bin"
        )
        assert versions == list(range(FILL + late)), "docbinder numbered the versions wrongly"
        return {key: done[key] / spent[key] for key in spent}


def profile_late(late: int) -> dict[str, Any]:
    """cProfile of ``late`` docbinder saves of a name that has 1,000 versions.

    Profiles the blocking part of a save (what the worker thread runs) in the
    main thread, since cProfile sees only the thread it runs in.
    """
    with benchlib.temp_dir("bench-adk-service-profile-") as tmp:
        service = _services(tmp)["docbinder"]
        scope = service._scope(APP, USER, "many.bin", SESSION)
        host = {"part": "inline", "mime_type": MIME}

        def save() -> None:
            service._save_sync(scope, "many.bin", _payload(benchlib.KiB), MIME, {}, host)

        for _ in range(FILL):
            save()

        def late_saves() -> None:
            for _ in range(late):
                save()

        return benchlib.profile_top(late_saves, per=late)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--late", type=int, default=50, help="timed saves at 1,000 versions")
    parser.add_argument("--out")
    args = parser.parse_args()
    benchlib.quiet_logs()
    runs = []
    for i in range(args.runs):
        runs.append(asyncio.run(one_run(args.late)))
        benchlib.note(f"run {i + 1}/{args.runs} done")
    keys = list(runs[0])
    results = {key: benchlib.summary([r[key] for r in runs], 1) for key in keys}

    def ratio(a: str, b: str) -> dict[str, Any]:
        return benchlib.summary([r[a] / r[b] for r in runs])

    ratios = {
        "docbinder no fsync / file, 1 KiB save+load (same durability)": ratio(
            f"{NOSYNC} 1 KiB", "file 1 KiB"
        ),
        "docbinder no fsync / file, 10 MiB save+load (same durability)": ratio(
            f"{NOSYNC} 10 MiB", "file 10 MiB"
        ),
        "docbinder / file, 1 KiB save+load (target >= 1)": ratio("docbinder 1 KiB", "file 1 KiB"),
        "docbinder / file, 10 MiB save+load (target >= 1)": ratio(
            "docbinder 10 MiB", "file 10 MiB"
        ),
        f"docbinder / file, save at {FILL} versions (target >= 4)": ratio(
            f"docbinder at {FILL} versions", f"file at {FILL} versions"
        ),
        "docbinder / docbinder inline off, 1 KiB save+load (the inline tier's gain)": ratio(
            "docbinder 1 KiB", f"{INLINE_OFF} 1 KiB"
        ),
        "docbinder inline off / file, 1 KiB save+load (before the inline tier)": ratio(
            f"{INLINE_OFF} 1 KiB", "file 1 KiB"
        ),
        "docbinder inline off / file, 10 MiB save+load": ratio(
            f"{INLINE_OFF} 10 MiB", "file 10 MiB"
        ),
        f"docbinder at {FILL} / docbinder at version 1 (target >= 0.8)": ratio(
            f"docbinder at {FILL} versions", "docbinder at version 1"
        ),
    }
    report = {
        "benchmark": "bench_adk_service",
        "machine": benchlib.machine_facts(),
        "runs": args.runs,
        "late_saves": args.late,
        "ops_per_second": results,
        "ratios": ratios,
        "profile_docbinder_late_save": profile_late(args.late),
    }
    benchlib.note(
        benchlib.table(
            ["measurement", "ops/s (median)", "min", "max"],
            [[k, v["median"], v["min"], v["max"]] for k, v in results.items()],
        )
    )
    benchlib.note(
        benchlib.table(
            ["ratio", "median", "min", "max"],
            [[k, v["median"], v["min"], v["max"]] for k, v in ratios.items()],
        )
    )
    benchlib.emit(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
