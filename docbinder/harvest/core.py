"""Harvest: a code-execution step's output files become FileItems and ChatDocuments of the run.

:func:`harvest` reads every file an :class:`~docbinder.harvest.sources.OutputSource`
offers and hands the new or changed ones to the run's producer path
(:meth:`~docbinder.application.binder.Run.produce_file`: blob, duplicate check
by SHA-256 (SPEC C2), FileItem and ChatDocument in one transaction). Each
FileItem's provenance names the tool call (the bound
:func:`~docbinder.application.provenance.tool_call` or the ``tool_call_id``
given), the sandbox and the file's path in it (ADR 0100).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from typing import BinaryIO

import attrs

from docbinder.application.binder import Run, ToolFileResult
from docbinder.application.provenance import current_tool_call
from docbinder.application.steps.results import printable
from docbinder.domain.errors import BinderClosed, DocbinderError, InvalidInput, StorageError
from docbinder.domain.model import MAX_PROVENANCE_TEXT, Provenance, check_file_name
from docbinder.harvest.sources import (
    OutputFile,
    OutputSource,
    OutputUnreadable,
    SkippedOutput,
    has_control_characters,
)

HARVEST_TOOL = "code_execution"
"""The ``provenance.tool`` of a harvested file when no tool call is bound or given."""

DEFAULT_LABEL_PREFIX = "codeOutput:"
"""Prefix of each harvested file's ``documents_label`` (``docList:codeOutput:chart.png``)."""

SPOOL_MEMORY_BYTES = 8 << 20
"""Bytes of one output file kept in memory while it is hashed; the rest spills to a temporary file."""

READ_CHUNK = 1 << 20
"""Bytes read from an output file at a time."""


@attrs.frozen
class HarvestedFile:
    """One output file now in the workflow: its sandbox ``path`` and the producer's ``result``.

    ``result.reference`` is the ``docItem:`` reference (``None`` when the
    attach was refused: ``result.not_attached`` says why); ``result.item``
    the FileItem, ``result.duplicate`` whether an existing FileItem with the
    same bytes and name was reused.
    """

    path: str
    result: ToolFileResult

    @property
    def reference(self) -> str | None:
        """``docItem:<id>`` of the new ChatDocument, or ``None``."""
        return self.result.reference


@attrs.frozen
class HeldFile:
    """An output file whose bytes the workflow already holds under the same path: not attached again."""

    path: str
    reference: str
    file_id: str


@attrs.frozen
class Refused:
    """An output file that was not harvested: its ``path`` and the ``reason``, one sentence."""

    path: str
    reason: str


@attrs.frozen
class HarvestReport:
    """What :func:`harvest` did with each output file of one step.

    ``harvested``: new or changed files, now ChatDocuments; ``held``: files
    whose bytes the workflow already had under that path; ``refused``:
    everything else with its reason (links, oversize files, unreadable or
    still-changing files, bad names). ``sandbox_id`` as the source named it.
    """

    sandbox_id: str
    harvested: tuple[HarvestedFile, ...] = ()
    held: tuple[HeldFile, ...] = ()
    refused: tuple[Refused, ...] = ()

    @property
    def references(self) -> dict[str, str]:
        """Sandbox path -> ``docItem:`` reference, for every harvested or held file."""
        refs = {f.path: f.reference for f in self.harvested if f.reference is not None}
        refs.update({f.path: f.reference for f in self.held})
        return refs

    @property
    def text(self) -> str:
        """A tool-result text: one line per file (harvested, already held, refused)."""
        # Names, paths and reasons come from the sandbox: every character that could
        # break or fake a line (U+2028, controls, bidi marks) is shown as an escape.
        lines = [
            f"Harvested {len(self.harvested)} file(s) from sandbox {printable(self.sandbox_id)}"
            f" ({len(self.held)} unchanged, {len(self.refused)} refused)"
        ]
        for f in self.harvested:
            lines.append(f"  {printable(f.path)} -> {f.reference or 'not in the workflow'}")
        for h in self.held:
            lines.append(f"  {printable(h.path)} -> {h.reference} (unchanged)")
        for r in self.refused:
            lines.append(f"  {printable(r.path)}: refused, {printable(r.reason)}")
        return "\n".join(lines)


