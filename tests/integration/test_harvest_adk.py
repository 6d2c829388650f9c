"""ADK's code executor through a real Runner: the files the code writes become artifacts in
DocbinderArtifactService and ``docItem:`` references of the session's workflow, with provenance.

The model is scripted (ADK's own ``BaseLlm`` machinery, no network); the code runs in
ADK's ``UnsafeLocalCodeExecutor`` child process, started by ADK's code-execution flow.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.domain.model import Principal
from docbinder.harvest import HARVEST_TOOL, rewrite_links
from docbinder.integrations.adk import DocbinderArtifactService, OutputDirCodeExecutor
from docbinder.toolset import DocbinderToolset
from tests.integration.adk_scripted import ScriptedModel, say
from tests.wiring import wire_binder

pytestmark = pytest.mark.anyio

APP, USER, SESSION = "analysis", "alice", "s-1"

CODE = """\
import csv, struct, zlib
def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))
rows = b"".join(b"\\x00" + b"\\x10\\x80\\xf0" * 2 for _ in range(2))
png = (b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
       + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
open("chart.png", "wb").write(png)
with open("sales.csv", "w", newline="") as f:
    csv.writer(f).writerows([["region", "total"], ["north", 10], ["south", 7]])
print("wrote 2 files")
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def code_turn(code: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=f"```python\n{code}```\n")])


async def test_code_executor_outputs_arrive_as_artifacts_and_workflow_documents(
    tmp_path: Path,
) -> None:
    binder = wire_binder(MemoryMetadataStore().unit_of_work, MemoryBlobStore())
    service = DocbinderArtifactService(binder, mandate_id="acme")
    out = tmp_path / "sandbox"
    (out / "old.txt").parent.mkdir()
    (out / "old.txt").write_text("there before the run: not an output")
    executor = OutputDirCodeExecutor(output_dir=str(out), sandbox_id="adk-local-1")
    model = ScriptedModel(model="scripted", script=[])
    model.script[:] = [
        say("x").model_copy(update={"content": code_turn(CODE)}),
        say("The chart is sandbox:/mnt/data/chart.png and the table ./sales.csv."),
    ]
    agent = LlmAgent(name="analyst", model=model, code_executor=executor)
    sessions = InMemorySessionService()
    await sessions.create_session(app_name=APP, user_id=USER, session_id=SESSION)
    runner = Runner(app_name=APP, agent=agent, session_service=sessions, artifact_service=service)
    message = types.Content(role="user", parts=[types.Part(text="plot the sales")])
    events = [
        e async for e in runner.run_async(user_id=USER, session_id=SESSION, new_message=message)
    ]
    assert model.script == [], "the agent did not follow the script to its end"
    deltas = {k: v for e in events for k, v in (e.actions.artifact_delta or {}).items()}
    assert deltas == {"chart.png": 0, "sales.csv": 0}
    final = events[-1].content.parts[0].text

    # ADK sees the artifacts through the service
    keys = await service.list_artifact_keys(app_name=APP, user_id=USER, session_id=SESSION)
    assert keys == ["chart.png", "sales.csv"]
    chart = await service.load_artifact(
        app_name=APP, user_id=USER, session_id=SESSION, filename="chart.png"
    )
    png = (out / "chart.png").read_bytes()
    assert chart is not None and chart.inline_data is not None
    assert chart.inline_data.data == png and chart.inline_data.mime_type == "image/png"

    # docbinder sees them as documents of the session's workflow, with provenance
    principal = Principal(USER, "acme", APP)
    [workflow] = binder.list_workflows(principal)
    documents = [d for m in binder.list_messages(principal, workflow.id) for d in m.documents]
    assert sorted(d.file_name for d in documents) == ["chart.png", "sales.csv"]
    by_name = {d.file_name: d for d in documents}
    item = binder.get_file(principal, by_name["chart.png"].file_id)
    assert item.sha256 == hashlib.sha256(png).hexdigest()
    p = item.provenance
    assert (p.tool, p.sandbox_id, p.source_path) == (
        HARVEST_TOOL,
        "adk-local-1",
        str(out / "chart.png"),
    )
    assert p.run_id == events[-1].invocation_id

    toolset = DocbinderToolset(binder.start_run(principal, workflow.id))
    outcome = toolset.call("read_documents", {"documentList": [d.reference for d in documents]})
    assert not outcome.is_error and "north,10" in outcome.text
    assert [i.data for i in outcome.images] == [png]

    # the model's final text points into the sandbox; the references replace those paths
    report = {f"/mnt/data/{d.file_name}": d.reference for d in documents}
    rewritten = rewrite_links(final, report)
    assert rewritten.text == (
        f"The chart is {by_name['chart.png'].reference} and the table {by_name['sales.csv'].reference}."
    )

    # a second invocation whose code rewrites the table only: only the table is saved again
    model.script[:] = [
        say("x").model_copy(
            update={"content": code_turn("open('sales.csv', 'a').write('east,3\\n')\n")}
        ),
        say("Added east."),
    ]
    again = types.Content(role="user", parts=[types.Part(text="add east")])
    events = [
        e async for e in runner.run_async(user_id=USER, session_id=SESSION, new_message=again)
    ]
    deltas = {k: v for e in events for k, v in (e.actions.artifact_delta or {}).items()}
    assert deltas == {"sales.csv": 1}
    documents = [d for m in binder.list_messages(principal, workflow.id) for d in m.documents]
    assert sorted(d.file_name for d in documents) == ["chart.png", "sales.csv", "sales.csv"]
    latest = await service.load_artifact(
        app_name=APP, user_id=USER, session_id=SESSION, filename="sales.csv"
    )
    assert latest is not None and latest.inline_data is not None
    assert latest.inline_data.data.endswith(b"east,3\n")
