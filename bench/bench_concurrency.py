"""Attach throughput with 1, 2, 4 and 8 worker threads on PostgreSQL (SPEC §6, C3, C12).

Usage::

    python bench/bench_concurrency.py [--threads 1,2,4,8] [--ops 240] [--runs 5]
                                      [--blobs file,memory] [--out FILE]

Metadata: PostgreSQL at 127.0.0.1:5432/test in a private schema (made,
migrated with docbinder's migrations, dropped at the end); the engine is the
one docbinder builds (READ COMMITTED, the default pool). Blobs: local disk
(temp dir, the store's full durability) and, to isolate the metadata path,
memory.

Each thread count runs ``--ops`` attaches in total, split evenly: every
thread has its own principal (a member of one mandate) and its own
``Run`` (its own workflow, created before the clock starts), and calls
``Run.produce_file`` with distinct 1 KiB files. The threads start together
behind a barrier; ops/s = total attaches / wall time until the last thread
ends. Errors counted: exceptions, attaches without a ChatDocument id, and
docbinder log records at WARNING or above (attach failures are logged, never
raised); afterwards every workflow is read back and must hold exactly its
thread's messages, numbered 1..n without gaps. Thread counts rotate between
runs; figures are medians over ``--runs`` runs. Per blob store, 40
attaches in the main thread are profiled (cProfile), counting SQL
statements, commits, rollbacks and pool check-outs per attach (each is at
least one round trip to the server; a check-out adds a ``pool_pre_ping``).
"""

from __future__ import annotations

import argparse
import logging
import os
import threading
import time
from typing import Any

import benchlib

SIZE = benchlib.KiB