def harvest(
    run: Run,
    source: OutputSource,
    *,
    tool_call_id: str | None = None,
    tool: str | None = None,
    label_prefix: str = DEFAULT_LABEL_PREFIX,
    max_file_size: int | None = None,
    settle_seconds: float = 0.0,
) -> HarvestReport:
    """Attach every new or changed output file of ``source`` to ``run``'s workflow.

    For each :class:`~docbinder.harvest.sources.OutputFile`: the bytes are
    read once (hashed with SHA-256 while spooled, at most ``max_file_size``
    bytes, default the binder's ``max_file_size``); if the workflow already
    holds a ChatDocument of that file name whose FileItem has that SHA-256
    (however those bytes were stored first), the file is :class:`HeldFile`;
    otherwise it goes through :meth:`Run.produce_file` (verb ``Harvested``,
    label ``label_prefix + name``), whose duplicate rule reuses a FileItem
    with the same bytes and name (SPEC C2).

    Provenance: ``tool`` and ``tool_call_id`` if given, else the bound tool
    call's, else ``tool`` is :data:`HARVEST_TOOL`; ``sandbox_id`` is the
    source's, ``source_path`` the file's path.

    Refused (in the report, never raised): entries the source skipped, names
    docbinder cannot store, files larger than the limit (by declared size
    before reading, by counting while reading), files whose size or
    modification time changed while read or that were modified less than
    ``settle_seconds`` before (still being written), files that cannot be
    read, and files the producer path refuses (access, quota). Storage
    failures of the backend (:class:`~docbinder.domain.errors.StorageError`)
    and a closed binder propagate.
    """
    limit = max_file_size if max_file_size is not None else run.binder.max_file_size
    call = current_tool_call()
    tool_name = _short(tool) or (call.tool if call is not None else None) or HARVEST_TOOL
    call_id = _short(tool_call_id) or (call.tool_call_id if call is not None else None)
    base = Provenance(
        tool=tool_name,
        tool_call_id=call_id,
        args_sha256=call.args_sha256 if call is not None and tool is None else None,
        model=call.model if call is not None else None,
        run_id=call.run_id if call is not None else None,
        sandbox_id=_short(source.sandbox_id),
    )
    harvested: list[HarvestedFile] = []
    held: list[HeldFile] = []
    refused: list[Refused] = []
    held_index = _HeldIndex(run)
    for entry in source.outputs():
        if isinstance(entry, SkippedOutput):
            refused.append(Refused(entry.path, entry.reason))
            continue
        outcome = _one(run, entry, base, limit, label_prefix, settle_seconds, held_index)
        if isinstance(outcome, HarvestedFile):
            harvested.append(outcome)
        elif isinstance(outcome, HeldFile):
            held.append(outcome)
        else:
            refused.append(outcome)
    return HarvestReport(source.sandbox_id, tuple(harvested), tuple(held), tuple(refused))


def _short(value: str | None) -> str | None:
    if value is None:
        return None
    text = " ".join(str(value).split())
    return text[:MAX_PROVENANCE_TEXT] or None


def _one(
    run: Run,
    entry: OutputFile,
    base: Provenance,
    limit: int | None,
    label_prefix: str,
    settle_seconds: float,
    held_index: _HeldIndex,
) -> HarvestedFile | HeldFile | Refused:
    path = entry.path
    if has_control_characters(path) or has_control_characters(entry.name):
        return Refused(path.encode("unicode_escape").decode(), "name has control characters")
    try:
        check_file_name(entry.name)
        provenance = attrs.evolve(base, source_path=path)
    except InvalidInput as exc:
        return Refused(path, f"name cannot be stored: {exc}")
    if limit is not None and entry.size is not None and entry.size > limit:
        return Refused(path, f"{entry.size} bytes, larger than max_file_size ({limit} bytes)")
    spooled = _spool(entry, limit, settle_seconds)
    if isinstance(spooled, Refused):
        return spooled
    spool, sha256 = spooled
    with spool:
        known = held_index.find(entry.name, sha256)
        if known is not None:
            return HeldFile(path, known[0], known[1])
        spool.seek(0)
        try:
            result = run.produce_file(
                entry.name,
                spool,
                verb="Harvested",
                label=f"{label_prefix}{entry.name}"[:1024],
                mime_type=entry.mime_type,
                provenance=provenance,
            )
        except (StorageError, BinderClosed):
            raise
        except DocbinderError as exc:
            return Refused(path, f"not stored: {exc}")
    if result.document_id is not None:
        held_index.add(entry.name, sha256, result.document_id, result.item.id)
    return HarvestedFile(path, result)


