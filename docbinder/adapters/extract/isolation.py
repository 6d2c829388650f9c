"""Run a document converter in a resource-limited child process, or in the calling thread.

Converters of third-party formats cannot be interrupted inside a thread: a
library stuck in one page or one zip member holds the thread until it is
done. :func:`run_isolated` therefore converts in a child process started
from a ``forkserver`` (:mod:`multiprocessing`; the server imports the
converter libraries once, so each child starts in about 10 ms), with

* a wall-clock deadline enforced by the parent, which kills the child and
  keeps the sections received so far;
* ``RLIMIT_CPU`` (the budget plus a grace period) and, if given,
  ``RLIMIT_AS`` (address space, bytes) set in the child (POSIX ``setrlimit``);
* a crash (segfault, out of memory, killed) reported as an outcome, never
  raised.

Sections stream to the parent through a pipe as they are produced. The fork
server imports :mod:`~docbinder.adapters.extract.childsetup` so that children
do not re-run the host's main module. The fork server is the process-wide one
of :mod:`multiprocessing`: a host that uses the ``forkserver`` start method
itself shares it (and its preload list). See ADR 0019 for the measured cost
and the choice.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Final

import attrs

from docbinder.adapters.extract.convert import (
    CONVERTERS,
    ConversionRefused,
    DocumentProtected,
    Limits,
    Section,
)
from docbinder.domain.errors import MissingExtra
from docbinder.ports.extractor import TextRecognizer

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

GRACE_SECONDS: Final = 2.0
"""Seconds a child gets past the time budget to stop by itself before it is killed."""

PRELOAD: Final = (
    "docbinder.adapters.extract.childsetup",
    "docbinder.adapters.extract.convert",
    "pypdf",
    "markitdown",
    "openpyxl",
    "xlrd",
    "odf.opendocument",
    "striprtf.striprtf",
    "pptx",
    "PIL.Image",
    "pypdfium2",
    "tesserocr",
)
"""Modules the fork server imports once for all children (missing ones are skipped)."""

_lock = threading.Lock()
_context: Any = None


@attrs.frozen
class Outcome:
    """What a conversion gave: the ``sections`` received and how it ended.

    ``status`` is ``"done"``, ``"missing_extra"``, ``"refused"`` (a limit
    broken before converting, e.g. a zip bomb), ``"protected"`` (the document
    needs a password), ``"failed"`` (the converter raised), ``"timeout"``
    (killed at the deadline) or ``"crashed"`` (the child died: a signal,
    ``RLIMIT_AS``/``RLIMIT_CPU``); ``message`` says more.
    """

    sections: tuple[Section, ...]
    status: str
    message: str | None = None


def _get_context() -> Any:
    global _context
    with _lock:
        if _context is None:
            import multiprocessing  # here, not at import: only a conversion needs it

            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(list(PRELOAD))
            _context = context
        return _context


def _limit_resources(cpu_seconds: int, memory_bytes: int | None) -> None:
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
        if memory_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    except (ValueError, OSError):
        pass


def _convert(
    fmt: str, path: str, limits: Limits, send: Any, ocr: TextRecognizer | None = None
) -> None:
    """Run converter ``fmt`` and report through ``send(kind, payload)``; never raises."""
    try:
        for section in CONVERTERS[fmt](path, limits, ocr):
            send("section", section)
        send("done", None)
    except MissingExtra as exc:
        send("missing_extra", str(exc))
    except ConversionRefused as exc:
        send("refused", str(exc))
    except DocumentProtected as exc:
        send("protected", str(exc))
    except MemoryError:
        send("failed", "the converter ran out of memory")
    except Exception as exc:
        send("failed", f"{type(exc).__name__}: {exc}")


def _child(
    conn: Connection,
    fmt: str,
    path: str,
    limits: Limits,
    cpu: int,
    memory: int | None,
    ocr: TextRecognizer | None,
) -> None:
    _limit_resources(cpu, memory)
    try:
        _convert(fmt, path, limits, lambda kind, payload: conn.send((kind, payload)), ocr)
    finally:
        conn.close()


def run_inline(fmt: str, path: str, limits: Limits, ocr: TextRecognizer | None = None) -> Outcome:
    """Convert in the calling thread; limits are cooperative (checked between pages).

    ``ocr`` reads pages without a text layer (OCR itself stops at the deadline).
    """
    sections: list[Section] = []
    end: list[tuple[str, str | None]] = []

    def send(kind: str, payload: Any) -> None:
        if kind == "section":
            sections.append(payload)
        else:
            end.append((kind, payload))

    _convert(fmt, path, limits, send, ocr)
    status, message = end[0] if end else ("failed", "the converter stopped without a result")
    return Outcome(tuple(sections), status, message)


def run_isolated(
    fmt: str,
    path: str,
    limits: Limits,
    *,
    memory_bytes: int | None = None,
    ocr: TextRecognizer | None = None,
) -> Outcome:
    """Convert the file at ``path`` with converter ``fmt`` in a limited child process.

    The child stops by itself at ``limits.deadline``; the parent kills it
    :data:`GRACE_SECONDS` later. ``memory_bytes`` caps the child's address
    space; ``ocr`` (picklable) reads pages without a text layer in the child,
    under the same deadline and memory cap. Never raises for the converter's sake; raises :class:`OSError` (or
    ``AssertionError`` in a daemonic process, which may not start children)
    only if no process can be started.
    """
    context = _get_context()
    receiver, sender = context.Pipe(duplex=False)
    budget = max(0.0, limits.deadline - time.monotonic())
    cpu = int(budget + GRACE_SECONDS) + 1
    process = context.Process(
        target=_child, args=(sender, fmt, path, limits, cpu, memory_bytes, ocr), daemon=True
    )
    sections: list[Section] = []
    try:
        process.start()
        sender.close()
        hard_deadline = limits.deadline + GRACE_SECONDS
        while True:
            remaining = hard_deadline - time.monotonic()
            if remaining <= 0 or not receiver.poll(remaining):
                return Outcome(
                    tuple(sections),
                    "timeout",
                    f"time budget of {budget:.1f} s spent; the converter was stopped",
                )
            try:
                kind, payload = receiver.recv()
            except (EOFError, OSError):
                process.join(1.0)
                return Outcome(
                    tuple(sections),
                    "crashed",
                    f"the converter process ended unexpectedly (exit code {process.exitcode})",
                )
            if kind == "section":
                sections.append(payload)
                continue
            return Outcome(tuple(sections), kind, payload)
    finally:
        sender.close()
        receiver.close()
        _reap(process)


def _reap(process: Any) -> None:
    """Kill the child if it still runs and wait for it; a never-started child is left alone."""
    try:
        if process.is_alive():
            process.kill()
        process.join(5.0)
    except (AssertionError, ValueError):  # never started
        return
    if process.exitcode is not None:
        process.close()
