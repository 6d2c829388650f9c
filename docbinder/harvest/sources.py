"""The harvest port: where a sandbox's output files come from (:class:`OutputSource`).

A source lists the files one code-execution step left behind and opens each
one for reading. docbinder ships three kinds: a local output directory
(:class:`LocalOutputDir`, what a sandbox mounts), OpenAI container files
(:mod:`docbinder.harvest.openai_containers`) and Anthropic code-execution
output files (:mod:`docbinder.harvest.anthropic_files`). A host with another
sandbox writes its own class with the two methods of :class:`OutputSource`.
"""

from __future__ import annotations

import io
import os
import posixpath
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, BinaryIO, Protocol, cast, runtime_checkable

import attrs


class OutputUnreadable(Exception):
    """An output file that cannot be harvested; the message says why (reported, never raised out)."""


@attrs.frozen
class OutputFile:
    """One output file as a source lists it.

    ``path`` is the file's path as the sandbox names it (``/mnt/data/chart.png``,
    ``outputs/table.csv``): recorded as the FileItem's ``provenance.source_path``
    and matched by :func:`~docbinder.harvest.links.rewrite_links`. ``name`` is
    the file name the FileItem gets. ``size`` is in bytes when the source knows
    it before reading (``None`` otherwise); ``mime_type`` what the source
    declares (``None``: docbinder detects it). ``open`` returns a binary file
    object to read the bytes from (closed by the caller); it raises
    :class:`OutputUnreadable` for a file that must not be read. A source may
    require ``open`` to be called before its iteration moves on to the next
    entry (the local directory opens relative to the directory it is walking).
    """

    path: str
    name: str
    open: Callable[[], BinaryIO] = attrs.field(repr=False)
    size: int | None = None
    mime_type: str | None = None


@attrs.frozen
class SkippedOutput:
    """An entry a source saw but will not offer: ``path`` and the ``reason`` in one sentence."""

    path: str
    reason: str


@runtime_checkable
class OutputSource(Protocol):
    """The port: one sandbox's output files after a code-execution step.

    ``sandbox_id`` names the sandbox (a container id, a code executor, a
    directory) and becomes ``provenance.sandbox_id`` of every harvested file.
    """

    @property
    def sandbox_id(self) -> str:
        """The sandbox's name or id (single-line text, at most 255 characters)."""

    def outputs(self) -> Iterable[OutputFile | SkippedOutput]:
        """Every output file, plus what was seen and not offered (with the reason)."""


_CONTROL = {chr(c) for c in range(0x20)} | {chr(0x7F)} | {chr(c) for c in range(0x80, 0xA0)}


def has_control_characters(text: str) -> bool:
    """Whether ``text`` holds a C0 or C1 control character or DEL (Unicode category Cc)."""
    return any(ch in _CONTROL for ch in text)


@attrs.define
class LocalOutputDir:
    """The files under a local directory that a sandbox wrote into (an :class:`OutputSource`).

    ``root`` is the directory on this machine; ``mount`` the path the sandbox
    sees it as (``/mnt/data``; default: ``root`` itself), so a file
    ``root/plots/a.png`` is recorded as ``/mnt/data/plots/a.png``.
    ``sandbox_id`` defaults to ``local:<root>``. At most ``max_files`` files
    and ``max_depth`` directory levels are walked.

    What is never offered (each a :class:`SkippedOutput` with its reason):
    symbolic links (never followed, wherever they point), anything that is not
    a regular file (FIFOs, sockets, devices), files with several names (hard
    links: one may lie outside ``root``), names with control characters,
    files that cannot be opened. Files are opened relative to their
    directory's descriptor with ``O_NOFOLLOW``, so a directory swapped for a
    link while walking cannot lead outside ``root``. A file whose size or
    modification time changes while it is read is refused by the harvest
    (still being written).
    """

    root: str | os.PathLike[str]
    mount: str | None = None
    sandbox_id: str = ""
    max_files: int = 10_000
    max_depth: int = 32

    def __attrs_post_init__(self) -> None:
        self.root = os.path.abspath(os.fspath(self.root))
        if self.mount is None:
            self.mount = self.root
        if not self.sandbox_id:
            self.sandbox_id = f"local:{self.root}"[:255]

    def outputs(self) -> Iterator[OutputFile | SkippedOutput]:
        """Walk ``root`` (sorted, depth first); yield each regular file and each skipped entry.

        ``root`` itself may be a link (the caller named it); nothing under it is
        followed. Raises ``FileNotFoundError`` or ``NotADirectoryError`` for a
        ``root`` that is missing or no directory.
        """
        flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
        root_fd = os.open(os.fspath(self.root), flags)
        try:
            yield from self._walk(root_fd, "", 0, [0])
        finally:
            os.close(root_fd)

    def _walk(
        self, dir_fd: int, relative: str, depth: int, count: list[int]
    ) -> Iterator[OutputFile | SkippedOutput]:
        mount = self.mount or ""
        for name in sorted(os.listdir(dir_fd)):
            rel = f"{relative}{name}"
            shown = posixpath.join(mount, rel) if mount else rel
            if has_control_characters(name):
                yield SkippedOutput(
                    shown.encode("unicode_escape").decode(), "name has control characters"
                )
                continue
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError as exc:
                yield SkippedOutput(shown, f"cannot be read: {exc.strerror}")
                continue
            if stat.S_ISLNK(st.st_mode):
                yield SkippedOutput(shown, "symbolic link: not followed")
            elif stat.S_ISDIR(st.st_mode):
                if depth + 1 >= self.max_depth:
                    yield SkippedOutput(shown, f"deeper than {self.max_depth} directory levels")
                    continue
                try:
                    flags = (
                        os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
                    )
                    sub_fd = os.open(name, flags, dir_fd=dir_fd)
                except OSError as exc:
                    yield SkippedOutput(shown, f"cannot be read: {exc.strerror}")
                    continue
                try:
                    yield from self._walk(sub_fd, rel + "/", depth + 1, count)
                finally:
                    os.close(sub_fd)
            elif not stat.S_ISREG(st.st_mode):
                yield SkippedOutput(shown, "not a regular file")
            elif st.st_nlink > 1:
                # A hard link may name a file outside the directory: which of its names
                # the sandbox wrote cannot be told, so none is taken.
                yield SkippedOutput(shown, f"has {st.st_nlink} names (hard links)")
            else:
                count[0] += 1
                if count[0] > self.max_files:
                    yield SkippedOutput(shown, f"more than {self.max_files} files in the directory")
                    continue
                yield OutputFile(
                    path=shown, name=name, size=st.st_size, open=_opener(dir_fd, name, st)
                )


