"""What a FileItem's provenance is made of while a run produces it (feature row B9, ADR 0091).

A host that calls a tool says so once, around the call: :func:`tool_call`
binds a :class:`ToolCall` (tool name, the host's call id and model name when
it gives them, the digest of the arguments) for the code that runs inside,
in the current thread or task (a :class:`contextvars.ContextVar`, so
concurrent calls in worker threads or tasks keep theirs apart). Every file
the run produces inside it records that call; the run adds its own id, its
workflow and the files it read before (:meth:`RunContext.read_files`).
Nothing is guessed: outside a tool call ``tool`` stays ``None``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import attrs

from docbinder.domain.errors import InvalidInput
from docbinder.domain.model import (
    MAX_PROVENANCE_PARENTS,
    MAX_PROVENANCE_TEXT,
    Provenance,
    arguments_sha256,
)


def _short(value: object) -> str | None:
    """A host-given id or name as a provenance text field: ``None`` for nothing usable, cut at the limit."""
    if value is None:
        return None
    text = " ".join(str(value).split())
    return text[:MAX_PROVENANCE_TEXT] or None


@attrs.frozen
class ToolCall:
    """One tool call as the host describes it: ``tool`` name, ``tool_call_id`` and ``model`` if given, ``args_sha256``."""

    tool: str
    tool_call_id: str | None = None
    args_sha256: str | None = None
    model: str | None = None
    run_id: str | None = None

    @classmethod
    def of(
        cls,
        tool: str,
        arguments: Mapping[str, Any] | str | None,
        *,
        tool_call_id: object = None,
        model: object = None,
        run_id: object = None,
    ) -> ToolCall:
        """The call of ``tool`` with ``arguments`` (digested, never kept); ids and names are cleaned to one line.

        ``run_id`` is the host's id of the agent run, when the call is not
        made through a docbinder :class:`~docbinder.application.binder.Run`
        (which records its own).
        """
        try:
            digest: str | None = arguments_sha256({} if arguments is None else arguments)
        except InvalidInput:  # no digest rather than a wrong one
            digest = None
        return cls(
            tool=_short(tool) or "unknown",
            tool_call_id=_short(tool_call_id),
            args_sha256=digest,
            model=_short(model),
            run_id=_short(run_id),
        )


_CURRENT: contextvars.ContextVar[ToolCall | None] = contextvars.ContextVar(
    "docbinder_tool_call", default=None
)


@contextmanager
def tool_call(call: ToolCall) -> Iterator[ToolCall]:
    """Bind ``call`` for the block: files produced inside record it."""
    token = _CURRENT.set(call)
    try:
        yield call
    finally:
        _CURRENT.reset(token)


def bind_tool_call(call: ToolCall | None) -> None:
    """Bind ``call`` (``None``: unbind) for the rest of the current context.

    For hosts whose hooks run before and after a tool in the tool's own task
    (ADK's plugin callbacks) and so cannot wrap the call in :func:`tool_call`.
    """
    _CURRENT.set(call)


def current_tool_call() -> ToolCall | None:
    """The :class:`ToolCall` bound by the innermost :func:`tool_call`, or ``None``."""
    return _CURRENT.get()


def provenance_for(
    declared: Provenance | None,
    *,
    run_id: str | None,
    workflow_id: str | None,
    parents: tuple[str, ...],
    message_id: str | None = None,
) -> Provenance:
    """The provenance a run records: ``declared`` (or the bound tool call) completed with the run's facts.

    Fields ``declared`` sets win; the run's id, its workflow, the message
    that will attach the file (``message_id``, when the attach was prepared)
    and the files it read (the last :data:`MAX_PROVENANCE_PARENTS`) fill
    those it left empty.
    """
    base = declared
    if base is None:
        call = current_tool_call()
        base = (
            Provenance()
            if call is None
            else Provenance(
                tool=call.tool,
                tool_call_id=call.tool_call_id,
                args_sha256=call.args_sha256,
                model=call.model,
                run_id=call.run_id,
            )
        )
    return attrs.evolve(
        base,
        run_id=base.run_id if base.run_id is not None else run_id,
        workflow_id=base.workflow_id if base.workflow_id is not None else workflow_id,
        message_id=base.message_id if base.message_id is not None else message_id,
        parents=base.parents or parents[-MAX_PROVENANCE_PARENTS:],
    )
