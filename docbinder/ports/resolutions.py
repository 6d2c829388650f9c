"""The bounded record of a workflow's recent resolutions: the :class:`ResolutionLog` port."""

from __future__ import annotations

from typing import Protocol

from docbinder.domain.resolutions import ResolutionRecord


class ResolutionLog(Protocol):
    """The last ``per_workflow`` resolutions of each workflow (older ones are dropped).

    Shared by every process of a deployment (a SQL table on the metadata
    database). Errors: :class:`~docbinder.domain.errors.StorageError`.
    """

    per_workflow: int

    def record(self, record: ResolutionRecord) -> None:
        """Keep ``record``; drop the oldest of its workflow beyond ``per_workflow``."""
        ...

    def recent(self, workflow_id: str, limit: int) -> list[ResolutionRecord]:
        """At most ``limit`` records of ``workflow_id``, newest first."""
        ...
