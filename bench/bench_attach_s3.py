"""Attaching a 1 KiB file on SQLite + S3 (moto on loopback), inline tier off against on (ADR 0110).

Usage::

    python bench/bench_attach_s3.py [--ops 100] [--runs 5] [--out FILE]

Two binders over one moto server (a separate process on 127.0.0.1, its own
bucket prefix each) and a SQLite database each, in the shipped configuration:

* ``inline off``: ``inline_blob_limit = 0``, every file is a ``PutObject``
  (and the committed-blob tag, ``PutObjectTagging``) before and after its
  SQLite commit, as before the inline tier;
* ``inline on``: the default 64 KiB limit: the 1 KiB file's bytes are written
  in the SQLite transaction that records its FileItem and ChatDocument; no S3
  request at all.

One op is ``Run.produce_file`` of a distinct 1 KiB payload under a distinct
name. Each of ``--runs`` rounds times ``--ops`` attaches per side, the sides
taking turns in chunks of 10 (order alternating between rounds); ops/s and
median latency in milliseconds are reported per side, and the speed-up is the
median of the per-round ratios (target, issue 36: at least 3x). Prints one
JSON document on stdout and a table on stderr, with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import benchlib

SIDES = {"inline off": 0, "inline on": 64 * 1024}
"""side -> inline_blob_limit in bytes."""


def _binder(tmp: Path, endpoint: str, side: str, limit: int) -> Any:
    home = tmp / side.replace(" ", "-")
    return benchlib.build(
        f"sqlite:///{home / 'docbinder.db'}",
        f"s3://docbinder-bench/{side.replace(' ', '-')}",
        home,
        s3_endpoint_url=endpoint,
        s3_region="us-east-1",
        inline_blob_limit=limit,
    )


def run_bench(ops: int, runs: int, chunk: int) -> dict[str, Any]:
    import boto3

    from docbinder import Principal

    principal = Principal("alice", "acme", "support", roles=("member",))
    with benchlib.temp_dir("bench-attach-s3-") as tmp, benchlib.moto_server() as endpoint:
        os.environ.update(benchlib.S3_ENV)
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(
            Bucket="docbinder-bench"
        )
        binders = {side: _binder(tmp, endpoint, side, limit) for side, limit in SIDES.items()}
        counter = iter(range(10**9))

        def attacher(side: str) -> Callable[[], float]:
            run = binders[side].start_new_run(principal)

            def attach() -> float:
                name = f"f{next(counter)}.json"
                started = time.perf_counter()
                result = run.produce_file(name, os.urandom(1024), label=f"writeFile:{name}")
                spent = time.perf_counter() - started
                if result.document_id is None or result.duplicate:
                    raise SystemExit(f"attach failed on {side}")
                return spent

            return attach

        for side in SIDES:  # warm-up: connections, identity, registration
            warm = attacher(side)
            for _ in range(20):
                warm()
        rates: dict[str, list[float]] = {side: [] for side in SIDES}
        latencies: dict[str, list[float]] = {side: [] for side in SIDES}
        order = list(SIDES)
        for _round in range(runs):
            attach = {side: attacher(side) for side in SIDES}
            spent = dict.fromkeys(SIDES, 0.0)
            for _turn in range(ops // chunk):
                for side in order:
                    for _ in range(chunk):
                        seconds = attach[side]()
                        spent[side] += seconds
                        latencies[side].append(seconds * 1000)
            for side in SIDES:
                rates[side].append(ops // chunk * chunk / spent[side])
            order.reverse()
            benchlib.note(
                f"round {_round + 1}: "
                + ", ".join(f"{side} {rates[side][-1]:.0f} ops/s" for side in SIDES)
            )
        for binder in binders.values():
            binder.close()
    per_round = [on / off for on, off in zip(rates["inline on"], rates["inline off"], strict=True)]
    return {
        "machine": benchlib.machine_facts(),
        "ops_per_round": ops // chunk * chunk,
        "runs": runs,
        "ops_per_s": {side: benchlib.summary(v, 1) for side, v in rates.items()},
        "latency_ms_median": {side: round(benchlib.median(v), 2) for side, v in latencies.items()},
        "speedup_per_round": benchlib.summary(per_round),
        "target": "inline on >= 3x inline off (issue 36)",
        "note": "moto server in a separate process on 127.0.0.1; SQLite synchronous as shipped",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--ops", type=int, default=100, help="attaches per side per round")
    parser.add_argument("--runs", type=int, default=5, help="timed rounds")
    parser.add_argument("--chunk", type=int, default=10, help="attaches per turn")
    parser.add_argument("--out", default=None, help="also write the JSON report here")
    args = parser.parse_args(argv)
    benchlib.quiet_logs()
    report = run_bench(args.ops, args.runs, args.chunk)
    benchlib.note(
        benchlib.table(
            ["side", "median ops/s", "min", "max", "median latency ms"],
            [
                [side, s["median"], s["min"], s["max"], report["latency_ms_median"][side]]
                for side, s in report["ops_per_s"].items()
            ],
        )
    )
    benchlib.note(
        f"speed-up (median of per-round ratios): {report['speedup_per_round']['median']}x; "
        f"load average {report['machine']['load_average_1_5_15']}"
    )
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
