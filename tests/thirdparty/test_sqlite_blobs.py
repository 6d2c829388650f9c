"""The worked example of docs/backends.md: a third-party blob store passes the shipped suites.

:mod:`tests.thirdparty.sqlite_blobs` is registered the way ``pip install`` registers
a distribution's entry points: a ``*.dist-info`` directory with an
``entry_points.txt`` on ``sys.path`` (the format of the Python packaging
specification "Entry points"). docbinder's container then finds it by the
``blob_url`` scheme, as for any installed plugin. The code docs/backends.md shows
is checked to be this code, so the documentation runs with these tests.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from docbinder.adapters.inline import InlineTierBlobStore
from docbinder.application import DocBinder
from docbinder.container import build_binder
from docbinder.domain.errors import ConfigurationError
from docbinder.domain.model import Principal
from docbinder.ports.blobs import BlobStore
from docbinder.testing import BlobStoreContract, BridgeContract
from docbinder.testing.bridge_suite import MakeBinder
from tests.docs.examples import parse
from tests.thirdparty import sqlite_blobs
from tests.thirdparty.sqlite_blobs import (
    SCHEME,
    SqliteBlobStore,
    SqliteBlobStoreWithRecords,
    from_url,
)

BACKENDS_DOC = Path(__file__).resolve().parents[2] / "docs" / "backends.md"

ENTRY_POINTS = f"""\
[docbinder.blob_stores]
{SCHEME} = tests.thirdparty.sqlite_blobs:from_url
"""


def install_entry_points(site: Path) -> None:
    """Write the metadata ``pip install`` would write for the example's distribution."""
    dist_info = site / "docbinder_sqliteblob-1.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: docbinder-sqliteblob\nVersion: 1.0\n", encoding="utf-8"
    )
    (dist_info / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")


@pytest.fixture
def registered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The example store's distribution is installed (on ``sys.path``) for this test."""
    site = tmp_path / "site-packages"
    install_entry_points(site)
    monkeypatch.syspath_prepend(str(site))
    yield


class TestSqliteBlobStore(BlobStoreContract):
    """The store of five methods: the shipped suite, with the flags this store has."""

    durable = True
    keeps_commit_records = False  # it writes neither of the two optional primitives

    @pytest.fixture
    def store(self, tmp_path: Path) -> BlobStore:
        return SqliteBlobStore(tmp_path / "blobs.db")

    @pytest.fixture
    def reopen(self, tmp_path: Path) -> Callable[[], BlobStore]:
        return lambda: SqliteBlobStore(tmp_path / "blobs.db")


class TestSqliteBlobStoreWithRecords(BlobStoreContract):
    """The store the entry point builds: commit records and a location too."""

    durable = True
    locates_itself = True

    @pytest.fixture
    def copy_of(self, tmp_path: Path) -> Callable[[BlobStore], BlobStore]:
        def copy(store: BlobStore) -> BlobStore:
            assert isinstance(store, SqliteBlobStoreWithRecords)
            target = tmp_path / "copy-of-blobs.db"
            shutil.copy2(store.path, target)  # cp -a
            return SqliteBlobStoreWithRecords(target)

        return copy

    @pytest.fixture
    def store(self, tmp_path: Path) -> BlobStore:
        return SqliteBlobStoreWithRecords(tmp_path / "blobs.db")

    @pytest.fixture
    def reopen(self, tmp_path: Path) -> Callable[[], BlobStore]:
        return lambda: SqliteBlobStoreWithRecords(tmp_path / "blobs.db")


class TestSqliteBlobBridge(BridgeContract):
    """The whole bridge over the store, found through its entry point by ``build_binder``."""

    @pytest.fixture
    def make_binder(self, registered: None, tmp_path: Path) -> MakeBinder:
        def make(max_file_size: int | None = None) -> DocBinder:
            return build_binder(
                database_url="memory://",
                blob_url=f"{SCHEME}://{tmp_path}/bridge-blobs.db",
                max_file_size=max_file_size,
            )

        return make


def test_the_container_loads_the_store_by_its_url_scheme(registered: None, tmp_path: Path) -> None:
    binder = build_binder(database_url="memory://", blob_url=f"{SCHEME}://{tmp_path}/b.db")
    # Small files go to the inline tier over the plug-in store, larger ones into it.
    assert isinstance(binder.blobs, InlineTierBlobStore)
    bulk = binder.blobs.bulk
    assert isinstance(bulk, SqliteBlobStoreWithRecords)
    assert bulk.path == tmp_path / "b.db"
    run = binder.start_new_run(Principal("u1", "m1", roles=("member",)))
    text = "kept in SQLite " * 5_000  # larger than the inline limit (64 KiB)
    produced = run.produce_file("a.txt", text.encode())
    assert b"".join(bulk.open(produced.item.blob_key)) == text.encode()
    assert [p.text for p in run.get_content(produced.reference).parts] == [text]


def test_without_the_distribution_the_scheme_names_the_entry_point_group(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"docbinder\.blob_stores"):
        build_binder(database_url="memory://", blob_url=f"{SCHEME}://{tmp_path}/b.db")


def test_the_entry_point_refuses_a_url_without_a_path() -> None:
    with pytest.raises(ConfigurationError, match="blob_url"):
        from_url(f"{SCHEME}://")


def test_the_store_gets_marks_identity_and_registrations_from_the_base_class(
    tmp_path: Path,
) -> None:
    """What the five methods do not write: the base class does it over them."""
    from docbinder.ports.blobs import BlobOrigin, read_origin

    store = SqliteBlobStore(tmp_path / "blobs.db")
    assert store.identity() is None and not store.path.exists()  # reads create nothing
    identity = store.identity(create=True)
    store.register_database("db-1")
    store.put("ab/abc", [b"x"])
    assert identity is not None
    assert read_origin(store.stat("ab/abc").origin, "ab/abc") == BlobOrigin(identity, "db-1")
    again = SqliteBlobStore(tmp_path / "blobs.db")
    assert again.identity() == identity and again.databases() == {"db-1"}
    assert list(again.keys()) == ["ab/abc"]


def _python_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", markdown, flags=re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize(
    "opening",
    [
        "class SqliteBlobStore(BlobStoreBase):",
        "class SqliteBlobStoreWithRecords(SqliteBlobStore):",
        "def from_url(url: str) -> SqliteBlobStoreWithRecords:",
    ],
)
def test_the_code_docs_backends_shows_is_the_code_these_tests_run(opening: str) -> None:
    shown = _python_blocks(BACKENDS_DOC.read_text(encoding="utf-8"))
    [block] = [b for b in shown if b.startswith(opening)]
    source = Path(sqlite_blobs.__file__).read_text(encoding="utf-8")
    assert block in source, f"docs/backends.md shows code that is not in {sqlite_blobs.__file__}"


