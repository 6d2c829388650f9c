"""One run spans the sessionless MCP calls that carry the same workflow handle: parents survive (B9, ADR 0094).

The SDK's own client over streamable HTTP, a new connection for every call
and the sessionless protocol revision (``mode="auto"``): nothing ties the
calls together but the ``workflow`` argument. The file the last call writes
names the file the second call read as its parent, and the three calls
record one run id.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from docbinder.integrations.mcp import DocbinderMcpServer
from tests.integration.mcp_http import live, mcp_client
from tests.unit.conftest import make_memory_binder
from tests.unit.test_tools_fixtures import ALICE


def _reference(result: Any) -> str:
    [link] = [c for c in result.content if c.type == "resource_link"]
    return "docItem:" + str(link.uri).rsplit("/", 1)[1].split("?")[0]


def test_sessionless_calls_with_one_handle_are_one_run() -> None:
    binder = make_memory_binder()
    server = DocbinderMcpServer(binder, ALICE)

    async def calls(url: str) -> tuple[str, Any]:
        async with mcp_client(url, mode="auto") as client:
            source = await client.call_tool("write_file", {"name": "data.csv", "content": "a\n1"})
        handle = source.structured_content["workflow"]
        assert handle
        async with mcp_client(url, mode="auto") as client:
            read = await client.call_tool(
                "read_documents", {"documentList": _reference(source), "workflow": handle}
            )
            assert not read.is_error
        async with mcp_client(url, mode="auto") as client:
            chart = await client.call_tool(
                "write_file", {"name": "chart.txt", "content": "bars", "workflow": handle}
            )
        async with mcp_client(url, mode="auto") as client:
            info = await client.call_tool(
                "get_file_info", {"file_id": _reference(chart), "workflow": handle}
            )
        return handle, info

    try:
        with live(server) as running:
            handle, info = anyio.run(calls, running.url)
        [first, second] = binder.list_messages(ALICE, handle)
        source = binder.get_file(ALICE, first.documents[0].file_id)
        chart = binder.get_file(ALICE, second.documents[0].file_id)
        assert chart.provenance.parents == (source.id,)
        assert chart.provenance.run_id == source.provenance.run_id is not None
        assert chart.provenance.message_id == second.id
        [described] = info.structured_content["files"]
        assert described["provenance"]["parents"] == [source.id]
        assert described["provenance"]["runId"] == chart.provenance.run_id
    finally:
        binder.close()
