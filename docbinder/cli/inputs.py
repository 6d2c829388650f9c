"""Reading the files and standard input a command stores, with a progress bar for large ones.

Every check here runs before anything is written: a command that stores several
files refuses them all when one is unreadable, too large or badly named.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from docbinder.domain.errors import InvalidInput, SizeLimitExceeded
from docbinder.domain.model import check_file_name

if TYPE_CHECKING:
    from rich.progress import Progress

PROGRESS_THRESHOLD = 8 << 20
"""Files larger than this many bytes get a progress bar."""

CHUNK_SIZE = 1 << 20
"""Bytes read from a file or stdin at a time (1 MiB)."""

STDIN = Path("-")
"""The FILE argument that means standard input."""


def check_readable(paths: list[Path]) -> None:
    """Raise ``OSError`` for the first path that is not a readable regular file (before any write)."""
    for path in paths:
        if not path.exists():
            raise FileNotFoundError(2, "no such file", str(path))
        if not path.is_file():
            raise IsADirectoryError(21, "not a regular file", str(path))
        if not os.access(path, os.R_OK):
            raise PermissionError(13, "permission denied", str(path))


def check_sizes(paths: list[Path], limit: int | None) -> None:
    """Raise :class:`SizeLimitExceeded` naming the first file over ``limit`` bytes (``None``: no limit)."""
    if limit is None:
        return
    for path in paths:
        if path.stat().st_size > limit:
            raise SizeLimitExceeded(limit, str(path))


def stored_name(path: Path) -> str:
    """The name ``path`` is stored under; :class:`InvalidInput` naming the file if unusable.

    A name that is not valid UTF-8 (decoded by Python with surrogate escapes) cannot
    be stored as text; the message says so and points at ``--name``.
    """
    try:
        return check_file_name(path.name)
    except InvalidInput as exc:
        if any("\udc80" <= ch <= "\udcff" for ch in path.name):
            raise InvalidInput(
                f"the name of {str(path)!r} is not valid UTF-8; "
                "store it under another name with --name NAME"
            ) from None
        raise InvalidInput(
            f"{str(path)!r}: {exc}; store it under another name with --name NAME"
        ) from None


def read_chunks(path: Path, progress: Progress | None) -> Iterator[bytes]:
    """Stream ``path`` in :data:`CHUNK_SIZE` chunks, advancing a progress bar for large files."""
    size = path.stat().st_size
    task = None
    if progress is not None and size > PROGRESS_THRESHOLD:
        task = progress.add_task(path.name, total=size)
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK_SIZE):
            if task is not None and progress is not None:
                progress.advance(task, len(chunk))
            yield chunk


def read_stdin_chunks() -> Iterator[bytes]:
    """Stdin's bytes in :data:`CHUNK_SIZE` chunks."""
    source = sys.stdin.buffer
    while chunk := source.read(CHUNK_SIZE):
        yield chunk


def read_stdin_text(what: str) -> str:
    """All of stdin decoded as UTF-8 (a BOM dropped); :class:`InvalidInput` naming the bad byte."""
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"{what} is not valid UTF-8 (byte {exc.start}: {data[exc.start : exc.start + 1]!r})"
        ) from None


def new_progress(paths: list[Path]) -> Progress:
    """A progress bar on stderr, enabled only when one of ``paths`` is over the threshold."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    from docbinder.cli.output import err

    large = any(p.stat().st_size > PROGRESS_THRESHOLD for p in paths)
    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=err,
        transient=True,
        disable=not large,
    )
