"""Resolving 100 references in workflows of 1,000, 10,000 and 100,000 documents (SPEC §6, C7).

Usage::

    python bench/bench_resolve.py [--sizes 1000,10000,100000] [--runs 7] [--out FILE]

For each metadata backend (``memory://`` with memory blobs; SQLite with
local-disk blobs, the embedded default) one database holds three workflows,
of 1,000, 10,000 and 100,000 documents. They are filled through the
repositories: ``uow.workflows.add_message``, 1,000 messages per unit of work
(one commit). 100 target documents are spread evenly over each workflow,
each alone in its own message (as ``produce_file`` makes them) and pointing
at its own FileItem (whose blob exists); the filler documents between them
point at one shared FileItem and are grouped ``--docs-per-message`` (default
10, as a task result with several files makes them) to a message, which
keeps the SQLite fill of 100,000 documents near a minute (``1`` gives one
message per document).

Timed: ``Run.resolve`` (parse, look up, read-check) of a
``documentList`` of 100 references to the targets, in four shapes:
``docItem:<id>`` x 100; ``docList:<label>`` x 100; ``file:<id>`` x 100; and
``docItem`` x 100 plus 10 unknown ids (so the answer also carries the
workflow's recent documents as suggestions). Each run resolves every shape
in every workflow as often as fits in ``--cell-seconds`` (at least once;
the count is fixed after a warm-up resolve), workflows in rotating order,
and keeps the mean wall and CPU time per resolve; figures are medians over
``--runs`` runs. The CPU time (``time.process_time``) is recorded because
the machine may be shared: it is not inflated while the process waits for a
core. The scale figure is wall time at 100,000 over wall time at 10,000
(target: at most 1.5), reported for CPU time too. The batching figure is
the median wall time of ``docList`` x 100 over that of ``docItem`` x 100 in
the same workflow (target: at most 2 at every size: labels are looked up in
one batch, ADR 0028), reported for ``file:`` x 100 and for CPU time too.
Timed resolves read metadata only; no blob is probed. For SQLite the query
plans of the statements sent while resolving in the largest workflow are
recorded (``EXPLAIN QUERY PLAN``), and every shape is profiled once there.
"""

from __future__ import annotations

import argparse
import time
import uuid
from functools import partial
from typing import Any

import benchlib

TARGET_SCALE = 1.5
TARGET_BATCH = 2.0
TARGETS = 100
BATCH = 1000


