"""The audit log's price: attach and cached ``get_content`` with the log on against off, in one run (B11).

Usage::

    python bench/bench_audit.py [--ops 200] [--runs 5] [--dir PARENT] [--out FILE]

Two binders over the embedded default (SQLite metadata, local-disk blobs), one
with ``audit = true`` and one without, each in its own directory. Attach:
``Run.produce_file`` of a 1 KiB file with distinct content and name (store,
duplicate check, FileItem, ChatMessage and ChatDocument; with the log on, the
``store`` and ``attach`` events in the same transaction). Read: the cached
``Run.get_content`` of one ``docItem:`` reference to a small text file whose
parts are already in the extraction cache (with the log on: one ``resolve``
and one ``read_content`` event, appended in batches of 64). Each of ``--runs``
rounds times one batch of ``--ops`` operations on each side, the order
alternating between rounds; figures are medians over the rounds (wall time and
CPU time per operation). Targets (issue 33): attach with the log at most 15 %
slower, cached ``get_content`` at most 10 % slower.
"""

from __future__ import annotations

import argparse
import secrets
from typing import Any

import benchlib

from docbinder.domain.model import Principal

TARGET_ATTACH = 1.15
TARGET_READ = 1.10
ALICE = Principal("alice", "acme")


def _side(parent: str | None, name: str, audit: bool) -> tuple[Any, Any, Any]:
    context = benchlib.temp_dir(f"bench-audit-{name}-", parent)
    root = context.__enter__()
    binder = benchlib.build(
        f"sqlite:///{root / 'docbinder.db'}", (root / "blobs").as_uri(), root, audit=audit
    )
    run = binder.start_new_run(ALICE)
    return context, binder, run


def attach_batch(run: Any, ops: int) -> None:
    for _ in range(ops):
        token = secrets.token_hex(8)
        run.produce_file(f"f-{token}.txt", secrets.token_bytes(1024), label=f"writeFile:{token}")


def read_batch(run: Any, reference: str, ops: int) -> None:
    for _ in range(ops):
        content = run.get_content([reference])
        assert content.documents, content.unresolved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    benchlib.quiet_logs()
    sides = {name: _side(args.dir, name, name == "on") for name in ("off", "on")}
    references: dict[str, str] = {}
    for name, (_, _, run) in sides.items():
        produced = run.produce_file("notes.txt", b"revenue grew 12% in the north\n" * 20)
        references[name] = f"docItem:{produced.document_id}"
        read_batch(run, references[name], 5)  # fills the extraction cache
        attach_batch(run, 20)  # warm-up
    results: dict[str, dict[str, list[float]]] = {
        op: {"off": [], "on": [], "off_cpu": [], "on_cpu": []} for op in ("attach", "read")
    }
    for round_number in range(args.runs):
        order = ("off", "on") if round_number % 2 == 0 else ("on", "off")
        for name in order:
            run = sides[name][2]
            wall, cpu = benchlib.timed_cpu(lambda run=run: attach_batch(run, args.ops))
            results["attach"][name].append(wall / args.ops)
            results["attach"][f"{name}_cpu"].append(cpu / args.ops)
            wall, cpu = benchlib.timed_cpu(
                lambda run=run, name=name: read_batch(run, references[name], args.ops)
            )
            results["read"][name].append(wall / args.ops)
            results["read"][f"{name}_cpu"].append(cpu / args.ops)
    events = sides["on"][1].audit_log.verify()
    report: dict[str, Any] = {"benchmark": "audit", "ops": args.ops, "runs": args.runs}
    rows = []
    for op, target in (("attach", TARGET_ATTACH), ("read", TARGET_READ)):
        off, on = benchlib.median(results[op]["off"]), benchlib.median(results[op]["on"])
        ratios = [b / a for a, b in zip(results[op]["off"], results[op]["on"], strict=True)]
        cpu_off = benchlib.median(results[op]["off_cpu"])
        cpu_on = benchlib.median(results[op]["on_cpu"])
        report[op] = {
            "off_ms": round(off * 1000, 4),
            "on_ms": round(on * 1000, 4),
            "ratio": round(on / off, 3),
            "per_run_ratios": [round(r, 3) for r in ratios],
            "cpu_off_ms": round(cpu_off * 1000, 4),
            "cpu_on_ms": round(cpu_on * 1000, 4),
            "cpu_ratio": round(cpu_on / cpu_off, 3),
            "target": target,
            "met": on / off <= target,
        }
        rows.append(
            (
                op,
                f"{off * 1000:.3f}",
                f"{on * 1000:.3f}",
                f"{on / off:.3f}",
                f"{cpu_on / cpu_off:.3f}",
                target,
            )
        )
    report["audit_events"] = events.checked
    report["chain_ok"] = events.ok
    report["machine"] = benchlib.machine_facts()
    benchlib.note(benchlib.table(("op", "off ms", "on ms", "ratio", "cpu ratio", "target"), rows))
    for context, binder, _ in sides.values():
        binder.close()
        context.__exit__(None, None, None)
    benchlib.emit(report, args.out)


if __name__ == "__main__":
    main()