def test_the_test_module_docs_backends_shows_passes_in_a_project_of_its_own(tmp_path: Path) -> None:
    """The page's test classes, as written, run by pytest beside a copy of the store.

    The copy is the package ``thirdparty`` the page imports; its distribution is
    registered with the entry point of the page's ``pyproject.toml`` block.
    """
    blocks = parse(BACKENDS_DOC).blocks
    [tests] = [b.text for b in blocks if b.directive("tested-by") and "BlobStoreContract" in b.text]
    [registration] = [b.text for b in blocks if b.language == "toml" and "sqliteblob" in b.text]
    points = tomllib.loads(registration)["project"]["entry-points"]["docbinder.blob_stores"]
    package = tmp_path / "thirdparty"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    shutil.copy(sqlite_blobs.__file__, package / "sqlite_blobs.py")
    dist_info = tmp_path / "site" / "docbinder_sqliteblob-1.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: docbinder-sqliteblob\nVersion: 1.0\n", encoding="utf-8"
    )
    (dist_info / "entry_points.txt").write_text(
        "[docbinder.blob_stores]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()),
        encoding="utf-8",
    )
    (tmp_path / "test_sqlite_blobs.py").write_text(tests, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_sqlite_blobs.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(tmp_path / "site")])},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert re.search(r"^\d+ passed", done.stdout.splitlines()[-1]), done.stdout[-500:]
