"""Each provider's native content blocks (B22): checked against the SDK's own types, then sent.

A block made by :mod:`docbinder.adapters.providers` is validated against the SDK's
typed parameter (pydantic ``TypeAdapter`` over the ``TypedDict``; ``types.Part``
is the SDK's pydantic model) and sent through the SDK's message call to the
local server, which checks the JSON the SDK put on the wire and that every
file id names a file of that account.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("anthropic")
pytest.importorskip("openai")
pytest.importorskip("google.genai")

import anthropic
import openai
from anthropic.types import DocumentBlockParam, ImageBlockParam, MessageParam
from google import genai
from google.genai import types as genai_types
from openai.types.responses import ResponseInputFileParam, ResponseInputImageParam
from pydantic import TypeAdapter

from docbinder.adapters.memory import MemoryBlobStore, MemoryMetadataStore
from docbinder.adapters.providers import anthropic_files, gemini_files, openai_files
from docbinder.application import DocBinder
from docbinder.domain.errors import InvalidInput
from docbinder.domain.model import Principal
from docbinder.domain.providers import ProviderFileRef
from docbinder.testing.provider_server import ProviderServer
from tests.integration.test_provider_files import PDF, clients
from tests.wiring import wire_binder

ALICE = Principal("alice", "acme")
PNG = (
    Path(__file__).resolve().parents[2] / "docbinder" / "samples" / "revenue-chart.png"
).read_bytes()


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


@pytest.fixture
def binder(server: ProviderServer) -> DocBinder:
    binder = wire_binder(MemoryMetadataStore().unit_of_work, MemoryBlobStore())
    for files in clients(server).values():
        binder.providers.register(files)
    return binder


def refs(binder: DocBinder, provider: str) -> tuple[ProviderFileRef, ProviderFileRef]:
    run = binder.start_new_run(ALICE)
    pdf = binder.store_file(ALICE, "report.pdf", PDF, mime_type="application/pdf").item
    png = binder.store_file(ALICE, "chart.png", PNG, mime_type="image/png").item
    return run.provide_file(pdf.id, provider, "main"), run.provide_file(png.id, provider, "main")


def anthropic_client(server: ProviderServer) -> Any:
    return anthropic.Anthropic(api_key="test", base_url=server.url, max_retries=0)


def test_anthropic_blocks_by_file_id_and_inline(binder: DocBinder, server: ProviderServer) -> None:
    pdf, png = refs(binder, "anthropic")
    by_id = [anthropic_files.content_block(pdf), anthropic_files.content_block(png)]
    inline = [
        anthropic_files.inline_block(PDF, "report.pdf", "application/pdf"),
        anthropic_files.inline_block(PNG, "chart.png", "image/png"),
        anthropic_files.inline_block(b"plain words", "notes.txt", "text/plain"),
    ]
    assert by_id == [
        {
            "type": "document",
            "source": {"type": "file", "file_id": pdf.file_id},
            "title": "report.pdf",
        },
        {"type": "image", "source": {"type": "file", "file_id": png.file_id}},
    ]
    TypeAdapter(DocumentBlockParam).validate_python(by_id[0])
    TypeAdapter(ImageBlockParam).validate_python(by_id[1])
    TypeAdapter(DocumentBlockParam).validate_python(inline[0])
    TypeAdapter(ImageBlockParam).validate_python(inline[1])
    TypeAdapter(DocumentBlockParam).validate_python(inline[2])
    message: MessageParam = {
        "role": "user",
        "content": [*by_id, *inline, {"type": "text", "text": "What do these say?"}],
    }
    answer = anthropic_client(server).messages.create(
        model="claude-test", max_tokens=64, messages=[message]
    )
    assert answer.content[0].type == "text"
    sent = [block for provider, block in server.accepted if provider == "anthropic"]
    assert [b["source"]["type"] for b in sent] == ["file", "file", "base64", "base64", "text"]
    assert sent[0]["source"]["file_id"] == pdf.file_id
    with pytest.raises(InvalidInput, match="only as an uploaded file"):
        anthropic_files.inline_block(b"PK", "sheet.xlsx", "application/vnd.ms-excel")


def test_a_block_naming_an_unknown_file_is_refused_by_the_server(server: ProviderServer) -> None:
    bogus = ProviderFileRef("anthropic", "main", "file_011nothere", "x.pdf", "application/pdf", 3)
    with pytest.raises(anthropic.BadRequestError):
        anthropic_client(server).messages.create(
            model="claude-test",
            max_tokens=8,
            messages=[{"role": "user", "content": [anthropic_files.content_block(bogus)]}],
        )
    assert server.rejected == [
        ("anthropic", "file file_011nothere is not one of this account's files")
    ]


def test_openai_parts_by_file_id_and_inline(binder: DocBinder, server: ProviderServer) -> None:
    pdf, png = refs(binder, "openai")
    by_id = [openai_files.content_part(pdf), openai_files.content_part(png)]
    inline = [
        openai_files.inline_part(PDF, "report.pdf", "application/pdf"),
        openai_files.inline_part(PNG, "chart.png", "image/png"),
    ]
    assert by_id == [
        {"type": "input_file", "file_id": pdf.file_id},
        {"type": "input_image", "file_id": png.file_id, "detail": "auto"},
    ]
    TypeAdapter(ResponseInputFileParam).validate_python(by_id[0])
    TypeAdapter(ResponseInputImageParam).validate_python(by_id[1])
    TypeAdapter(ResponseInputFileParam).validate_python(inline[0])
    TypeAdapter(ResponseInputImageParam).validate_python(inline[1])
    assert str(inline[0]["file_data"]).startswith("data:application/pdf;base64,")
    client = openai.OpenAI(api_key="test", base_url=server.openai_base_url, max_retries=0)
    response = client.responses.create(
        model="gpt-test",
        input=[
            {
                "role": "user",
                "content": [*by_id, *inline, {"type": "input_text", "text": "Summarize."}],
            }
        ],
    )
    assert response.output_text == "read"
    sent = [block for provider, block in server.accepted if provider == "openai"]
    assert [(b["type"], "file_id" in b) for b in sent] == [
        ("input_file", True),
        ("input_image", True),
        ("input_file", False),
        ("input_image", False),
    ]


def test_gemini_parts_by_uri_and_inline(binder: DocBinder, server: ProviderServer) -> None:
    pdf, png = refs(binder, "gemini")
    by_uri = [gemini_files.content_part(pdf), gemini_files.content_part(png)]
    inline = [gemini_files.inline_part(PNG, "chart.png", "image/png")]
    for part in (*by_uri, *inline):
        assert isinstance(part, genai_types.Part)
        genai_types.Part.model_validate(part.model_dump())
    assert by_uri[0].file_data is not None and by_uri[0].file_data.file_uri == pdf.uri
    assert by_uri[1].file_data is not None and by_uri[1].file_data.mime_type == "image/png"
    client = genai.Client(api_key="test", http_options={"base_url": server.url})
    answer = client.models.generate_content(
        model="gemini-test",
        contents=[
            genai_types.Content(
                role="user", parts=[*by_uri, *inline, genai_types.Part(text="Describe these.")]
            )
        ],
    )
    assert answer.text == "read"
    sent = [block for provider, block in server.accepted if provider == "gemini"]
    assert [sorted(b) for b in sent] == [["fileData"], ["fileData"], ["inlineData"]]
    # the SDK writes the part's fields in proto JSON (either spelling is valid there)
    assert set(sent[0]["fileData"].values()) == {pdf.uri, "application/pdf"}
