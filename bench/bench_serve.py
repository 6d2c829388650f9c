"""``docbinder serve`` on more than one machine's worth of processes, and its download speed.

``python bench/bench_serve.py [--processes 4] [--clients 64] [--requests 3000] [--out FILE]``

1. **Load**: ``--processes`` ``docbinder serve`` processes on one PostgreSQL schema
   (127.0.0.1:5432, dropped afterwards) and one S3 bucket (a moto server process on
   loopback), ``--clients`` concurrent clients sending ``--requests`` mixed requests
   (uploads, downloads, resolves, link mint + redeem; :mod:`tests.e2e.serve_load`), then
   the check that nothing was lost. Reports p50/p99 per kind of request, errors, lost.
2. **Downloads**: one ``docbinder serve`` on SQLite + local disk against Starlette's own
   ``FileResponse`` of the same bytes from disk (``bench/file_response_floor.py``), both
   under uvicorn's h11 protocol, one keep-alive client, sides taking turns in rounds:
   MiB/s at 10 MiB and requests/s at 1 KiB, through ``/v1/files/{id}/content`` and through
   a signed link (``/v1/links/<token>``).

Only loopback addresses are contacted; every loop is bounded by its count.
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import time
from typing import Any

import anyio
import httpx
from benchlib import (
    ROOT,
    S3_ENV,
    emit,
    free_port,
    machine_facts,
    median,
    moto_server,
    note,
    postgres_schema,
    table,
    temp_dir,
)

sys.path.insert(0, str(ROOT))

from tests.e2e.serve_load import run_load
from tests.e2e.serve_process import LINK_KEY, ServeProcess, serve_env


def load(processes: int, clients: int, requests: int, **settings: str) -> dict[str, Any]:
    import boto3

    from docbinder.adapters.sql import migrate

    with temp_dir("docbinder-bench-serve") as tmp, postgres_schema() as url, moto_server() as s3:
        boto3.client(
            "s3",
            endpoint_url=s3,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ).create_bucket(Bucket="bench-serve")
        migrate(url)
        env = serve_env(
            database_url=url,
            blob_url="s3://bench-serve/serve",
            s3_endpoint_url=s3,
            link_keys=LINK_KEY,
            **settings,
        )
        env.update(S3_ENV)
        servers = [ServeProcess(tmp / f"home-{n}", env, "--no-mcp") for n in range(processes)]
        try:
            note(f"load: {processes} processes, {clients} clients, {requests} requests")
            report = anyio.run(
                lambda: run_load(
                    [s.url for s in servers], clients=clients, requests=requests, workflows=32
                )
            )
        finally:
            for server in servers:
                server.stop()
            logs = {
                server.url: server.stderr_text().splitlines()[-40:]
                for server in servers
                if report.errors or report.retried or "Traceback" in server.stderr_text()
            }
    figures = report.percentiles()
    note(
        table(
            ["request", "count", "p50 ms", "p99 ms"],
            [[k, v["count"], v["p50_ms"], v["p99_ms"]] for k, v in figures.items()],
        )
    )
    note(
        f"errors {len(report.errors)}, lost {len(report.lost)}, "
        f"GETs retried on a closed connection {len(report.retried)}, "
        f"client loop late by up to {report.loop_lag:.2f} s, {report.requests} requests "
        f"in {report.seconds:.1f} s ({report.requests / report.seconds:.0f}/s)"
    )
    return {
        "processes": processes,
        "clients": clients,
        "requests": report.requests,
        "seconds": round(report.seconds, 2),
        "requests_per_second": round(report.requests / report.seconds, 1),
        "errors": report.errors[:20],
        "error_count": len(report.errors),
        "retried": report.retried[:20],
        "retried_count": len(report.retried),
        "lost": report.lost[:20],
        "lost_count": len(report.lost),
        "uploads": len(report.uploads),
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "client_loop_lag_max_s": round(report.loop_lag, 3),
        "latency": figures,
        "server_logs_on_error": logs,
    }


def _fetch(http: httpx.Client, url: str, size: int) -> None:
    body = http.get(url).content
    if len(body) != size:
        raise SystemExit(f"{url} answered {len(body)} bytes, not {size}")


def _rounds(sides: dict[str, Any], rounds: int, per_round: int) -> dict[str, list[float]]:
    """Seconds per request of each side, sides taking turns round by round.

    The order turns with every round (A B C, B C A, C A B, ...), so that no side
    always runs right after another one: over ``rounds`` that are a multiple of
    the number of sides, each side runs as often first as last.
    """
    seconds: dict[str, list[float]] = {name: [] for name in sides}
    names = list(sides)
    for round_number in range(rounds):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            fetch = sides[name]
            began = time.perf_counter()
            for _ in range(per_round):
                fetch()
            seconds[name].append((time.perf_counter() - began) / per_round)
    return seconds


def downloads(rounds: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with temp_dir("docbinder-bench-download") as tmp:
        port = free_port()
        env = serve_env(link_keys=LINK_KEY, public_url=f"http://127.0.0.1:{port}")
        server = ServeProcess(tmp / "home", env, "--no-mcp", port=port)
        floor_dir = tmp / "floor"
        floor_dir.mkdir()
        floor_port = free_port()
        floor = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "bench" / "file_response_floor.py"),
                str(floor_dir),
                str(floor_port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            with httpx.Client(timeout=120, trust_env=False) as http:
                workflow = http.post(f"{server.url}/v1/workflows").json()["id"]
                for label, size, per_round in (("1 KiB", 1024, 1000), ("10 MiB", 10 << 20, 3)):
                    data = os.urandom(size)
                    (floor_dir / "f.bin").write_bytes(data)
                    stored = http.post(
                        f"{server.url}/v1/workflows/{workflow}/files",
                        params={"name": f"{size}.bin"},
                        content=data,
                    ).json()
                    link = http.post(
                        f"{server.url}/v1/files/{stored['fileId']}/links", json={"expiresIn": "1h"}
                    ).json()["url"]
                    floor_url = f"http://127.0.0.1:{floor_port}/f/f.bin"
                    for _ in range(50):
                        try:
                            if http.get(floor_url).content == data:
                                break
                        except httpx.HTTPError:
                            time.sleep(0.1)
                    content_url = f"{server.url}/v1/files/{stored['fileId']}/content"

                    def fetch(url: str, size: int = size) -> Any:
                        return functools.partial(_fetch, http, url, size)

                    sides = {
                        "FileResponse": fetch(floor_url),
                        "content": fetch(content_url),
                        "link": fetch(link),
                    }
                    for go in sides.values():
                        go()  # warm
                    seconds = _rounds(sides, rounds, per_round)
                    med = {k: median(v) for k, v in seconds.items()}
                    entry: dict[str, Any] = {
                        k: {"seconds_per_request": round(v, 6)} for k, v in med.items()
                    }
                    for k, v in med.items():
                        entry[k]["requests_per_second"] = round(1 / v, 1)
                        entry[k]["mib_per_second"] = round(size / v / (1 << 20), 1)
                    entry["content_vs_file_response"] = round(
                        med["FileResponse"] / med["content"], 3
                    )
                    entry["link_vs_file_response"] = round(med["FileResponse"] / med["link"], 3)
                    entry["link_overhead_vs_content"] = round(med["link"] / med["content"] - 1, 3)
                    out[label] = entry
                    note(
                        f"{label}: "
                        + ", ".join(
                            f"{k} {entry[k]['requests_per_second']}/s {entry[k]['mib_per_second']} MiB/s"
                            for k in sides
                        )
                        + f"; content/FileResponse {entry['content_vs_file_response']}, "
                        f"link overhead vs content {entry['link_overhead_vs_content']:+.1%}"
                    )
        finally:
            floor.terminate()
            floor.wait(30)
            server.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--skip-load", action="store_true")
    parser.add_argument("--skip-downloads", action="store_true")
    parser.add_argument(
        "--setting", action="append", default=[], help="NAME=VALUE for the servers (repeatable)"
    )
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "bench_serve.json"))
    args = parser.parse_args()
    report: dict[str, Any] = {"benchmark": "serve", "machine": machine_facts()}
    if not args.skip_load:
        settings = dict(entry.split("=", 1) for entry in args.setting)
        report["load"] = load(args.processes, args.clients, args.requests, **settings)
        report["load"]["settings"] = settings
    if not args.skip_downloads:
        report["downloads"] = downloads(args.rounds)
    emit(report, args.out)


if __name__ == "__main__":
    main()
