"""Helpers shared by the docbinder benchmarks in this directory.

Nothing here is measured. It provides: the machine facts every result is
recorded with (CPU count and model, Python and SQLite versions, date, commit),
medians over repeated runs, a cProfile summary of a callable, throw-away
directories, a moto S3 server in a separate process on 127.0.0.1, a private
PostgreSQL schema that is dropped afterwards, and binders built from explicit
settings (never from ``DOCBINDER_*`` environment variables).

The benchmark scripts put this directory on ``sys.path`` (Python does so for
the script's own directory) and the repository root, so they run as
``python bench/<name>.py`` from a checkout without installing anything.
"""

from __future__ import annotations

import contextlib
import cProfile
import datetime as dt
import io
import json
import os
import platform
import pstats
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:
    from docbinder.application import DocBinder

POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
"""The loopback PostgreSQL server the benchmarks may use (a private schema is made per run)."""

MiB = 1 << 20
KiB = 1 << 10


# -- facts ----------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _uncommitted_library_files() -> list[str]:
    """Library files that differ from the recorded commit (the figures include those changes)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "docbinder"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return [line[3:] for line in out.stdout.splitlines() if line.strip()]


def machine_facts() -> dict[str, Any]:
    """What the figures were measured on: CPUs, Python, SQLite, date (UTC), load and commit."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = os.cpu_count() or 0
    return {
        "nproc": usable,
        "cpu_model": _cpu_model(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "date": dt.datetime.now(dt.UTC).date().isoformat(),
        "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()],
        "commit": _git_commit(),
        "uncommitted_library_files": _uncommitted_library_files(),
    }


# -- statistics -----------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    """The median of ``values`` (at least one)."""
    return float(statistics.median(values))


def summary(values: Sequence[float], digits: int = 3) -> dict[str, Any]:
    """Median, minimum, maximum and every value of one series of runs."""
    return {
        "median": round(median(values), digits),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
        "runs": [round(v, digits) for v in values],
    }


def timed(action: Callable[[], Any]) -> float:
    """Wall-clock seconds ``action()`` takes (``time.perf_counter``)."""
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def timed_cpu(action: Callable[[], Any]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (this process, all threads) ``action()`` takes."""
    cpu = time.process_time()
    started = time.perf_counter()
    action()
    return time.perf_counter() - started, time.process_time() - cpu


# -- profiles -------------------------------------------------------------------------


def _short(filename: str) -> str:
    for marker in ("site-packages/", "/work/main/", str(ROOT) + "/"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename


def _label(func: tuple[str, int, str]) -> str:
    filename, line, name = func
    if filename == "~":
        return name  # a built-in such as {built-in method posix.fsync}
    return f"{_short(filename)}:{line}({name})"


def profile_top(action: Callable[[], Any], *, limit: int = 15, per: int = 1) -> dict[str, Any]:
    """Run ``action`` under cProfile; the top ``limit`` entries by own and by cumulative time.

    Times are divided by ``per`` (the number of operations ``action``
    performs), so they read as milliseconds per operation. ``builtins`` sums
    the own time of selected C functions that usually dominate I/O paths
    (``fsync``, SQLite ``commit``/``execute``, ``sha256``, ``write``).
    """
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        action()
    finally:
        profiler.disable()
    stats = pstats.Stats(profiler, stream=io.StringIO())
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    total = max((entry[3] for entry in raw.values()), default=0.0)

    def rows(key: int) -> list[dict[str, Any]]:
        ranked = sorted(raw.items(), key=lambda item: item[1][key], reverse=True)[:limit]
        return [
            {
                "function": _label(func),
                "calls_per_op": round(entry[1] / per, 2),
                "own_ms_per_op": round(entry[2] * 1000 / per, 3),
                "cumulative_ms_per_op": round(entry[3] * 1000 / per, 3),
            }
            for func, entry in ranked
        ]

    wanted = (
        "posix.fsync",
        "'commit' of 'sqlite3",
        "'execute' of 'sqlite3",
        "sha256",
        "posix.write",
    )
    builtins: dict[str, dict[str, float]] = {}
    for func, entry in raw.items():
        name = _label(func)
        if func[0] == "~" and any(w in name for w in wanted):
            builtins[name] = {
                "calls_per_op": round(entry[1] / per, 2),
                "own_ms_per_op": round(entry[2] * 1000 / per, 3),
            }
    return {
        "profiled_ms_per_op": round(total * 1000 / per, 3),
        "note": "cProfile adds overhead to Python calls; read shares, not absolute times",
        "top_own_time": rows(2),
        "top_cumulative": rows(3),
        "io_builtins": builtins,
    }


# -- places ---------------------------------------------------------------------------


@contextlib.contextmanager
def temp_dir(prefix: str, parent: str | None = None) -> Iterator[Path]:
    """A fresh directory (under ``parent`` or the system temp dir), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix=f"docbinder-bench-{prefix}-", dir=parent))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


