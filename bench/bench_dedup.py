"""The duplicate check among 10^4, 10^5 and 10^6 FileItems on SQLite and PostgreSQL (SPEC §6, C2).

Usage::

    python bench/bench_dedup.py [--sizes 10000,100000,1000000] [--backends sqlite,postgresql]
                                [--runs 5] [--out FILE]

Rows are bulk-inserted with SQLAlchemy Core into ``file_items`` (the table of
:mod:`docbinder.adapters.sql.schema`), in batches of 10,000, with
``dedup_key`` from :func:`docbinder.domain.model.duplicate_key`; the table
grows step by step to each size (spread over 50 mandates, 7 feature
instances and 1,000 users). SQLite is a temp file; PostgreSQL
(``127.0.0.1:5432/test``) gets a private schema that is dropped at the end.
PostgreSQL tables are ``ANALYZE``d after each step (what autovacuum does in
steady state); SQLite is left as docbinder leaves it (no ``ANALYZE``).

Timed at each size, ``--runs`` times: 200 calls of
:class:`docbinder.application.use_cases.check_duplicate.CheckDuplicate` (a unit of work, the
indexed lookup, the access check) for existing items (hits, caller = the
item's creator) and 200 for absent ones (misses); and 200 calls of
``FileRepository.find_duplicates`` inside one unit of work (the lookup
alone). Figures are medians over runs of the mean per call. The query plan
of the statement the check sends is recorded (``EXPLAIN QUERY PLAN`` /
``EXPLAIN``) to show the ``uq_file_items_dedup_key`` index is used.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import time
import uuid
from typing import Any

import benchlib

LOOKUPS = 200
INSERT_BATCH = 10_000


def _row(n: int, now: Any) -> dict[str, Any]:
    from docbinder.domain.model import Scope, duplicate_key

    sha = hashlib.sha256(f"content {n}".encode()).hexdigest()
    name = f"file-{n}.txt"
    user = f"user{n % 1000}"
    scope = Scope(f"mandate{n % 50}", None if n % 8 == 0 else f"feature{n % 7}")
    file_id = str(uuid.uuid4())
    return {
        "id": file_id,
        "file_name": name,
        "mime_type": "text/plain",
        "size": 100 + n % 5000,
        "sha256": sha,
        "created_by": user,
        "mandate_id": scope.mandate_id,
        "feature_instance_id": scope.feature_instance_id,
        "created_at": now,
        "blob_key": f"{file_id[:2]}/{file_id}",
        "folder": None,
        "tags": "[]",
        "dedup_key": duplicate_key(sha, name, user, scope),
    }


def _principal(row: dict[str, Any]) -> Any:
    from docbinder import Principal

    return Principal(
        user_id=row["created_by"],
        mandate_id=row["mandate_id"],
        feature_instance_id=row["feature_instance_id"],
        roles=("member",),
    )


def _grow(engine: Any, start: int, stop: int, now: Any) -> tuple[float, list[dict[str, Any]]]:
    """Insert rows ``start`` .. ``stop - 1``; return seconds and a random sample of them."""
    import sqlalchemy as sa

    from docbinder.adapters.sql.schema import file_items

    sample: list[dict[str, Any]] = []
    rng = random.Random(stop)
    started = time.perf_counter()
    for low in range(start, stop, INSERT_BATCH):
        rows = [_row(n, now) for n in range(low, min(low + INSERT_BATCH, stop))]
        with engine.begin() as conn:
            conn.execute(sa.insert(file_items), rows)
        sample.extend(rng.sample(rows, min(len(rows), 20)))
    seconds = time.perf_counter() - started
    if engine.dialect.name == "postgresql":
        with engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE file_items")
    return seconds, sample


def _measure(
    binder: Any, engine: Any, sample: list[dict[str, Any]], rng: random.Random, runs: int
) -> tuple[dict[str, list[float]], list[dict[str, Any]]]:
    """Per-call milliseconds of checks (hits, misses) and lookups; the plan of the check."""
    from docbinder.application.use_cases.check_duplicate import CheckDuplicate

    check = CheckDuplicate(binder.uow_factory, binder.access)
    hits = [rng.choice(sample) for _ in range(LOOKUPS)]
    misses = [
        {**rng.choice(sample), "sha256": hashlib.sha256(uuid.uuid4().bytes).hexdigest()}
        for _ in range(LOOKUPS)
    ]
    hit_args = [(_principal(r), r["sha256"], r["file_name"]) for r in hits]
    miss_args = [(_principal(r), r["sha256"], r["file_name"]) for r in misses]

    def run_checks(args: list[tuple[Any, str, str]], expect: bool) -> None:
        for principal, sha, name in args:
            found = check(principal, sha, name).item is not None
            if found != expect:
                raise SystemExit(f"duplicate check answered {found} for {name}")

    def run_finds(args: list[tuple[Any, str, str]]) -> None:
        with binder.uow_factory() as uow:
            for principal, sha, name in args:
                if not uow.files.find_duplicates(sha, name, principal.user_id, principal.scope):
                    raise SystemExit(f"find_duplicates missed {name}")

    run_checks(hit_args, True)  # warm-up
    series: dict[str, list[float]] = {"check_hit": [], "check_miss": [], "find": []}
    for _ in range(runs):
        series["check_hit"].append(benchlib.timed(lambda: run_checks(hit_args, True)))
        series["check_miss"].append(benchlib.timed(lambda: run_checks(miss_args, False)))
        series["find"].append(benchlib.timed(lambda: run_finds(hit_args)))
    per_call = {k: [v * 1000 / LOOKUPS for v in values] for k, values in series.items()}
    principal, sha, name = hit_args[0]
    plans = benchlib.explain_statements(engine, lambda: check(principal, sha, name))
    return per_call, plans


def bench_backend(backend: str, url: str, sizes: list[int], runs: int, home: Any) -> dict[str, Any]:
    binder = benchlib.build(url, "memory://", home)
    engine = benchlib.sql_engine(binder)
    now = binder.clock.now()
    rng = random.Random(42)
    figures: dict[str, Any] = {}
    sample: list[dict[str, Any]] = []
    have = 0
    try:
        for size in sizes:
            seconds, new_sample = _grow(engine, have, size, now)
            sample = (sample + new_sample)[-5000:]
            inserted, have = size - have, size
            benchlib.note(
                f"{backend}: {size:,} FileItems ({inserted:,} inserted in {seconds:.1f} s)"
            )
            series, plans = _measure(binder, engine, sample, rng, runs)
            figures[str(size)] = {
                "insert_seconds": round(seconds, 1),
                "inserted_rows": inserted,
                "insert_rows_per_s": round(inserted / seconds),
                "ms_per_call": {k: benchlib.summary(v) for k, v in series.items()},
                "query_plans": plans,
                "dedup_index_used": any(
                    "uq_file_items_dedup_key" in line for p in plans for line in p["plan"]
                ),
            }
    finally:
        engine.dispose()
    scale = {}
    if len(sizes) > 1:
        small, large = str(sizes[0]), str(sizes[-1])
        for key in ("check_hit", "check_miss", "find"):
            scale[key] = round(
                figures[large]["ms_per_call"][key]["median"]
                / figures[small]["ms_per_call"][key]["median"],
                3,
            )
    return {
        "by_size": figures,
        f"scale_{sizes[-1]}_over_{sizes[0]}": scale,
        "index_used_at_every_size": all(f["dedup_index_used"] for f in figures.values()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="FileItems, ascending")
    parser.add_argument("--backends", default="sqlite,postgresql", help="sqlite and/or postgresql")
    parser.add_argument("--runs", type=int, default=5, help="runs per size (at least 5)")
    parser.add_argument("--dir", default=None, help="parent of the temp directory")
    parser.add_argument("--out", default=None, help="also write the JSON report here")
    args = parser.parse_args(argv)
    benchlib.quiet_logs()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    if args.runs < 5:
        parser.error("--runs must be at least 5")
    report: dict[str, Any] = {
        "benchmark": "duplicate check vs number of FileItems",
        "machine": benchlib.machine_facts(),
        "config": {"sizes": sizes, "runs": args.runs, "lookups_per_run": LOOKUPS},
        "backends": {},
        "target": "index lookup, not a scan (plan uses uq_file_items_dedup_key; time flat)",
    }
    rows = []
    for backend in args.backends.split(","):
        with benchlib.temp_dir(f"dedup-{backend}", args.dir) as tmp:
            if backend == "sqlite":
                figures = bench_backend(
                    backend, f"sqlite:///{tmp / 'docbinder.db'}", sizes, args.runs, tmp
                )
            else:
                with benchlib.postgres_schema() as url:
                    figures = bench_backend(backend, url, sizes, args.runs, tmp)
        report["backends"][backend] = figures
        for size, fig in figures["by_size"].items():
            ms = fig["ms_per_call"]
            rows.append(
                [
                    backend,
                    f"{int(size):,}",
                    ms["check_hit"]["median"],
                    ms["check_miss"]["median"],
                    ms["find"]["median"],
                    "yes" if fig["dedup_index_used"] else "NO",
                ]
            )
    report["target_met"] = all(b["index_used_at_every_size"] for b in report["backends"].values())
    benchlib.note(
        benchlib.table(
            ["backend", "FileItems", "check hit ms", "check miss ms", "find ms", "dedup index"],
            rows,
        )
    )
    benchlib.emit(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
