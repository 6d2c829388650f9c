"""What the framework agent-loop tests share: a binder on SQLite + local disk and the checks."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from docbinder.application import DocBinder
from docbinder.application.binder import Run
from docbinder.config import Settings
from docbinder.container import build_binder
from docbinder.domain.model import Principal

ALICE = Principal("alice", "m1", "f1", roles=("member",))
NOTES = "# Q3 notes\nrevenue grew 12% in the north region\n"
DOC_ITEM = re.compile(r"documentList ref: docItem:([0-9a-f-]{36})")
FILE_ID = re.compile(r"file id: ([0-9a-f-]{36})")


def sqlite_binder(tmp_path: Path) -> DocBinder:
    """The embedded default: SQLite metadata, local-disk blobs under ``tmp_path``."""
    settings = Settings.load(
        {
            "home": str(tmp_path),
            "database_url": f"sqlite:///{tmp_path / 'docbinder.db'}",
            "blob_url": (tmp_path / "blobs").as_uri(),
        },
        environ={},
    )
    return build_binder(settings)


def sloppy(document_id: str) -> str:
    """A reference as a model may send it: a markdown fence around a JSON list."""
    return f'```json\n["docItem:{document_id}"]\n```'


def ids_in(text: str) -> tuple[str, str]:
    """``(document id, file id)`` from a producing tool's unified text."""
    doc, file = DOC_ITEM.search(text), FILE_ID.search(text)
    assert doc is not None and file is not None, text
    return doc.group(1), file.group(1)


def assert_stored_and_attached(binder: DocBinder, run: Run, document_id: str, file_id: str) -> None:
    """The FileItem holds NOTES and the ChatDocument is in the run's workflow, pointing at it."""
    assert run.workflow is not None
    item = run.get_file(file_id)
    assert item.file_name == "notes.md"
    assert run.read_file(file_id) == NOTES.encode()
    messages = binder.list_messages(ALICE, run.workflow.id)
    documents = [d for m in messages for d in m.documents]
    assert [(d.id, d.file_id) for d in documents] == [(document_id, file_id)]
    assert [m.documents_label for m in messages] == ["writeFile:notes.md"]


def text_of(content: Any) -> str:
    """The text of a message content that is a string or a list of content blocks."""
    if isinstance(content, str):
        return content
    return "".join(b if isinstance(b, str) else str(b.get("text", "")) for b in content)


PNG = (
    Path(__file__).resolve().parents[2] / "docbinder" / "samples" / "revenue-chart.png"
).read_bytes()


def attach_png(run: Run) -> str:
    """Attach the sample chart to the run's workflow; returns its document id."""
    result = run.produce_file("chart.png", PNG, verb="Created chart", label="createChart:chart")
    assert result.document_id is not None
    return result.document_id


class RecordingToolset:
    """Delegates to a tool set and records which entry point each call took."""

    def __init__(self, toolset: Any) -> None:
        self.inner = toolset
        self.specs = toolset.specs
        self.entries: list[tuple[str, str]] = []
        self.host_calls: list[dict[str, Any]] = []
        """What the host passed beside the arguments (``tool_call_id``, ``model``), per call."""

    def spec(self, name: str) -> Any:
        return self.inner.spec(name)

    def call(self, name: str, arguments: Any, **host: Any) -> Any:
        self.entries.append(("call", name))
        self.host_calls.append(host)
        return self.inner.call(name, arguments, **host)

    async def acall(self, name: str, arguments: Any, **host: Any) -> Any:
        self.entries.append(("acall", name))
        self.host_calls.append(host)
        return await self.inner.acall(name, arguments, **host)