S3_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/docbinder-bench/credentials",
    "AWS_CONFIG_FILE": "/nonexistent/docbinder-bench/config",
}
"""Dummy credentials: the benchmarks only ever talk to the local moto server."""


@contextlib.contextmanager
def moto_server(timeout: float = 30.0) -> Iterator[str]:
    """Start ``moto.server`` in a separate process on 127.0.0.1; yield its endpoint URL."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        env={**os.environ, **S3_ENV},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit(f"moto server did not listen on 127.0.0.1:{port}") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@contextlib.contextmanager
def postgres_schema(url: str = POSTGRES_URL) -> Iterator[str]:
    """A fresh PostgreSQL schema; yield a URL whose connections use it; drop it afterwards.

    The schema is selected with ``options=-csearch_path=<schema>`` in the URL,
    so every connection docbinder opens works inside it.
    """
    import sqlalchemy as sa
    from sqlalchemy.engine import make_url

    schema = f"docbinder_bench_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(make_url(url).update_query_dict({"connect_timeout": "5"}))
    try:
        with admin.begin() as conn:
            conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
        try:
            scoped = make_url(url).update_query_dict({"options": f"-csearch_path={schema}"})
            yield scoped.render_as_string(hide_password=False)
        finally:
            with admin.begin() as conn:
                conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
    finally:
        admin.dispose()


# -- docbinder ------------------------------------------------------------------------


def build(database_url: str, blob_url: str, home: Path, **settings: Any) -> DocBinder:
    """A :class:`DocBinder` from explicit settings, storage prepared (SQLite migrated)."""
    from docbinder.adapters.sql import migrate
    from docbinder.config import Settings
    from docbinder.container import build_binder

    config = Settings(home=home, database_url=database_url, blob_url=blob_url, **settings)
    if config.metadata_kind == "sql" and not database_url.startswith("sqlite"):
        migrate(database_url)
    return build_binder(config)


def sql_engine(binder: DocBinder) -> Any:
    """The SQLAlchemy engine behind a binder wired to a SQL metadata store (SQLite's adapter has one too)."""
    factory = binder.uow_factory
    store = getattr(factory, "__self__", None)
    engine = getattr(store, "engine", None)
    if engine is None:
        raise TypeError("this binder is not wired to the SQL metadata store")
    return engine


def explain_statements(engine: Any, action: Callable[[], Any]) -> list[dict[str, Any]]:
    """The query plans of the distinct SELECT statements ``action`` sends through ``engine``.

    Statements are captured with SQLAlchemy's ``before_cursor_execute`` event
    (PostgreSQL) or SQLite's own trace callback on the connections checked out
    of the engine's pool (SQLite's adapter sends its statements on
    ``sqlite3``; the values are written into the statement), and explained
    afterwards, with their first parameters, on a connection of the same
    engine: ``EXPLAIN QUERY PLAN`` on SQLite, ``EXPLAIN`` on PostgreSQL (what
    the planner chooses for those parameters).
    """
    from sqlalchemy import event

    seen: dict[str, Any] = {}

    def capture(_conn: Any, _cursor: Any, statement: str, params: Any, *_rest: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and statement not in seen:
            seen[statement] = params

    def traced(dbapi_connection: Any, *_rest: Any) -> None:
        dbapi_connection.set_trace_callback(lambda statement: capture(None, None, statement, ()))

    def untraced(dbapi_connection: Any, *_rest: Any) -> None:
        dbapi_connection.set_trace_callback(None)

    hooks = (
        [("checkout", traced), ("checkin", untraced)]
        if engine.dialect.name == "sqlite"
        else [("before_cursor_execute", capture)]
    )
    for name, hook in hooks:
        event.listen(engine, name, hook)
    try:
        action()
    finally:
        for name, hook in hooks:
            event.remove(engine, name, hook)
    prefix = "EXPLAIN QUERY PLAN " if engine.dialect.name == "sqlite" else "EXPLAIN "
    plans = []
    with engine.connect() as conn:
        for statement, params in seen.items():
            rows = conn.exec_driver_sql(prefix + statement, params).all()
            plan = [str(row[-1]) for row in rows]
            plans.append({"statement": " ".join(statement.split())[:300], "plan": plan})
        conn.rollback()
    return plans


def emit(report: dict[str, Any], out: str | None) -> None:
    """Print ``report`` as JSON on stdout and, if ``out`` is given, write it there too."""
    text = json.dumps(report, indent=2, default=str)
    print(text)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text + "\n", encoding="utf-8")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table (also readable as plain text)."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in cells
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def quiet_logs() -> None:
    """Keep docbinder's log lines (expected warnings included) off the console."""
    import logging

    logger = logging.getLogger("docbinder")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False


def note(text: str) -> None:
    """Progress and tables go to stderr, so stdout stays one JSON document."""
    print(text, file=sys.stderr, flush=True)
