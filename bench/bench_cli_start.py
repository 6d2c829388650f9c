"""How long the command line takes to start and answer, whole process, beside bare Python.

Measures the wall time of whole processes, as a user waits for them:

* ``python -c pass`` (the floor: the interpreter and its ``site``),
* ``docbinder --version``,
* ``docbinder files ls`` on an empty home (no database yet: a listing creates
  none, ADR 0063),
* ``docbinder files ls`` on a migrated home (the schema is at head).

Each side runs ``--runs`` times; the sides take turns within every round (the
order rotating from round to round), so all of them see the same load on a
shared machine. Every "empty home" run gets a fresh directory. The console
script is the venv's ``docbinder`` next to the interpreter when it exists,
else ``python -m docbinder`` (which then costs the same plus ``runpy``). With
``--checkout DIR`` the package in ``DIR`` is measured instead, as
``python -m docbinder`` with ``DIR`` first on the path (a before/after
comparison: run it once on each checkout, e.g. one made with ``git archive``).
The CPU time (user + system) of each run is recorded beside its wall time.
Targets (medians): ``--version`` <= 0.06 s, ``files ls`` on an empty home <=
0.25 s. The 1-minute load average before and after is recorded; figures from
a loaded machine are high. Run: ``python bench/bench_cli_start.py [--runs 15]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchlib import emit, machine_facts, note, summary, table, temp_dir

TARGETS = {"version": 0.06, "files ls, empty home": 0.25}
"""Seconds (median) the command may take (SPEC section 6)."""


def docbinder_command(checkout: str | None = None) -> list[str]:
    """The console script beside this interpreter, else (or for a ``checkout``) ``python -m docbinder``."""
    if checkout is not None:
        return [sys.executable, "-m", "docbinder"]
    script = Path(sys.executable).with_name("docbinder")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "docbinder"]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """``(wall, cpu)`` seconds of ``argv`` run in ``cwd``, start to exit; raises if it fails.

    ``cpu`` is the process's user + system time (``RUSAGE_CHILDREN``): on a
    shared machine it shows the work a command does, whatever it waited for.
    ``cwd`` is a scratch directory, never a checkout: ``python -m`` puts the
    working directory first on the path.
    """
    cpu_before = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode(errors='replace')}")
    return elapsed, _children_cpu() - cpu_before


def load_average() -> float | None:
    """The 1-minute load average, where the system tells it."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def measure(
    runs: int, work: Path, checkout: str | None
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds per side, ``runs`` each, sides rotating."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCBINDER_")}
    env["DOCBINDER_USER"] = "bench"
    if checkout is not None:
        env["PYTHONPATH"] = str(Path(checkout).resolve())
    command = docbinder_command(checkout)
    migrated = work / "migrated"
    run_once([*command, "--home", str(migrated), "migrate"], env, work)  # migrate once
    empty_homes = iter(work / f"empty-{i}" for i in range(runs))
    sides: dict[str, Any] = {
        "python -c pass": lambda: [sys.executable, "-c", "pass"],
        "version": lambda: [*command, "--version"],
        "files ls, empty home": lambda: [*command, "--home", str(next(empty_homes)), "files", "ls"],
        "files ls, migrated home": lambda: [*command, "--home", str(migrated), "files", "ls"],
    }
    names = list(sides)
    times: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for round_number in range(runs):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            wall, spent = run_once(sides[name](), env, work)
            times[name].append(wall)
            cpu[name].append(spent)
    return times, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="runs per side (at least 5)")
    parser.add_argument("--dir", default=None, help="parent directory of the temporary homes")
    parser.add_argument("--out", default=None, help="also write the JSON report to this file")
    parser.add_argument(
        "--checkout", default=None, help="measure the docbinder package in this directory instead"
    )
    args = parser.parse_args()
    if args.runs < 5:
        parser.error("--runs must be at least 5 (medians)")
    load_before = load_average()
    with temp_dir("docbinder-cli-start-", args.dir) as work:
        times, cpu = measure(args.runs, work, args.checkout)
    load_after = load_average()
    results = {name: summary(values) for name, values in times.items()}
    for name, values in cpu.items():
        results[name]["cpu"] = summary(values)
    floor = results["python -c pass"]["median"]
    rows = []
    for name, figures in results.items():
        target = TARGETS.get(name)
        met = None if target is None else figures["median"] <= target
        figures["target_s"] = target
        figures["met"] = met
        figures["above_floor_s"] = round(figures["median"] - floor, 4)
        rows.append(
            [
                name,
                f"{figures['median']:.3f}",
                f"{figures['min']:.3f}-{figures['max']:.3f}",
                f"{figures['above_floor_s']:+.3f}",
                f"{figures['cpu']['median']:.3f}",
                "-" if target is None else f"<= {target}",
                "-" if met is None else ("met" if met else "MISSED"),
            ]
        )
    headers = ["side", "median s", "min-max s", "vs floor", "CPU s", "target", "status"]
    note(table(headers, rows))
    note(f"1-minute load average: {load_before} before, {load_after} after")
    emit(
        {
            "benchmark": "cli_start",
            "machine": machine_facts(),
            "runs": args.runs,
            "command": docbinder_command(args.checkout),
            "checkout": args.checkout,
            "load_average": {"before": load_before, "after": load_after},
            "results": results,
        },
        args.out,
    )


if __name__ == "__main__":
    main()
