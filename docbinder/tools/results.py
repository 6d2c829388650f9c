"""What a producing tool returns: the text for the model plus the files behind it (SPEC C5, C10)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import attrs

from docbinder.application.binder import Run, ToolFileResult
from docbinder.application.steps.hashing import FileData
from docbinder.domain.errors import InvalidInput
from docbinder.domain.model import FileItem


@attrs.frozen
class ToolResult:
    """Result of a producing tool.

    ``text`` is what the model sees: for each new file the unified block of
    SPEC C5 (``<Verb> '<name>' (<size> bytes)``, ``  documentList ref:
    docItem:<id>`` when a workflow is bound, ``  file id: <id>``), blocks
    separated by one newline. ``files`` holds one
    :class:`~docbinder.application.binder.ToolFileResult` per new file, in
    order; ``updated`` the FileItems changed in place (``write_file`` in
    append mode), which get no new message.
    """

    text: str
    files: tuple[ToolFileResult, ...] = ()
    updated: tuple[FileItem, ...] = ()

    @property
    def items(self) -> tuple[FileItem, ...]:
        """The new FileItems, then the updated ones."""
        return (*(f.item for f in self.files), *self.updated)

    @property
    def references(self) -> tuple[str, ...]:
        """``docItem:<id>`` of every new file that was attached, in order."""
        return tuple(f.reference for f in self.files if f.reference is not None)

    @property
    def file_ids(self) -> tuple[str, ...]:
        """Ids of every new and updated FileItem, in order."""
        return tuple(item.id for item in self.items)


def check_name(value: object, what: str = "name") -> str:
    """Return ``value`` stripped if it is a non-empty string, else :class:`InvalidInput`."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"the {what} must be a non-empty string")
    return value.strip()


def produce_all(
    run: Run,
    outputs: Iterable[tuple[str, FileData, str | None]],
    *,
    verb: str,
    label: Callable[[str], str],
) -> ToolResult:
    """Bridge each ``(file name, data, MIME type or None)`` with :meth:`Run.produce_file`.

    One ChatMessage per file, labelled ``label(file name)``. Storing errors
    propagate (files already bridged stay); attaching never raises.
    """
    results = tuple(
        run.produce_file(name, data, verb=verb, label=label(name), mime_type=mime)
        for name, data, mime in outputs
    )
    return ToolResult("\n".join(r.text for r in results), results)
