"""What a workflow's recent resolutions looked like: :class:`ResolutionRecord`.

The inspector page shows, for each recent ``documentList`` a model sent, what it
sent, what resolved and why each miss missed: the screen that answers "0 valid
ContentParts". Records are bounded: the text a model sent is cut at
:data:`MAX_SENT_CHARS`, the lists at :data:`MAX_ENTRIES`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

import attrs

MAX_SENT_CHARS: Final = 2000
"""Characters kept of what the model sent."""
MAX_ENTRIES: Final = 50
"""Resolved references and misses kept per record, each."""
MAX_TEXT: Final = 300


def _cut(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@attrs.frozen
class ResolutionMiss:
    """One reference that did not resolve: what was asked for and the machine-stable reason."""

    reference: str
    reason: str
    detail: str = ""


@attrs.frozen
class ResolutionRecord:
    """One resolution in a workflow: when, by whom, what was sent, what resolved, what missed.

    ``resolved`` holds ``docItem:<id>`` references in order; ``resolved_names``
    their file names (same order). Build it with :meth:`bounded`.
    """

    workflow_id: str
    at: datetime
    user_id: str
    sent: str
    resolved: tuple[str, ...] = ()
    resolved_names: tuple[str, ...] = ()
    misses: tuple[ResolutionMiss, ...] = ()
    truncated: bool = False

    @classmethod
    def bounded(
        cls,
        *,
        workflow_id: str,
        at: datetime,
        user_id: str,
        sent: str,
        resolved: list[tuple[str, str]],
        misses: list[ResolutionMiss],
    ) -> ResolutionRecord:
        """A record cut to the bounds of the module (``truncated`` says whether anything was cut)."""
        cut = len(sent) > MAX_SENT_CHARS or len(resolved) > MAX_ENTRIES or len(misses) > MAX_ENTRIES
        kept = resolved[:MAX_ENTRIES]
        return cls(
            workflow_id=workflow_id,
            at=at,
            user_id=user_id,
            sent=_cut(sent, MAX_SENT_CHARS),
            resolved=tuple(_cut(ref) for ref, _ in kept),
            resolved_names=tuple(_cut(name) for _, name in kept),
            misses=tuple(
                ResolutionMiss(_cut(m.reference), _cut(m.reason, 64), _cut(m.detail))
                for m in misses[:MAX_ENTRIES]
            ),
            truncated=cut,
        )

    def to_json(self) -> dict[str, Any]:
        """The record as a JSON object (snake_case keys; the stored form)."""
        return {
            "workflow_id": self.workflow_id,
            "at": self.at.isoformat(),
            "user_id": self.user_id,
            "sent": self.sent,
            "resolved": list(self.resolved),
            "resolved_names": list(self.resolved_names),
            "misses": [[m.reference, m.reason, m.detail] for m in self.misses],
            "truncated": self.truncated,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ResolutionRecord:
        """The inverse of :meth:`to_json`."""
        return cls(
            workflow_id=data["workflow_id"],
            at=datetime.fromisoformat(data["at"]),
            user_id=data["user_id"],
            sent=data["sent"],
            resolved=tuple(data["resolved"]),
            resolved_names=tuple(data["resolved_names"]),
            misses=tuple(ResolutionMiss(*m) for m in data["misses"]),
            truncated=bool(data["truncated"]),
        )