def _spool(
    entry: OutputFile, limit: int | None, settle_seconds: float
) -> tuple[tempfile.SpooledTemporaryFile[bytes], str] | Refused:
    """The file's bytes in a spool and their SHA-256, or why it cannot be harvested."""
    path = entry.path
    try:
        stream: BinaryIO = entry.open()
    except OutputUnreadable as exc:
        return Refused(path, str(exc))
    except OSError as exc:
        return Refused(path, f"cannot be read: {exc.strerror or exc}")
    # closed by the caller (or here, on every refusal)
    spool: tempfile.SpooledTemporaryFile[bytes] = tempfile.SpooledTemporaryFile(  # noqa: SIM115
        max_size=SPOOL_MEMORY_BYTES
    )
    digest = hashlib.sha256()
    size = 0
    try:
        with stream:
            before = _fstat(stream)
            if before is not None and settle_seconds > 0:
                age = time.time() - before.st_mtime
                if age < settle_seconds:
                    spool.close()
                    return Refused(path, f"still being written (modified {age:.1f} s ago)")
            while True:
                chunk = stream.read(READ_CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                if limit is not None and size > limit:
                    spool.close()
                    return Refused(path, f"larger than max_file_size ({limit} bytes)")
                digest.update(chunk)
                spool.write(chunk)
            after = _fstat(stream)
    except OSError as exc:
        spool.close()
        return Refused(path, f"cannot be read: {exc.strerror or exc}")
    except OutputUnreadable as exc:
        spool.close()
        return Refused(path, str(exc))
    local = before is not None and after is not None
    if (
        local
        and before is not None
        and after is not None
        and (
            (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns)
            or after.st_size != size
            or (entry.size is not None and entry.size != size)
        )
    ):
        spool.close()
        return Refused(path, "still being written (it changed while it was read)")
    if not local and entry.size is not None and size != entry.size:
        spool.close()
        return Refused(path, f"incomplete: {size} of {entry.size} bytes arrived")
    return spool, digest.hexdigest()


def _fstat(stream: BinaryIO) -> os.stat_result | None:
    try:
        return os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):  # not a file on this machine
        return None


class _HeldIndex:
    """Which (file name, SHA-256) the run's workflow already holds, read lazily per file name.

    A document of the same name and bytes is the harvested file, whichever path or
    tool stored those bytes first: a reused FileItem keeps its first producer's
    provenance, so its ``source_path`` cannot tell.
    """

    def __init__(self, run: Run) -> None:
        self._run = run
        self._by_name: dict[str, dict[str, tuple[str, str]]] = {}
        self._documents: list[tuple[str, str, str]] | None = None

    def _all(self) -> list[tuple[str, str, str]]:
        """(file name, document id, file id) of every document of the workflow, oldest first."""
        if self._documents is None:
            run = self._run
            self._documents = (
                []
                if run.workflow is None
                else [(d.file_name, d.id, d.file_id) for m in run.messages() for d in m.documents]
            )
        return self._documents

    def find(self, name: str, sha256: str) -> tuple[str, str] | None:
        """``(docItem reference, file id)`` of a document holding these bytes under ``name``."""
        known = self._by_name.get(name)
        if known is None:
            known = {}
            for doc_name, document_id, file_id in self._all():
                if doc_name != name:
                    continue
                try:
                    item = self._run.get_file(file_id)
                except DocbinderError:
                    continue  # deleted or no longer readable: not held
                if self._run.binder.retention.has_expired(item):
                    continue  # past its retention period: harvested again as a fresh file
                known.setdefault(item.sha256, (f"docItem:{document_id}", item.id))
            self._by_name[name] = known
        return known.get(sha256)

    def add(self, name: str, sha256: str, document_id: str, file_id: str) -> None:
        self.find(name, sha256)
        self._by_name[name][sha256] = (f"docItem:{document_id}", file_id)
