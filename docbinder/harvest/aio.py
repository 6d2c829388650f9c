"""Harvest and materialize for async hosts: the same work on a worker thread (``anyio.to_thread``).

An async host (an ADK or OpenAI Agents tool, a pydantic-ai agent) holds an
:class:`~docbinder.application.aio.AsyncRun`; these functions run
:func:`~docbinder.harvest.core.harvest` and
:func:`~docbinder.harvest.materialize.materialize` over its ``sync`` run in a
worker thread, so the event loop never waits on a disk, a database or a
provider download. The tool call bound in the calling task
(:func:`~docbinder.application.provenance.tool_call`) follows into the thread.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import anyio.to_thread

from docbinder.application.aio import AsyncRun
from docbinder.harvest.core import HarvestReport, harvest
from docbinder.harvest.materialize import MaterializeReport, materialize
from docbinder.harvest.sources import OutputSource


async def aharvest(run: AsyncRun, source: OutputSource, **options: Any) -> HarvestReport:
    """:func:`~docbinder.harvest.core.harvest` of ``source`` into ``run``; options and errors as there."""
    return await anyio.to_thread.run_sync(functools.partial(harvest, run.sync, source, **options))


async def amaterialize(
    run: AsyncRun, document_list: object, directory: str | os.PathLike[str], **options: Any
) -> MaterializeReport:
    """:func:`~docbinder.harvest.materialize.materialize` for ``run``; options and errors as there."""
    return await anyio.to_thread.run_sync(
        functools.partial(materialize, run.sync, document_list, directory, **options)
    )