def _opener(dir_fd: int, name: str, seen: os.stat_result) -> Callable[[], BinaryIO]:
    """Open ``name`` in ``dir_fd`` without following a link; refuse it if it is no longer the file seen."""

    def open_it() -> BinaryIO:
        try:
            flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
            fd = os.open(name, flags, dir_fd=dir_fd)
        except OSError as exc:
            raise OutputUnreadable(f"cannot be read: {exc.strerror}") from exc
        st = os.fstat(fd)
        if (
            not stat.S_ISREG(st.st_mode)
            or (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino)
            or st.st_nlink > 1
        ):
            os.close(fd)
            raise OutputUnreadable("replaced while being harvested")
        return os.fdopen(fd, "rb")

    return open_it


class ChunkStream(io.RawIOBase):
    """A read-only binary file object over an iterator of byte chunks (a download's body).

    ``on_close`` runs once when the stream is closed (it releases the HTTP
    response). An error of the iterator that is not an :class:`OSError` (an HTTP
    client's, when the connection closes before the body is whole) is
    :class:`OutputUnreadable`: that file is refused, the harvest goes on. Used by the provider sources, whose SDKs hand out chunk
    iterators rather than file objects.
    """

    def __init__(
        self, chunks: Iterable[bytes], on_close: Callable[[], object] | None = None
    ) -> None:
        super().__init__()
        self._chunks = iter(chunks)
        self._pending = b""
        self._on_close = on_close

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
            except OSError:
                raise
            except Exception as exc:  # the SDK's own errors (httpx): the body broke off
                raise OutputUnreadable(f"the download broke off: {exc}") from exc
        view = memoryview(buffer).cast("B")
        count = min(len(view), len(self._pending))
        view[:count] = self._pending[:count]
        self._pending = self._pending[count:]
        return count

    def close(self) -> None:
        if not self.closed and self._on_close is not None:
            on_close, self._on_close = self._on_close, None
            try:
                on_close()
            finally:
                super().close()
            return
        super().close()


DOWNLOAD_CHUNK = 1 << 20
"""Bytes per chunk of a provider's streamed download."""


def streamed_download(
    manager: Any, refusals: Sequence[tuple[type[BaseException], str]] = ()
) -> BinaryIO:
    """The body of an SDK's streaming response as a file object of chunks (:class:`ChunkStream`).

    ``manager`` is the context manager an official SDK's ``with_streaming_response``
    method returns (OpenAI's and Anthropic's share that shape); it is entered now and
    left when the file object is closed. An exception of a kind in ``refusals``
    (``(exception class, reason)``, e.g. the SDK's ``NotFoundError``) while entering is
    :class:`OutputUnreadable` with that reason (``{exc}`` in it stands for the provider's
    message); others propagate.
    """
    try:
        response = manager.__enter__()
    except Exception as exc:
        for kind, reason in refusals:
            if isinstance(exc, kind):
                raise OutputUnreadable(reason.format(exc=exc)) from exc
        raise
    stream = ChunkStream(
        response.iter_bytes(DOWNLOAD_CHUNK), lambda: manager.__exit__(None, None, None)
    )
    return cast(BinaryIO, stream)
