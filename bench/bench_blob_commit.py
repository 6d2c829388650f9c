"""The local-disk store's share of an attach: ``put`` of 1 KiB, then ``mark_committed`` (ADR 0045).

Usage::

    python bench/bench_blob_commit.py [--ops 300] [--runs 5] [--dir PARENT] [--out FILE]

Each run makes a fresh store under ``--dir`` (default: the system temp
directory; ``/dev/shm`` for CPU cost only), gives it an identity and one
registered database (so every blob gets its compact mark, as in the product),
stores 20 blobs as a warm-up, then times ``--ops`` pairs of ``put`` (1 KiB of
random bytes, keys spread over 256 shard directories as docbinder's are) and
``mark_committed``. Wall time (``time.perf_counter``) and CPU time
(``time.process_time``, user + system) per pair are in microseconds; the
report gives the median, minimum and maximum over the runs. Nothing else of
docbinder runs, so two trees can be compared by running this script from
each in turn (``PYTHONPATH=<tree> python <tree>/bench/bench_blob_commit.py``).
Prints one JSON object on stdout and a summary on stderr.
"""

from __future__ import annotations

import argparse
import random
import time

import benchlib

DATABASE = "2c9e4b71-5d3a-4f6e-8b1c-7a0d9e8f6b5c"
WARM_UP = 20


def one_run(ops: int, parent: str | None, seed: int) -> tuple[float, float]:
    """Wall and CPU microseconds per ``put`` + ``mark_committed`` pair, for one fresh store."""
    from docbinder.adapters.localdisk import LocalDiskBlobStore

    rng = random.Random(seed)
    payloads = [rng.randbytes(1024) for _ in range(ops + WARM_UP)]
    with benchlib.temp_dir("blob-commit", parent) as place:
        store = LocalDiskBlobStore(place / "blobs")
        store.identity(create=True)
        store.register_database(DATABASE)
        for n in range(WARM_UP):
            key = f"zz/zz{n:030d}"
            store.put(key, [payloads[n]])
            store.mark_committed(key)
        cpu, started = time.process_time(), time.perf_counter()
        for n in range(ops):
            shard = f"{n % 256:02x}"
            key = f"{shard}/{shard}{n:030d}"
            store.put(key, [payloads[WARM_UP + n]])
            store.mark_committed(key)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return wall / ops * 1e6, cpu / ops * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--ops", type=int, default=300, help="put + mark pairs per run")
    parser.add_argument("--runs", type=int, default=5, help="runs, each on a fresh store")
    parser.add_argument("--dir", default=None, help="parent of the temp directory")
    parser.add_argument("--out", default=None, help="also write the JSON report here")
    args = parser.parse_args()
    if args.runs < 5 or args.ops < 1:
        parser.error("--runs must be at least 5 and --ops at least 1")
    benchlib.quiet_logs()
    walls: list[float] = []
    cpus: list[float] = []
    for run in range(args.runs):
        wall, cpu = one_run(args.ops, args.dir, seed=run)
        walls.append(wall)
        cpus.append(cpu)
        benchlib.note(f"run {run + 1}/{args.runs}: {wall:.1f} µs wall, {cpu:.1f} µs CPU per pair")
    report = {
        "benchmark": "blob_commit",
        "machine": benchlib.machine_facts(),
        "config": {"ops": args.ops, "runs": args.runs, "dir": args.dir, "blob_bytes": 1024},
        "wall_us_per_pair": benchlib.summary(walls, 1),
        "cpu_us_per_pair": benchlib.summary(cpus, 1),
    }
    benchlib.note(
        benchlib.table(
            ["per put + mark_committed", "median µs", "min", "max"],
            [
                ["wall", *(report["wall_us_per_pair"][k] for k in ("median", "min", "max"))],
                ["CPU", *(report["cpu_us_per_pair"][k] for k in ("median", "min", "max"))],
            ],
        )
    )
    benchlib.emit(report, args.out)


if __name__ == "__main__":
    main()