def _plan(size: int, per_message: int) -> list[tuple[int | None, int]]:
    """Messages of a workflow of ``size`` documents: ``(target index or None, document count)``.

    The 100 targets sit at evenly spaced document positions, each alone in
    its message; the filler documents between them are grouped
    ``per_message`` to a message.
    """
    step = size // TARGETS
    targets = {n * step + step // 2: n for n in range(TARGETS)}
    plan: list[tuple[int | None, int]] = []
    pending = 0
    for position in range(size):
        target = targets.get(position)
        if target is None:
            pending += 1
            if pending == per_message:
                plan.append((None, pending))
                pending = 0
            continue
        if pending:
            plan.append((None, pending))
            pending = 0
        plan.append((target, 1))
    if pending:
        plan.append((None, pending))
    return plan


def _fill(binder: Any, principal: Any, size: int, per_message: int) -> dict[str, Any]:
    """A workflow of ``size`` documents; returns its id, the target references and the fill time."""
    from docbinder.domain.model import ChatDocument, ChatMessage

    workflow = binder.create_workflow(principal)
    run = binder.start_run(principal, workflow.id)
    filler = run.store_file(f"filler-{workflow.id}.txt", b"filler\n").item
    targets = [
        run.store_file(f"target-{i}.txt", f"target {i} {uuid.uuid4()}\n".encode()).item
        for i in range(TARGETS)
    ]
    plan = _plan(size, per_message)
    now = binder.clock.now()
    doc_ids: list[str] = [""] * TARGETS
    labels: list[str] = [""] * TARGETS
    started = time.perf_counter()
    for start in range(0, len(plan), BATCH):
        with binder.uow_factory() as uow:
            for number in range(start, min(start + BATCH, len(plan))):
                target, count = plan[number]
                item = filler if target is None else targets[target]
                message_id = str(uuid.uuid4())
                label = f"writeFile:{item.file_name}#{number}"
                documents = tuple(
                    ChatDocument(
                        id=str(uuid.uuid4()),
                        message_id=message_id,
                        workflow_id=workflow.id,
                        file_id=item.id,
                        file_name=item.file_name,
                        file_size=item.size,
                        mime_type=item.mime_type,
                        round_number=1,
                    )
                    for _ in range(count)
                )
                uow.workflows.add_message(
                    ChatMessage(
                        id=message_id,
                        workflow_id=workflow.id,
                        documents_label=label,
                        published_at=now,
                        documents=documents,
                        round_number=1,
                    )
                )
                if target is not None:
                    doc_ids[target], labels[target] = documents[0].id, label
            uow.commit()
    seconds = time.perf_counter() - started
    unknown = [f"docItem:{uuid.uuid4()}" for _ in range(10)]
    shapes = {
        "docItem x100": [f"docItem:{d}" for d in doc_ids],
        "docList x100": [f"docList:{label}" for label in labels],
        "file x100": [f"file:{t.id}" for t in targets],
        "docItem x100 + 10 unknown": [f"docItem:{d}" for d in doc_ids] + unknown,
    }
    return {
        "workflow_id": workflow.id,
        "shapes": shapes,
        "messages": len(plan),
        "fill_seconds": seconds,
        "fill_docs_per_s": size / seconds,
    }


def _resolve(run: Any, refs: list[str], unknown: bool, times: int = 1) -> None:
    """``run.resolve(refs)`` ``times`` times, checking every answer."""
    for _ in range(times):
        resolution = run.resolve(refs)
        if len(resolution.documents) != TARGETS:
            raise SystemExit(f"resolved {len(resolution.documents)} of {TARGETS} targets")
        if unknown and (len(resolution.unresolved) != 10 or not resolution.suggestions):
            raise SystemExit("unknown references were not reported with suggestions")
        if not unknown and not resolution.ok:
            raise SystemExit(f"unresolved: {resolution.unresolved[:3]}")


def bench_backend(
    backend: str,
    sizes: list[int],
    runs: int,
    cell_seconds: float,
    per_message: int,
    parent: str | None,
) -> dict[str, Any]:
    from docbinder import Principal

    principal = Principal(user_id="alice", mandate_id="acme", roles=("member",))
    with benchlib.temp_dir(f"resolve-{backend}", parent) as tmp:
        if backend == "memory":
            binder = benchlib.build("memory://", "memory://", tmp)
        else:
            binder = benchlib.build(
                f"sqlite:///{tmp / 'docbinder.db'}", (tmp / "blobs").as_uri(), tmp
            )
        workflows: dict[int, dict[str, Any]] = {}
        for size in sizes:
            workflows[size] = _fill(binder, principal, size, per_message)
            benchlib.note(
                f"{backend}: filled {size} documents in {workflows[size]['fill_seconds']:.1f} s"
            )
        runs_by_size = {
            size: binder.start_run(principal, wf["workflow_id"]) for size, wf in workflows.items()
        }
        shapes = list(next(iter(workflows.values()))["shapes"])
        # Warm-up (caches, statement compilation), which also fixes how many
        # resolves fit in one cell of about ``cell_seconds``.
        repeats: dict[tuple[str, int], int] = {}
        for size, wf in workflows.items():
            for shape in shapes:
                run = runs_by_size[size]
                once = benchlib.timed(
                    partial(_resolve, run, wf["shapes"][shape], "unknown" in shape)
                )
                repeats[shape, size] = max(1, min(1000, int(cell_seconds / max(once, 1e-6))))
        times: dict[str, dict[int, list[float]]] = {s: {n: [] for n in sizes} for s in shapes}
        cpu: dict[str, dict[int, list[float]]] = {s: {n: [] for n in sizes} for s in shapes}
        order = list(sizes)
        for _ in range(runs):
            for size in order:
                for shape in shapes:
                    refs = workflows[size]["shapes"][shape]
                    run = runs_by_size[size]
                    n = repeats[shape, size]
                    seconds, used = benchlib.timed_cpu(
                        partial(_resolve, run, refs, "unknown" in shape, n)
                    )
                    times[shape][size].append(seconds * 1000 / n)
                    cpu[shape][size].append(used * 1000 / n)
            order = order[1:] + order[:1]
        largest = max(sizes)
        profile = {
            shape: benchlib.profile_top(
                partial(
                    _resolve,
                    runs_by_size[largest],
                    workflows[largest]["shapes"][shape],
                    "unknown" in shape,
                ),
                limit=8,
            )
            for shape in shapes
        }
        plans: dict[str, Any] = {}
        if backend != "memory":
            engine = benchlib.sql_engine(binder)
            for shape in shapes:
                plans[shape] = benchlib.explain_statements(
                    engine,
                    partial(
                        _resolve,
                        runs_by_size[largest],
                        workflows[largest]["shapes"][shape],
                        "unknown" in shape,
                    ),
                )
        if backend != "memory":
            benchlib.sql_engine(binder).dispose()
    ms = {
        shape: {str(size): benchlib.summary(v) for size, v in by_size.items()}
        for shape, by_size in times.items()
    }
    cpu_ms = {
        shape: {str(size): benchlib.summary(v) for size, v in by_size.items()}
        for shape, by_size in cpu.items()
    }
    scale: dict[str, float] = {}
    cpu_scale: dict[str, float] = {}
    if 10_000 in sizes and 100_000 in sizes:
        for shape in shapes:
            scale[shape] = round(
                benchlib.median(times[shape][100_000]) / benchlib.median(times[shape][10_000]), 3
            )
            cpu_scale[shape] = round(
                benchlib.median(cpu[shape][100_000]) / benchlib.median(cpu[shape][10_000]), 3
            )
    # Batching: docList and file: x 100 against docItem x 100, same workflow.
    batch: dict[str, dict[str, float]] = {}
    for shape in ("docList x100", "file x100"):
        batch[shape] = {
            str(size): round(
                benchlib.median(times[shape][size]) / benchlib.median(times["docItem x100"][size]),
                3,
            )
            for size in sizes
        }
        batch[f"{shape} (CPU)"] = {
            str(size): round(
                benchlib.median(cpu[shape][size]) / benchlib.median(cpu["docItem x100"][size]), 3
            )
            for size in sizes
        }
    return {
        "fill": {
            str(size): {
                "messages": wf["messages"],
                "seconds": round(wf["fill_seconds"], 1),
                "docs_per_s": round(wf["fill_docs_per_s"]),
            }
            for size, wf in workflows.items()
        },
        "resolve_ms": ms,
        "resolve_cpu_ms": cpu_ms,
        "scale_100k_over_10k": scale,
        "cpu_scale_100k_over_10k": cpu_scale,
        "target_met": bool(scale) and all(v <= TARGET_SCALE for v in scale.values()),
        "over_docItem_x100": batch,
        "batch_target_met": all(v <= TARGET_BATCH for v in batch["docList x100"].values()),
        "repeats_per_run": {f"{shape} @ {size}": n for (shape, size), n in repeats.items()},
        "profile_one_resolve_largest_workflow": profile,
        "query_plans_largest_workflow": plans,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="documents per workflow")
    parser.add_argument("--backends", default="memory,sqlite", help="memory and/or sqlite")
    parser.add_argument("--runs", type=int, default=7, help="runs (at least 5)")
    parser.add_argument(
        "--cell-seconds", type=float, default=0.3, help="time per shape, size and run"
    )
    parser.add_argument(
        "--docs-per-message",
        type=int,
        default=10,
        help="filler documents per message (targets are always alone in theirs)",
    )
    parser.add_argument("--dir", default=None, help="parent of the temp directories")
    parser.add_argument("--out", default=None, help="also write the JSON report here")
    args = parser.parse_args(argv)
    benchlib.quiet_logs()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.runs < 5 or any(s < TARGETS for s in sizes):
        parser.error(f"--runs must be at least 5 and every size at least {TARGETS}")
    report: dict[str, Any] = {
        "benchmark": "resolve 100 references vs workflow size",
        "machine": benchlib.machine_facts(),
        "config": {
            "sizes": sizes,
            "runs": args.runs,
            "cell_seconds": args.cell_seconds,
            "targets": TARGETS,
            "filler_docs_per_message": args.docs_per_message,
            "messages_per_commit": BATCH,
        },
        "backends": {},
        "target": f"time at 100,000 documents <= {TARGET_SCALE} x time at 10,000",
        "batch_target": f"docList x100 <= {TARGET_BATCH} x docItem x100 (wall, every size)",
    }
    rows = []
    batch_rows = []
    for backend in args.backends.split(","):
        figures = bench_backend(
            backend, sizes, args.runs, args.cell_seconds, args.docs_per_message, args.dir
        )
        report["backends"][backend] = figures
        for shape, by_size in figures["resolve_ms"].items():
            rows.append(
                [backend, shape]
                + [by_size[str(s)]["median"] for s in sizes]
                + [
                    figures["scale_100k_over_10k"].get(shape, ""),
                    figures["cpu_scale_100k_over_10k"].get(shape, ""),
                ]
            )
        for shape, by_size in figures["over_docItem_x100"].items():
            batch_rows.append([backend, shape] + [by_size[str(s)] for s in sizes])
    report["target_met"] = all(b["target_met"] for b in report["backends"].values())
    report["batch_target_met"] = all(b["batch_target_met"] for b in report["backends"].values())
    benchlib.note(
        benchlib.table(
            [
                "backend",
                "references",
                *[f"ms @ {s:,}" for s in sizes],
                "100k / 10k",
                "CPU 100k / 10k",
            ],
            rows,
        )
    )
    benchlib.note(
        benchlib.table(["backend", "over docItem x100", *[f"@ {s:,}" for s in sizes]], batch_rows)
    )
    benchlib.emit(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
