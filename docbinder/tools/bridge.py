"""Turn a host application's own file-producing function into a bridged tool in one line.

::

    @bridged_tool(verb="Exported", label="exportReport:{name}")
    def export_report(run: Run, quarter: str) -> tuple[str, bytes]:
        return f"report-{quarter}.csv", build_csv(quarter)

    text = export_report(run, "Q3")   # the unified tool-result text (SPEC C5)

The function may return any of :data:`Produced`: ``bytes`` (named by the
decorator's ``name``), a ``(file name, data)`` pair (data: bytes, text stored
as UTF-8, an iterable of byte chunks or a binary file object), a
:class:`pathlib.Path` of an existing file (streamed, named by its last
component), or a list of these. Each file is bridged with
:meth:`Run.produce_file` as its own ChatMessage.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Concatenate, ParamSpec

from docbinder.application.binder import Run
from docbinder.application.steps.hashing import FileData
from docbinder.domain.errors import InvalidInput
from docbinder.domain.model import DEFAULT_LABEL
from docbinder.ports.blobs import CHUNK_SIZE
from docbinder.tools.results import ToolResult, produce_all

P = ParamSpec("P")

Produced = bytes | tuple[str, Any] | os.PathLike[str] | list[Any]
"""What a bridged function may return (see the module documentation)."""

NAME_PLACEHOLDER = "{name}"
"""Replaced by each file's name in a label template."""


def _read_path(path: Path) -> Iterator[bytes]:
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK_SIZE):
            yield chunk


def _one(value: object, default_name: str) -> tuple[str, FileData]:
    if isinstance(value, bytes | bytearray | memoryview):
        return default_name, bytes(value)
    if isinstance(value, os.PathLike):
        path = Path(value)
        if not path.is_file():
            raise InvalidInput(f"the tool returned {str(path)!r}, which is not a file")
        return path.name, _read_path(path)
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        name, data = value
        if isinstance(data, str):
            return name, data.encode("utf-8")
        if isinstance(data, bytes | bytearray | memoryview):
            return name, bytes(data)
        if hasattr(data, "read") or hasattr(data, "__iter__"):
            return name, data
        raise InvalidInput(f"the data of {name!r} must be bytes, text, chunks or a file object")
    raise InvalidInput(
        "a bridged tool must return bytes, a (name, data) pair, a Path, or a list of these; "
        f"got {type(value).__name__}"
    )


def produced_files(produced: object, default_name: str) -> list[tuple[str, FileData]]:
    """Normalise a bridged function's return value to ``[(file name, data), ...]``.

    A 2-tuple whose first element is a string is one file; any other list or
    tuple is a list of files. Raises :class:`InvalidInput` for anything else
    and for an empty list.
    """
    is_pair = isinstance(produced, tuple) and len(produced) == 2 and isinstance(produced[0], str)
    if isinstance(produced, list | tuple) and not is_pair:
        files = [_one(value, default_name) for value in produced]
    else:
        files = [_one(produced, default_name)]
    if not files:
        raise InvalidInput("the tool produced no file")
    return files


def _label_for(template: str, file_name: str) -> str:
    return template.replace(NAME_PLACEHOLDER, file_name)


def bridge(
    run: Run,
    produced: Produced,
    *,
    verb: str = "Stored",
    label: str = DEFAULT_LABEL,
    name: str = "output",
) -> ToolResult:
    """Bridge whatever a host function produced (see :func:`produced_files`).

    ``label`` is a template: ``{name}`` is replaced by each file's name.
    ``name`` names bare ``bytes``. Returns the :class:`ToolResult` (text: one
    unified block per file). Storing errors propagate; attaching never raises.
    """
    files = produced_files(produced, name)
    return produce_all(
        run,
        ((file_name, data, None) for file_name, data in files),
        verb=verb,
        label=lambda file_name: _label_for(label, file_name),
    )


def bridged_tool(
    *, verb: str = "Stored", label: str | None = None, name: str | None = None
) -> Callable[[Callable[Concatenate[Run, P], Any]], Callable[Concatenate[Run, P], str]]:
    """Decorator: the function (``run`` first) becomes a tool that returns the unified text.

    ``label`` is a template with optional ``{name}`` (default
    ``<function name>:{name}``); ``name`` names bare ``bytes`` results
    (default: the function's name). The wrapped function's
    :class:`ToolResult` is not returned; call :func:`bridge` directly when you
    need it.
    """

    def decorate(
        func: Callable[Concatenate[Run, P], Any],
    ) -> Callable[Concatenate[Run, P], str]:
        template = label if label is not None else f"{func.__name__}:{NAME_PLACEHOLDER}"
        default_name = name if name is not None else func.__name__

        @functools.wraps(func)
        def tool(run: Run, /, *args: P.args, **kwargs: P.kwargs) -> str:
            produced = func(run, *args, **kwargs)
            return bridge(run, produced, verb=verb, label=template, name=default_name).text

        return tool

    return decorate
