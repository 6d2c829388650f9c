"""Keep a workflow's recent resolutions for the inspector page: :class:`ResolutionRecorder`."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from docbinder.application.context import RunContext
from docbinder.domain.errors import DocbinderError
from docbinder.domain.resolutions import MAX_SENT_CHARS, ResolutionMiss, ResolutionRecord
from docbinder.ports.resolutions import ResolutionLog
from docbinder.ports.system import Clock

if TYPE_CHECKING:
    from docbinder.application.use_cases.resolve_document_list import Resolution

log = logging.getLogger(__name__)


def sent_text(document_list: object) -> str:
    """What the model sent, as text: a string as it is, anything else as JSON (cut)."""
    if isinstance(document_list, str):
        return document_list[: MAX_SENT_CHARS + 1]
    try:
        text = json.dumps(document_list, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(document_list)
    return text[: MAX_SENT_CHARS + 1]


class ResolutionRecorder:
    """Records each resolution in a bound workflow in the :class:`ResolutionLog` port.

    Recording never fails a resolution: a storage fault is logged as one warning.
    """

    def __init__(self, resolutions: ResolutionLog, clock: Clock) -> None:
        self.resolutions = resolutions
        self._clock = clock

    def record(self, ctx: RunContext, document_list: object, resolution: Resolution) -> None:
        """Keep what ``document_list`` resolved to in the run's workflow (nothing without one)."""
        workflow = ctx.bound_workflow
        if workflow is None:
            return
        try:
            record = ResolutionRecord.bounded(
                workflow_id=workflow.id,
                at=self._clock.now(),
                user_id=ctx.principal.user_id,
                sent=sent_text(document_list),
                resolved=[(d.reference, d.document.file_name) for d in resolution.documents],
                misses=[
                    ResolutionMiss(u.reference, u.reason.value, u.message)
                    for u in resolution.unresolved
                ],
            )
            self.resolutions.record(record)
        except DocbinderError as exc:
            log.warning("could not record a resolution of workflow %s: %s", workflow.id, exc)
