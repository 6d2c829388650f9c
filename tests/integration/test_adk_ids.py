"""One rule for ADK's app name, user id and session id (issue 31, kind 8; adk-python #7030).

``save_artifact(session_id="invoice-7\\n")`` was accepted and landed in a namespace of its
own, so ``load_artifact(session_id="invoice-7")`` answered ``None``, while the same service
refused a padded ``user_id``. Now the three ids pass one check: surrounding whitespace or
a control character anywhere is ADK's ``InputValidationError`` for each of them, on every
method, and the session's workflow and the version namespace come from the one value
checked. Driven through ADK's own ``Runner`` and the ``BaseArtifactService`` methods, on
memory, SQLite, PostgreSQL and MariaDB.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.errors.input_validation_error import InputValidationError
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.application import DocBinder
from docbinder.domain.model import Principal
from docbinder.integrations.adk import DocbinderArtifactService
from tests.contract.sql_backends import SqlBackend, binder_over, provision
from tests.integration.adk_scripted import ScriptedModel, call, function_responses, say
from tests.wiring import wire_binder

pytestmark = pytest.mark.anyio

APP, USER, SESSION = "billing", "alice", "invoice-7"
PADDINGS = [
    "\n",
    " ",
    "\t",
    "\r\n",
    "\x00",
    "\u00a0",
    "\u2028",
    "\x85",
    # DEL, C1 and invisible format characters: not whitespace, still invisible padding
    "\x7f",
    "\x9b",
    "\u200b",
    "\ufeff",
    "\u2060",
    "\u180e",
    # and what renders as nothing without being a format character, and tags
    "\u034f",
    "\u3164",
    "\ufe0f",
    "\U000e0020",
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def server_databases(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, SqlBackend]]:
    """One migrated PostgreSQL schema and MariaDB database for the module, opened on first use."""
    with ExitStack() as stack:

        class Opened(dict[str, SqlBackend]):
            def __missing__(self, name: str) -> SqlBackend:
                db = stack.enter_context(provision(name, tmp_path_factory.mktemp(name)))
                self[name] = db
                return db

        yield Opened()


@pytest.fixture(params=["memory", "sqlite", "postgresql", "mariadb"])
def binder(
    request: pytest.FixtureRequest, tmp_path: Path, server_databases: dict[str, SqlBackend]
) -> Iterator[DocBinder]:
    if request.param == "memory":
        store = MemoryMetadataStore()
        yield wire_binder(store.unit_of_work, MemoryBlobStore(), store.unit_of_work)
        return
    if request.param == "sqlite":
        with provision("sqlite", tmp_path) as db:
            yield binder_over(db.store, LocalDiskBlobStore(tmp_path / "blobs"))
        return
    db = server_databases[request.param]
    db.clean()
    yield binder_over(db.store, LocalDiskBlobStore(tmp_path / "blobs"))


async def save_invoice(text: str, tool_context: ToolContext) -> dict[str, Any]:
    """Save ``text`` as the session's artifact invoice.txt."""
    version = await tool_context.save_artifact("invoice.txt", types.Part(text=text))
    return {"version": version}


async def _save_through_a_runner(service: DocbinderArtifactService) -> None:
    model = ScriptedModel(model="scripted", script=[call("save_invoice", text="42 EUR"), say("ok")])
    agent = LlmAgent(name="clerk", model=model, tools=[save_invoice])
    sessions = InMemorySessionService()
    await sessions.create_session(app_name=APP, user_id=USER, session_id=SESSION)
    runner = Runner(app_name=APP, agent=agent, session_service=sessions, artifact_service=service)
    message = types.Content(role="user", parts=[types.Part(text="file the invoice")])
    async for _event in runner.run_async(user_id=USER, session_id=SESSION, new_message=message):
        pass
    assert function_responses(model)[-1] == {"version": 0}


def _calls(
    service: DocbinderArtifactService, **ids: str
) -> dict[str, Callable[[], Awaitable[Any]]]:
    """Every method of the service with the ids ``ids`` (the others as in the session)."""
    where = {"app_name": APP, "user_id": USER, "session_id": SESSION, **ids}
    part = types.Part(text="padded")
    return {
        "save_artifact": lambda: service.save_artifact(
            **where, filename="invoice.txt", artifact=part
        ),
        "load_artifact": lambda: service.load_artifact(**where, filename="invoice.txt"),
        "list_artifact_keys": lambda: service.list_artifact_keys(**where),
        "list_versions": lambda: service.list_versions(**where, filename="invoice.txt"),
        "list_artifact_versions": lambda: service.list_artifact_versions(
            **where, filename="invoice.txt"
        ),
        "get_artifact_version": lambda: service.get_artifact_version(
            **where, filename="invoice.txt"
        ),
        "delete_artifact": lambda: service.delete_artifact(**where, filename="invoice.txt"),
    }


@pytest.mark.parametrize("padding", PADDINGS, ids=repr)
async def test_a_padded_session_id_is_refused_like_a_padded_user_id(
    binder: DocBinder, padding: str
) -> None:
    service = DocbinderArtifactService(binder, mandate_id="acme")
    await _save_through_a_runner(service)

    answers: dict[str, dict[str, str]] = {}
    for field, clean in (("app_name", APP), ("user_id", USER), ("session_id", SESSION)):
        for label, value in (("after", clean + padding), ("before", padding + clean)):
            for method, run in _calls(service, **{field: value}).items():
                with pytest.raises(InputValidationError) as refused:
                    await run()
                answers.setdefault(f"{field} {label}", {})[method] = str(refused.value).split(" ")[
                    0
                ]
    # One rule: every id, every method, the same refusal naming the field.
    assert answers == {
        f"{field} {label}": dict.fromkeys(_calls(service), field)
        for field in ("app_name", "user_id", "session_id")
        for label in ("after", "before")
    }

    # The load: the clean id finds what the Runner saved, nothing was added.
    where = {"app_name": APP, "user_id": USER, "session_id": SESSION}
    loaded = await service.load_artifact(**where, filename="invoice.txt")
    assert loaded is not None and loaded.text == "42 EUR"
    assert await service.list_versions(**where, filename="invoice.txt") == [0]
    principal = Principal(USER, "acme", APP)
    assert len(binder.list_workflows(principal)) == 1  # no workflow for a padded session


async def test_the_session_workflow_and_the_versions_share_the_checked_id(
    binder: DocBinder,
) -> None:
    """Two services over one binder (two processes of one app): the session's versions and
    its ChatDocuments are found from either, by the id as given; an id with an inner
    space is refused by both, as a user id with one always was."""
    first = DocbinderArtifactService(binder, mandate_id="acme")
    await _save_through_a_runner(first)
    second = DocbinderArtifactService(binder, mandate_id="acme")
    where = {"app_name": APP, "user_id": USER, "session_id": SESSION}
    assert (
        await second.save_artifact(
            **where, filename="invoice.txt", artifact=types.Part(text="43 EUR")
        )
        == 1
    )
    principal = Principal(USER, "acme", APP)
    [workflow] = binder.list_workflows(principal)
    documents = [d for m in binder.list_messages(principal, workflow.id) for d in m.documents]
    assert [d.file_name for d in documents] == ["invoice.txt", "invoice.txt"]
    for service in (first, second):
        with pytest.raises(InputValidationError, match="session_id"):
            await service.save_artifact(
                **{**where, "session_id": "invoice 7"},
                filename="invoice.txt",
                artifact=types.Part(text="x"),
            )
