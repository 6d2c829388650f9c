"""docbinder side by side with Google ADK's artifact services (SPEC §6).

Usage::

    python bench/bench_adk.py --setup     # once: venv bench/.env-adk with google-adk
    python bench/bench_adk.py [--runs 5] [--out FILE]

One operation = store a file and get its bytes back, for 1 KiB and 10 MiB
payloads with distinct content:

* ADK (``bench/adk_side.py``, run by the interpreter of ``bench/.env-adk``,
  where ``google-adk`` is installed; it is no dependency of docbinder):
  ``save_artifact`` of ``types.Part.from_bytes(payload)`` + ``load_artifact``,
  on ``FileArtifactService`` (local files) and ``InMemoryArtifactService``.
* docbinder (this process): ``Run.produce_file`` (store with SHA-256, access
  check, duplicate check, attach as ChatDocument) + ``Run.resolve`` of the
  returned ``docItem:`` reference (access check, blob check) + reading the
  bytes from the blob store, on SQLite + local disk (the embedded default)
  and on ``memory://`` + ``memory://``.

Pairs compared: ADK file vs docbinder SQLite + local disk; ADK memory vs
docbinder memory. ADK's file service never calls ``fsync`` (checked in its
source: it writes, renames and returns), while docbinder's local-disk store
and SQLite (``synchronous=FULL``) make every attach durable. A third
docbinder side, ``docbinder disk, no fsync``, therefore runs with ``os.fsync``
replaced by a no-op during its turns and ``PRAGMA synchronous=OFF``: the same
durability as ADK's file service. It is labelled as such and is not the
shipped configuration.

Each run starts fresh stores on every side; then the sides take turns in
chunks (20 ops of 1 KiB, 2 ops of 10 MiB) so that all see the same machine
conditions. ops/s are medians over ``--runs`` runs. Prints one JSON object on
stdout and a table on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import benchlib

HERE = Path(__file__).resolve().parent
VENV = HERE / ".env-adk"
ADK_PYTHON = VENV / "bin" / "python"
SIZES = {"1 KiB": (benchlib.KiB, 200, 20), "10 MiB": (10 * benchlib.MiB, 20, 2)}
"""label -> (bytes, ops per run, ops per turn)."""


def setup() -> int:
    """Create ``bench/.env-adk`` and install ``google-adk`` into it with pip."""
    if not ADK_PYTHON.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    result = subprocess.run(
        [str(VENV / "bin" / "pip"), "install", "--quiet", "google-adk"], check=False
    )
    return result.returncode


class AdkSide:
    """The ADK process: one JSON request per line on stdin, one reply per line on stdout."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [str(ADK_PYTHON), str(HERE / "adk_side.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, **request: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("the ADK side exited; see its error output above")
        reply: dict[str, Any] = json.loads(line)
        if "error" in reply:
            raise SystemExit(f"ADK side: {reply['error']}")
        return reply

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.ask_quit()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def ask_quit(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
        self.proc.stdin.flush()


def _skip_fsync(fd: Any) -> None:
    """Stands in for ``os.fsync``: flushes nothing."""


@contextlib.contextmanager
def no_fsync() -> Iterator[None]:
    """``os.fsync`` is a no-op inside the block (the durability of ADK's file service)."""
    real = os.fsync
    os.fsync = _skip_fsync
    try:
        yield
    finally:
        os.fsync = real


def _payloads(size: int, count: int, seed: bytes) -> list[bytes]:
    out = []
    for _ in range(count):
        stamp = os.urandom(16)
        out.append(stamp[:size] + seed[len(stamp) : size])
    return out


class DocbinderSide:
    """One docbinder configuration; ``reset`` builds fresh stores, ``run`` times ops."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.binder: Any = None
        self.run_ctx: Any = None
        self.counter = 0
        self.seed = b""

    def reset(self, tmp: Path) -> None:
        from docbinder import Principal

        if self.binder is not None and self.kind != "memory":
            benchlib.sql_engine(self.binder).dispose()
        if self.kind == "memory":
            self.binder = benchlib.build("memory://", "memory://", tmp)
        else:
            home = tmp / self.kind
            self.binder = benchlib.build(
                f"sqlite:///{home / 'docbinder.db'}", (home / "blobs").as_uri(), home
            )
            if self.kind == "disk-nosync":
                from sqlalchemy import event

                engine = benchlib.sql_engine(self.binder)

                def synchronous_off(dbapi_connection: Any, _record: Any) -> None:
                    dbapi_connection.execute("PRAGMA synchronous = OFF")

                event.listen(engine, "connect", synchronous_off)
                engine.dispose()
        principal = Principal(user_id="alice", mandate_id="acme", roles=("member",))
        self.run_ctx = self.binder.start_new_run(principal)

    def run(self, size: int, ops: int) -> tuple[float, float]:
        if len(self.seed) < size:
            self.seed = os.urandom(size)
        payloads = _payloads(size, ops, self.seed)
        names = []
        for _ in range(ops):
            self.counter += 1
            names.append(f"f{self.counter}.bin")
        guard = no_fsync() if self.kind == "disk-nosync" else contextlib.nullcontext()
        run, blobs = self.run_ctx, self.binder.blobs
        with guard:
            cpu = time.process_time()
            started = time.perf_counter()
            for name, data in zip(names, payloads, strict=True):
                result = run.produce_file(name, data, label=f"writeFile:{name}")
                resolution = run.resolve([result.reference])
                if not resolution.ok:
                    raise SystemExit(f"docbinder could not resolve {name}")
                item = resolution.documents[0].file
                with blobs.open(item.blob_key) as chunks:
                    got = sum(len(chunk) for chunk in chunks)
                if got != size:
                    raise SystemExit(f"docbinder returned the wrong size for {name}")
            seconds = time.perf_counter() - started
            used = time.process_time() - cpu
        return seconds, used


SIDES = {
    "ADK FileArtifactService": ("adk", "file"),
    "docbinder SQLite + local disk": ("docbinder", "disk"),
    "docbinder SQLite + local disk, no fsync": ("docbinder", "disk-nosync"),
    "ADK InMemoryArtifactService": ("adk", "memory"),
    "docbinder memory": ("docbinder", "memory"),
}
PAIRS = [
    ("docbinder SQLite + local disk", "ADK FileArtifactService"),
    ("docbinder SQLite + local disk, no fsync", "ADK FileArtifactService"),
    ("docbinder memory", "ADK InMemoryArtifactService"),
]


def run_bench(runs: int, parent: str | None) -> dict[str, Any]:
    if not ADK_PYTHON.exists():
        raise SystemExit(
            f"no ADK environment at {VENV}: run `python bench/bench_adk.py --setup` first"
        )
    adk = AdkSide()
    try:
        info = adk.ask(cmd="info")
        sides = {
            name: spec
            for name, spec in SIDES.items()
            if spec[0] == "docbinder" or spec[1] in info["services"]
        }
        locals_: dict[str, DocbinderSide] = {
            name: DocbinderSide(spec[1]) for name, spec in sides.items() if spec[0] == "docbinder"
        }
        figures: dict[str, dict[str, Any]] = {}
        for label, (size, ops, chunk) in SIZES.items():
            rates: dict[str, list[float]] = {name: [] for name in sides}
            cpu_ms: dict[str, list[float]] = {name: [] for name in sides}
            order = list(sides)
            for run_nr in range(runs):
                with benchlib.temp_dir("adk", parent) as tmp:
                    for name, (who, kind) in sides.items():
                        if who == "adk":
                            adk.ask(cmd="reset", service=kind, root=str(tmp / "adk-root"))
                        else:
                            locals_[name].reset(tmp)
                    wall = dict.fromkeys(sides, 0.0)
                    cpu = dict.fromkeys(sides, 0.0)
                    done = 0
                    while done < ops:
                        n = min(chunk, ops - done)
                        for name in order:
                            who, kind = sides[name]
                            if who == "adk":
                                reply = adk.ask(cmd="run", service=kind, size=size, ops=n)
                                seconds, used = float(reply["seconds"]), float(reply["cpu"])
                            else:
                                seconds, used = locals_[name].run(size, n)
                            wall[name] += seconds
                            cpu[name] += used
                        order = order[1:] + order[:1]
                        done += n
                    for name in sides:
                        rates[name].append(ops / wall[name])
                        cpu_ms[name].append(cpu[name] * 1000 / ops)
                    for who_side in locals_.values():
                        if who_side.kind != "memory":
                            benchlib.sql_engine(who_side.binder).dispose()
                        who_side.binder = None
                    for who, kind in sides.values():
                        if who == "adk":
                            adk.ask(cmd="reset", service=kind, root=str(tmp / "adk-root"))
                benchlib.note(
                    f"{label} run {run_nr + 1}/{runs}: "
                    + ", ".join(f"{name} {rates[name][-1]:.1f}" for name in sides)
                )
            pairs = {}
            for ours, theirs in PAIRS:
                if ours in rates and theirs in rates:
                    ratio = benchlib.median(rates[ours]) / benchlib.median(rates[theirs])
                    pairs[f"{ours} / {theirs}"] = round(ratio, 3)
            figures[label] = {
                "bytes": size,
                "ops_per_run": ops,
                "ops_per_turn": chunk,
                "ops_per_s": {name: benchlib.summary(v, 1) for name, v in rates.items()},
                "cpu_ms_per_op": {name: benchlib.summary(v) for name, v in cpu_ms.items()},
                "speedup_docbinder_over_adk": pairs,
            }
    finally:
        adk.close()
    shipped = [
        figures[label]["speedup_docbinder_over_adk"].get(f"{ours} / {theirs}", 0.0)
        for label in figures
        for ours, theirs in PAIRS
        if "no fsync" not in ours
    ]
    return {
        "benchmark": "save + load of one file: docbinder vs Google ADK artifact services",
        "machine": benchlib.machine_facts(),
        "adk": info,
        "operation": {
            "adk": "save_artifact(Part.from_bytes) + load_artifact",
            "docbinder": "Run.produce_file + Run.resolve(docItem ref) + read blob bytes",
        },
        "runs": runs,
        "sizes": figures,
        "target": "docbinder faster than ADK on both sizes (shipped configurations)",
        "target_met": all(ratio > 1.0 for ratio in shipped),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--setup", action="store_true", help="create bench/.env-adk and exit")
    parser.add_argument("--runs", type=int, default=5, help="runs per size (at least 5)")
    parser.add_argument("--dir", default=None, help="parent of the temp directories")
    parser.add_argument("--out", default=None, help="also write the JSON report here")
    args = parser.parse_args(argv)
    benchlib.quiet_logs()
    if args.setup:
        return setup()
    if args.runs < 5:
        parser.error("--runs must be at least 5")
    report = run_bench(args.runs, args.dir)
    rows: list[list[Any]] = []
    for label, fig in report["sizes"].items():
        for name, s in fig["ops_per_s"].items():
            rows.append([label, name, s["median"], fig["cpu_ms_per_op"][name]["median"]])
    benchlib.note(benchlib.table(["size", "side", "median ops/s", "CPU ms/op"], rows))
    for label, fig in report["sizes"].items():
        for pair, ratio in fig["speedup_docbinder_over_adk"].items():
            benchlib.note(f"{label}: {pair} = {ratio}")
    benchlib.emit(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