class Counter(logging.Handler):
    """Counts docbinder's log records at WARNING and above."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0
        self.examples: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        if len(self.examples) < 5:
            self.examples.append(record.getMessage())


def one_round(binder: Any, threads: int, ops: int, tag: str) -> dict[str, Any]:
    """``ops`` attaches over ``threads`` threads; wall seconds, errors, read-back check."""
    from docbinder import Principal

    per_thread = ops // threads
    barrier = threading.Barrier(threads + 1)
    errors: list[str] = []
    runs: list[Any] = []
    lock = threading.Lock()

    def worker(index: int) -> None:
        principal = Principal(user_id=f"user-{tag}-{index}", mandate_id="acme", roles=("member",))
        try:
            run = binder.start_new_run(principal)
        except Exception as exc:
            with lock:
                errors.append(f"start_new_run: {exc!r}")
            barrier.abort()
            return
        with lock:
            runs.append(run)
        payloads = [os.urandom(SIZE) for _ in range(per_thread)]
        barrier.wait()
        for n, data in enumerate(payloads):
            name = f"t{index}-{n}.bin"
            try:
                result = run.produce_file(name, data, label=f"writeFile:{name}")
            except Exception as exc:
                with lock:
                    errors.append(f"produce_file: {exc!r}")
                continue
            if result.document_id is None or result.duplicate:
                with lock:
                    errors.append(f"no ChatDocument for {name}")

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in pool:
        thread.join()
    seconds = time.perf_counter() - started
    for run in runs:
        messages = binder.list_messages(run.principal, run.workflow.id)
        numbers = [m.sequence_nr for m in messages]
        if numbers != list(range(1, per_thread + 1)):
            errors.append(f"workflow {run.workflow.id}: sequence numbers {numbers[:5]}...")
    return {"seconds": seconds, "ops": per_thread * threads, "errors": errors}


def _profile_one_thread(binder: Any, blobs: str, ops: int = 40) -> tuple[Any, dict[str, float]]:
    """cProfile of ``ops`` attaches in this thread, and SQL events per attach."""
    from sqlalchemy import event

    from docbinder import Principal

    engine = benchlib.sql_engine(binder)
    run = binder.start_new_run(
        Principal(user_id=f"user-{blobs}-profile", mandate_id="acme", roles=("member",))
    )
    payloads = [os.urandom(SIZE) for _ in range(ops)]
    counts = dict.fromkeys(("statements", "commits", "rollbacks", "checkouts"), 0)

    def counter(name: str) -> Any:
        def bump(*_args: Any) -> None:
            counts[name] += 1

        return bump

    hooks = [
        (engine, "before_cursor_execute", counter("statements")),
        (engine, "commit", counter("commits")),
        (engine, "rollback", counter("rollbacks")),
        (engine.pool, "checkout", counter("checkouts")),
    ]
    for target, name, fn in hooks:
        event.listen(target, name, fn)

    def produce() -> None:
        for n, data in enumerate(payloads):
            name = f"profile-{n}.bin"
            if run.produce_file(name, data, label=f"writeFile:{name}").document_id is None:
                raise SystemExit("attach failed while profiling")

    try:
        profile = benchlib.profile_top(produce, per=ops, limit=12)
    finally:
        for target, name, fn in hooks:
            event.remove(target, name, fn)
    return profile, {k: round(v / ops, 2) for k, v in counts.items()}


def bench_blobs(
    url: str, blobs: str, thread_counts: list[int], ops: int, runs: int, tmp: Any, log: Counter
) -> dict[str, Any]:
    home = tmp / blobs
    blob_url = "memory://" if blobs == "memory" else (home / "blobs").as_uri()
    binder = benchlib.build(url, blob_url, home)
    try:
        one_round(binder, 2, 20, f"{blobs}-warmup")
        rates: dict[int, list[float]] = {n: [] for n in thread_counts}
        errors: dict[int, list[str]] = {n: [] for n in thread_counts}
        warnings_before = log.count
        order = list(thread_counts)
        for run_nr in range(runs):
            for threads in order:
                result = one_round(binder, threads, ops, f"{blobs}-{run_nr}-{threads}")
                rates[threads].append(result["ops"] / result["seconds"])
                errors[threads].extend(result["errors"])
            benchlib.note(
                f"{blobs} run {run_nr + 1}/{runs}: "
                + ", ".join(f"{n} threads {rates[n][-1]:.0f} ops/s" for n in thread_counts)
            )
            order = order[1:] + order[:1]
        profile, counts = _profile_one_thread(binder, blobs)
    finally:
        benchlib.sql_engine(binder).dispose()
    base = benchlib.median(rates[thread_counts[0]])
    return {
        "ops_per_s": {str(n): benchlib.summary(v, 1) for n, v in rates.items()},
        "speedup_over_1_thread": {
            str(n): round(benchlib.median(v) / base, 2) for n, v in rates.items()
        },
        "errors": {str(n): len(e) for n, e in errors.items()},
        "error_examples": [e for v in errors.values() for e in v][:5],
        "warning_log_records": log.count - warnings_before,
        "sql_per_attach_1_thread": counts,
        "profile_1_thread": profile,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--threads", default="1,2,4,8", help="thread counts")
    parser.add_argument("--ops", type=int, default=240, help="attaches per thread count and run")
    parser.add_argument("--runs", type=int, default=5, help="runs (at least 5)")
    parser.add_argument("--blobs", default="file,memory", help="blob stores: file and/or memory")
    parser.add_argument("--dir", default=None, help="parent of the temp directory")
    parser.add_argument("--out", default=None, help="also write the JSON report here")
    args = parser.parse_args(argv)
    thread_counts = [int(n) for n in args.threads.split(",")]
    if args.runs < 5 or any(args.ops % n for n in thread_counts):
        parser.error("--runs must be at least 5 and --ops divisible by every thread count")
    benchlib.quiet_logs()
    log = Counter()
    logging.getLogger("docbinder").addHandler(log)
    report: dict[str, Any] = {
        "benchmark": "attach throughput vs worker threads on PostgreSQL",
        "machine": benchlib.machine_facts(),
        "config": {
            "threads": thread_counts,
            "ops_per_round": args.ops,
            "runs": args.runs,
            "file_size_bytes": SIZE,
            "metadata": "PostgreSQL 127.0.0.1:5432/test, private schema",
        },
        "blobs": {},
    }
    with benchlib.temp_dir("concurrency", args.dir) as tmp, benchlib.postgres_schema() as url:
        import sqlalchemy as sa

        engine = sa.create_engine(url)
        with engine.connect() as conn:
            report["config"]["postgresql"] = conn.exec_driver_sql("SHOW server_version").scalar()
        engine.dispose()
        for blobs in args.blobs.split(","):
            report["blobs"][blobs] = bench_blobs(
                url, blobs, thread_counts, args.ops, args.runs, tmp, log
            )
    report["total_errors"] = sum(
        sum(b["errors"].values()) + b["warning_log_records"] for b in report["blobs"].values()
    )
    rows = []
    for blobs, fig in report["blobs"].items():
        for n in thread_counts:
            rows.append(
                [
                    blobs,
                    n,
                    fig["ops_per_s"][str(n)]["median"],
                    fig["speedup_over_1_thread"][str(n)],
                    fig["errors"][str(n)],
                ]
            )
    benchlib.note(
        benchlib.table(["blobs", "threads", "median ops/s", "x 1 thread", "errors"], rows)
        + f"\ntotal errors (incl. warning log records): {report['total_errors']}"
    )
    benchlib.emit(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
