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
  raised;
* a :class:`~docbinder.domain.reading.CancelToken` polled while the child
  runs: when the caller is gone the child is killed at once (outcome
  ``cancelled``).

How many children run at once is bounded by :class:`ConverterSlots` (one
shared set per size in a process, :func:`converter_slots`); the default size
is :func:`default_max_processes`, from the machine's cores and memory.

Sections stream to the parent through a pipe as they are produced. The fork
server imports :mod:`~docbinder.adapters.extract.childsetup` so that children
do not re-run the host's main module. The fork server is the process-wide one
of :mod:`multiprocessing`: a host that uses the ``forkserver`` start method
itself shares it (and its preload list). See ADR 0019 for the measured cost
and the choice.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

import attrs

from docbinder.adapters.extract.convert import (
    CONVERTERS,
    ConversionRefused,
    DocumentProtected,
    Limits,
    NotThatFormat,
    Section,
)
from docbinder.domain.errors import InvalidInput, MissingExtra
from docbinder.domain.reading import CancelToken
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

POLL_SECONDS: Final = 0.1
"""How often a waiting parent looks at the cancel token (seconds)."""

_lock = threading.Lock()
_context: Any = None


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _physical_memory() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
        return None


def default_max_processes(memory_bytes: int | None) -> int:
    """Converter processes that fit this machine: one per core, no more than memory holds.

    ``min(cores usable by this process, physical memory // memory_bytes)``,
    at least 1; without a memory cap (``memory_bytes=None``) or when the
    memory is unknown, the cores alone.
    """
    cores = _cores()
    memory = _physical_memory()
    if memory_bytes is None or memory is None or memory_bytes <= 0:
        return max(1, cores)
    return max(1, min(cores, memory // memory_bytes))


class ConverterSlots:
    """At most ``size`` converter processes at once (a counting semaphore; thread-safe).

    ``running`` is how many slots are held now, ``peak`` the most held at once
    since the slots were made. Raises :class:`~docbinder.domain.errors.InvalidInput`
    for a size below 1.
    """

    def __init__(self, size: int) -> None:
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise InvalidInput(f"max_processes must be a whole number >= 1, got {size!r}")
        self.size = size
        self._free = threading.Semaphore(size)
        self._count_lock = threading.Lock()
        self.running = 0
        self.peak = 0

    @contextlib.contextmanager
    def slot(self, until: float, token: CancelToken | None = None) -> Iterator[str | None]:
        """Hold a slot for the block; yields ``None``, or why none was had.

        Waits until :func:`time.monotonic` reaches ``until`` (queue), looking
        at ``token`` every :data:`POLL_SECONDS`; yields ``"busy"`` when the
        wait ran out and ``"cancelled"`` when the caller went away meanwhile
        (the block then runs without a slot and must not start a process).
        """
        while True:
            if token is not None and token.cancelled:
                yield "cancelled"
                return
            remaining = until - time.monotonic()
            if self._free.acquire(timeout=max(0.0, min(remaining, POLL_SECONDS))):
                break
            if remaining <= 0:
                yield "busy"
                return
        with self._count_lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
        try:
            yield None
        finally:
            with self._count_lock:
                self.running -= 1
            self._free.release()


_slots: dict[int, ConverterSlots] = {}


def converter_slots(size: int) -> ConverterSlots:
    """The process-wide :class:`ConverterSlots` of ``size``: extractors of one size share it."""
    with _lock:
        slots = _slots.get(size)
        if slots is None:
            slots = _slots[size] = ConverterSlots(size)
        return slots


@attrs.frozen
class Outcome:
    """What a conversion gave: the ``sections`` received and how it ended.

    ``status`` is ``"done"``, ``"missing_extra"``, ``"refused"`` (a limit
    broken before converting, e.g. a zip bomb), ``"protected"`` (the document
    needs a password), ``"not_that_format"`` (the bytes are another format,
    ``message`` is its MIME type), ``"failed"`` (the converter raised), ``"timeout"``
    (killed at the deadline), ``"crashed"`` (the child died: a signal,
    ``RLIMIT_AS``/``RLIMIT_CPU``), ``"busy"`` (no converter process was free
    in time, nothing ran) or ``"cancelled"`` (the caller went away; the child
    was killed); ``message`` says more.
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
    except NotThatFormat as exc:
        send("not_that_format", str(exc))
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
    token: CancelToken | None = None,
) -> Outcome:
    """Convert the file at ``path`` with converter ``fmt`` in a limited child process.

    The child stops by itself at ``limits.deadline``; the parent kills it
    :data:`GRACE_SECONDS` later. ``memory_bytes`` caps the child's address
    space; ``ocr`` (picklable) reads pages without a text layer in the child,
    under the same deadline and memory cap. When ``token`` is cancelled the
    child is killed within :data:`POLL_SECONDS` and the outcome is
    ``cancelled`` with the sections so far. Never raises for the converter's sake; raises :class:`OSError` (or
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
            if token is not None and token.cancelled:
                return Outcome(
                    tuple(sections), "cancelled", f"{token.reason}; the converter was stopped"
                )
            remaining = hard_deadline - time.monotonic()
            if remaining <= 0:
                return Outcome(
                    tuple(sections),
                    "timeout",
                    f"time budget of {budget:.1f} s spent; the converter was stopped",
                )
            if not receiver.poll(min(remaining, POLL_SECONDS)):
                continue
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
