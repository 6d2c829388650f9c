"""The async guide's example also runs under trio, as the guide says it does.

Under asyncio it runs, output compared, with every other example (``tests/docs``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.examples import ROOT, assert_output, parse
from tests.e2e.readme_examples import run_script

GUIDE = ROOT / "docs" / "guides" / "async.md"


def test_async_example_runs_under_trio(tmp_path: Path) -> None:
    pytest.importorskip("trio")
    [block] = [b for b in parse(GUIDE).blocks if b.language == "python"]
    assert "anyio.run(main)" in block.text and block.output is not None
    code = block.text.replace("anyio.run(main)", 'anyio.run(main, backend="trio")')
    assert_output(block.output, run_script(tmp_path, code), "the async guide under trio")
    assert (tmp_path / "docbinder.db").exists() and (tmp_path / "blobs").is_dir()
