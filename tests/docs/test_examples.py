"""Every example of the README and the guides runs as written and prints what it shows.

One test per document (the blocks of a document depend on each other, in order);
documents run in parallel under pytest-xdist. How a document is read and run:
:mod:`tests.docs.examples`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import backend_unavailable
from tests.docs.examples import ROOT, Skip, example_documents, parse, run_document

DOCUMENTS = [path for path in example_documents() if parse(path).blocks]
"""The pages with at least one example (a page of prose alone has nothing to run)."""


@pytest.mark.parametrize("document", DOCUMENTS, ids=[str(p.relative_to(ROOT)) for p in DOCUMENTS])
def test_every_example_runs_and_prints_what_it_shows(document: Path, tmp_path: Path) -> None:
    try:
        ran = run_document(document, tmp_path)
    except Skip as exc:
        backend_unavailable(str(document.relative_to(ROOT)), str(exc))
        return
    assert ran == len(parse(document).blocks) > 0
