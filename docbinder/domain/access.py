"""Vocabulary of access decisions (SPEC C11)."""

from __future__ import annotations

import enum

import attrs

from docbinder.domain.model import ChatWorkflow, FileItem, Scope


class Action(enum.StrEnum):
    """What a principal wants to do with a resource."""

    READ = "read"
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"


class ResourceKind(enum.StrEnum):
    """Kinds of resources an authorizer decides on."""

    FILE = "file"
    WORKFLOW = "workflow"


@attrs.frozen
class Resource:
    """What an authorizer decides on: a FileItem or workflow, by its scope and owner.

    For ``create`` the resource is the one about to be made: ``id`` is ``None``
    and ``owner_id`` is the creating user.
    """

    kind: ResourceKind
    scope: Scope
    owner_id: str
    id: str | None = None

    @classmethod
    def of_file(cls, item: FileItem) -> Resource:
        """The resource describing an existing FileItem."""
        return cls(ResourceKind.FILE, item.scope, item.created_by, item.id)

    @classmethod
    def of_workflow(cls, workflow: ChatWorkflow) -> Resource:
        """The resource describing an existing workflow."""
        return cls(ResourceKind.WORKFLOW, workflow.scope, workflow.created_by, workflow.id)
