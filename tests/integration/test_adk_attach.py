"""Attaching an ADK artifact to its session's workflow never fails the save (SPEC C3)."""

from __future__ import annotations

import logging

import pytest
from google.genai import types

from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.rbac import RoleTableAuthorizer
from docbinder.domain.access import Action, Resource, ResourceKind
from docbinder.domain.model import Principal
from docbinder.integrations.adk import DocbinderArtifactService
from tests.wiring import wire_binder

pytestmark = pytest.mark.anyio

WHERE = {"app_name": "app1", "user_id": "alice", "session_id": "s1"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class NoWorkflows:
    """The role table, except that nobody may create a workflow."""

    name = "no-workflows"

    def __init__(self) -> None:
        self._inner = RoleTableAuthorizer()

    def is_allowed(self, principal: Principal, action: Action, resource: Resource) -> bool:
        if resource.kind is ResourceKind.WORKFLOW and action is Action.CREATE:
            return False
        return self._inner.is_allowed(principal, action, resource)


async def test_a_save_without_a_session_workflow_still_stores_the_version(
    caplog: pytest.LogCaptureFixture,
) -> None:
    binder = wire_binder(
        MemoryMetadataStore().unit_of_work, MemoryBlobStore(), authorizer=NoWorkflows()
    )
    service = DocbinderArtifactService(binder)
    with caplog.at_level(logging.WARNING, logger="docbinder"):
        version = await service.save_artifact(
            **WHERE, filename="a.txt", artifact=types.Part(text="kept")
        )
    assert version == 0
    assert await service.load_artifact(**WHERE, filename="a.txt") == types.Part(text="kept")
    assert "will not be attached" in caplog.text
    assert binder.list_workflows(Principal("alice", "adk", "app1")) == []


async def test_session_saves_are_attached_to_one_workflow_per_session() -> None:
    binder = wire_binder(MemoryMetadataStore().unit_of_work, MemoryBlobStore())
    service = DocbinderArtifactService(binder, mandate_id="acme")
    for session in ("s1", "s1", "s2"):
        await service.save_artifact(
            **{**WHERE, "session_id": session}, filename="a.txt", artifact=types.Part(text="x")
        )
    await service.save_artifact(**WHERE, filename="user:u.txt", artifact=types.Part(text="u"))
    principal = Principal("alice", "acme", "app1")
    workflows = binder.list_workflows(principal)
    assert len(workflows) == 2
    labels = sorted(
        m.documents_label for w in workflows for m in binder.list_messages(principal, w.id)
    )
    assert labels == ["artifact:a.txt#v0", "artifact:a.txt#v0", "artifact:a.txt#v1"]
    # A second service (another process) finds the same workflow for the session.
    other = DocbinderArtifactService(binder, mandate_id="acme")
    await other.save_artifact(**WHERE, filename="b.txt", artifact=types.Part(text="y"))
    assert len(binder.list_workflows(principal)) == 2
