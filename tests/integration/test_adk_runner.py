"""DocbinderArtifactService inside a real ADK Runner, on SQLite + local disk and PostgreSQL + S3.

An ``LlmAgent`` (driven by a scripted model, no network) calls a tool that
saves an artifact through its tool context; a later tool call, in a second
invocation of the same session, loads it again. The stored artifact is then
checked on docbinder's side: a FileItem per version, attached to the
session's workflow, readable through its ``docItem:`` reference.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from docbinder.adapters.s3 import S3BlobStore
from docbinder.application import DocBinder
from docbinder.config import Settings
from docbinder.container import build_binder
from docbinder.domain.model import Principal, arguments_sha256
from docbinder.integrations.adk import DocbinderArtifactService, DocbinderProvenancePlugin
from tests.contract.sql_backends import provision
from tests.integration.adk_scripted import ScriptedModel, call, function_responses, say
from tests.wiring import wire_binder

pytestmark = pytest.mark.anyio

APP, USER, SESSION = "reports", "alice", "s-1"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def save_report(text: str, tool_context: ToolContext) -> dict[str, Any]:
    """Save ``text`` as the artifact report.md (session-scoped) and a user-scoped copy."""
    version = await tool_context.save_artifact(
        "report.md", types.Part.from_bytes(data=text.encode(), mime_type="text/markdown")
    )
    shared = await tool_context.save_artifact("user:profile.txt", types.Part(text=f"by {USER}"))
    return {"version": version, "shared_version": shared}


async def read_report(tool_context: ToolContext) -> dict[str, Any]:
    """Load report.md and the user-scoped profile.txt back."""
    part = await tool_context.load_artifact("report.md")
    profile = await tool_context.load_artifact("user:profile.txt")
    keys = await tool_context.list_artifacts()
    assert part is not None and part.inline_data is not None and part.inline_data.data
    assert profile is not None
    return {
        "text": part.inline_data.data.decode(),
        "mime": part.inline_data.mime_type,
        "profile": profile.text,
        "keys": keys,
    }


async def run_turn(runner: Runner, model: ScriptedModel, script: list[Any], text: str) -> str:
    """Run one invocation following ``script``; return its invocation id."""
    model.script[:] = script
    message = types.Content(role="user", parts=[types.Part(text=text)])
    invocations = set()
    async for event in runner.run_async(user_id=USER, session_id=SESSION, new_message=message):
        invocations.add(event.invocation_id)
    assert model.script == [], "the agent did not follow the script to its end"
    assert len(invocations) == 1
    return invocations.pop()


async def exercise(binder: DocBinder) -> list[int]:
    """Drive the Runner through save, load and rewind; return the versions of ``report.md``."""
    service = DocbinderArtifactService(binder, mandate_id="acme")
    model = ScriptedModel(model="scripted", script=[])
    agent = LlmAgent(name="writer", model=model, tools=[save_report, read_report])
    sessions = InMemorySessionService()
    await sessions.create_session(app_name=APP, user_id=USER, session_id=SESSION)
    app = App(name=APP, root_agent=agent, plugins=[DocbinderProvenancePlugin()])
    runner = Runner(app=app, session_service=sessions, artifact_service=service)

    first_turn = await run_turn(
        runner,
        model,
        [call("save_report", text="# Q3\nfirst"), say("saved")],
        "write the report",
    )
    assert function_responses(model)[-1] == {"version": 0, "shared_version": 0}
    second = await run_turn(
        runner,
        model,
        [call("save_report", text="# Q3\nsecond"), call("read_report"), say("done")],
        "revise and read it back",
    )
    responses = function_responses(model)
    assert {"version": 1, "shared_version": 1} in responses
    assert responses[-1] == {
        "text": "# Q3\nsecond",
        "mime": "text/markdown",
        "profile": f"by {USER}",
        "keys": ["report.md", "user:profile.txt"],
    }

    # The same files, seen from docbinder: one FileItem per version, the
    # session-scoped ones attached to the session's workflow.
    versions = await service.list_versions(
        app_name=APP, user_id=USER, session_id=SESSION, filename="report.md"
    )
    assert versions == [0, 1]
    first = await service.load_artifact(
        app_name=APP, user_id=USER, session_id=SESSION, filename="report.md", version=0
    )
    assert first is not None and first.inline_data is not None
    assert first.inline_data.data == b"# Q3\nfirst"
    principal = Principal(USER, "acme", APP)
    workflows = binder.list_workflows(principal)
    assert len(workflows) == 1
    run = binder.start_run(principal, workflows[0].id)
    documents = [d for m in binder.list_messages(principal, workflows[0].id) for d in m.documents]
    assert [d.file_name for d in documents] == ["report.md", "report.md"]
    content = run.get_content([f"docItem:{documents[-1].id}"])
    assert content.documents[0].parts[0].text == "# Q3\nsecond"
    # The plugin declared each call: ADK's function_call_id and invocation id are recorded.
    saved = binder.get_file(principal, documents[0].file_id).provenance
    assert saved.tool == "save_report"
    assert saved.tool_call_id is not None and saved.run_id == first_turn
    assert saved.args_sha256 == arguments_sha256({"text": "# Q3\nfirst"})

    # ADK's session rewind goes through the service too: it saves version 0's
    # content again as version 2, so the latest is the first report.
    await runner.rewind_async(user_id=USER, session_id=SESSION, rewind_before_invocation_id=second)
    where = {"app_name": APP, "user_id": USER, "session_id": SESSION}
    assert await service.list_versions(**where, filename="report.md") == [0, 1, 2]
    latest = await service.load_artifact(**where, filename="report.md")
    assert latest is not None and latest.inline_data is not None
    assert latest.inline_data.data == b"# Q3\nfirst"
    return await service.list_versions(**where, filename="report.md")


async def test_runner_on_sqlite_and_local_disk(tmp_path: Path) -> None:
    settings = Settings(
        home=tmp_path,
        database_url=f"sqlite:///{tmp_path / 'docbinder.db'}",
        blob_url=(tmp_path / "blobs").as_uri(),
    )
    assert await exercise(build_binder(settings)) == [0, 1, 2]


@pytest.fixture
def postgres_s3_binder(
    tmp_path: Path,
    s3_bucket: str,
    s3_endpoint: str,
) -> Iterator[DocBinder]:
    with provision("postgresql", tmp_path) as backend:
        blobs = S3BlobStore(s3_bucket, "blobs", endpoint_url=s3_endpoint, region_name="us-east-1")
        yield wire_binder(backend.store.unit_of_work, blobs, backend.store.read_unit_of_work)


@pytest.mark.postgres
async def test_runner_on_postgresql_and_s3(postgres_s3_binder: DocBinder) -> None:
    assert await exercise(postgres_s3_binder) == [0, 1, 2]
