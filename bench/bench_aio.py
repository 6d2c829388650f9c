"""The async facade's cost: ``Run.produce_file`` against ``AsyncRun.produce_file`` (1 KiB).

Usage::

    python bench/bench_aio.py [--ops 200] [--runs 5] [--concurrency 8]

SQLite + local disk (the embedded default, shipped durability), one binder.
Three sides per round, order rotating between rounds: ``sync`` (the blocking
call in a loop), ``async`` (the same calls awaited one after the other through
:class:`~docbinder.aio.AsyncRun`: one worker-thread hop each) and
``async xN`` (``--concurrency`` tasks sharing the ops, worker threads bounded
by the binder's limiter). Every file has distinct content and name. Prints
median ops/s per side as JSON on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from docbinder import Principal
from docbinder.aio import AsyncDocBinder
from docbinder.container import build_binder

P = Principal(user_id="bench", mandate_id="m", feature_instance_id="f", roles=("member",))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        binder = build_binder(
            database_url=f"sqlite:///{root / 'd.db'}", blob_url=(root / "b").as_uri()
        )
        abinder = AsyncDocBinder(binder, max_threads=args.concurrency)
        run = binder.start_new_run(P)
        arun = abinder.wrap_run(run)
        counter = iter(range(10**9))

        def payload() -> tuple[str, bytes]:
            n = next(counter)
            return f"f{n}.bin", os.urandom(1024)

        def sync_side() -> float:
            start = time.perf_counter()
            for _ in range(args.ops):
                name, data = payload()
                run.produce_file(name, data, label=f"writeFile:{name}")
            return args.ops / (time.perf_counter() - start)

        async def async_side() -> float:
            start = time.perf_counter()
            for _ in range(args.ops):
                name, data = payload()
                await arun.produce_file(name, data, label=f"writeFile:{name}")
            return args.ops / (time.perf_counter() - start)

        async def concurrent_side() -> float:
            per_task = args.ops // args.concurrency

            async def worker() -> None:
                for _ in range(per_task):
                    name, data = payload()
                    await arun.produce_file(name, data, label=f"writeFile:{name}")

            start = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for _ in range(args.concurrency):
                    tg.start_soon(worker)
            return per_task * args.concurrency / (time.perf_counter() - start)

        sides = {
            "sync": sync_side,
            "async": lambda: anyio.run(async_side),
            f"async x{args.concurrency}": lambda: anyio.run(concurrent_side),
        }
        results: dict[str, list[float]] = {name: [] for name in sides}
        names = list(sides)
        for name in names:  # warm-up
            sides[name]()
        for r in range(args.runs):
            order = names[r % len(names) :] + names[: r % len(names)]
            for name in order:
                results[name].append(sides[name]())
        medians = {name: round(statistics.median(v), 1) for name, v in results.items()}
        medians["async/sync"] = round(medians["async"] / medians["sync"], 3)
        print(json.dumps({"ops": args.ops, "runs": args.runs, "ops_per_s": medians}))


if __name__ == "__main__":
    main()
