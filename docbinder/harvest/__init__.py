"""Files that cross into and out of sandboxes: harvest, link rewriting, materialize (ADR 0100).

- :func:`harvest` (``docbinder.harvest.core``): after a code-execution step,
  every new or changed file of an :class:`OutputSource` becomes a FileItem and
  a ChatDocument of the run's workflow, with provenance (tool call, sandbox,
  path in it).
- Sources: :class:`LocalOutputDir` (a directory a sandbox writes into);
  ``docbinder.harvest.openai_containers.OpenAIContainerFiles`` and
  ``docbinder.harvest.anthropic_files.AnthropicCodeExecutionFiles`` (extra
  ``providers``); ADK's code executors through
  ``docbinder.integrations.adk.OutputDirCodeExecutor``.
- :func:`rewrite_links`: ``sandbox:/mnt/data/x.png`` in a model's text becomes
  the file's ``docItem:`` reference (and a download link when links are on).
- :func:`materialize`: the files a ``documentList`` names, written into the
  next sandbox's input directory under safe names within a byte budget.
- ``docbinder.harvest.aio``: ``aharvest`` and ``amaterialize`` for an
  :class:`~docbinder.application.aio.AsyncRun`, on a worker thread.
"""

from __future__ import annotations

from docbinder.harvest.core import (
    HARVEST_TOOL,
    HarvestedFile,
    HarvestReport,
    HeldFile,
    Refused,
    harvest,
)
from docbinder.harvest.links import RewriteResult, Rewritten, rewrite_links
from docbinder.harvest.materialize import (
    MaterializeReport,
    NotWritten,
    Written,
    materialize,
    safe_name,
)
from docbinder.harvest.sources import (
    ChunkStream,
    LocalOutputDir,
    OutputFile,
    OutputSource,
    OutputUnreadable,
    SkippedOutput,
)

__all__ = [
    "HARVEST_TOOL",
    "ChunkStream",
    "HarvestReport",
    "HarvestedFile",
    "HeldFile",
    "LocalOutputDir",
    "MaterializeReport",
    "NotWritten",
    "OutputFile",
    "OutputSource",
    "OutputUnreadable",
    "Refused",
    "RewriteResult",
    "Rewritten",
    "SkippedOutput",
    "Written",
    "harvest",
    "materialize",
    "rewrite_links",
    "safe_name",
]
