"""A declared charset on a text FileItem is stored and read back alike on every SQL backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from docbinder.adapters.memory import MemoryBlobStore
from docbinder.domain.model import Principal
from tests.contract.sql_backends import SQL_BACKENDS, binder_over, provision

U1 = Principal("u1", "m1", "f1", roles=("member",))
CSV = "产品名称,单价\n无线鼠标,99\n"


@pytest.mark.parametrize("backend", SQL_BACKENDS)
def test_gbk_csv_with_declared_charset(backend: str, tmp_path: Path) -> None:
    with provision(backend, tmp_path) as db:
        binder = binder_over(db.store, MemoryBlobStore())
        run = binder.start_new_run(U1)
        result = run.produce_file(
            "产品列表.csv", CSV.encode("gbk"), mime_type="text/csv; charset=GBK"
        )
        assert result.reference is not None
        stored = binder.get_file(U1, result.item.id)  # read back from the database
        assert stored.mime_type == "text/csv; charset=gbk"
        (part,) = run.get_content([result.reference]).parts
        assert (part.text, part.encoding, part.encoding_guessed) == (CSV, "gbk", False)
