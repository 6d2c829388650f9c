"""The contract of the metadata ports, one part per role (``docbinder.ports.metadata``).

:class:`MetadataContract` is not collected by itself (no ``Test`` prefix).
Each backend subclasses it once as ``Test<Backend>Metadata`` and provides the
fixture ``make_uow_factory``: a fresh, empty store's ``UnitOfWorkFactory``
(each call gives a new unit of work)::

    class TestMyMetadata(MetadataContract):
        supports_versions = False  # this backend keeps no file versions

        @pytest.fixture
        def make_uow_factory(self, tmp_path):
            return MyMetadataStore(tmp_path / "meta").unit_of_work

It is made of one contract per role, which a backend may also run on their
own: :class:`FileRepositoryContract` and :class:`WorkflowRepositoryContract`
(core), :class:`UnitOfWorkContract`, :class:`VersionRepositoryContract`
(versions), :class:`MaintenanceRepositoryContract` (scans, marks,
identities), :class:`MetadataConcurrencyContract`, and the governance parts
:class:`ProvenanceContract` (B9) and :class:`QuotaRepositoryContract` (B12) and :class:`AuditRepositoryContract` (B11). Capability flags
(class attributes of the backend's test class; the cases that need what a
backend lacks are skipped with the reason): ``supports_concurrency``,
``supports_versions``. The helpers :func:`make_file`, :func:`make_workflow`
and :func:`make_message` build valid entities with fresh ids for a backend's
own tests. Needs ``pytest`` and ``hypothesis`` (``pip install -e '.[testing]'`` in a clone).
"""

from __future__ import annotations

import itertools
import threading
import unicodedata
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import ClassVar, TypeVar

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docbinder.domain.access import Resource, ResourceKind
from docbinder.domain.audit import GENESIS_HASH, AuditAction, AuditEvent, verify_chain
from docbinder.domain.counters import MAX_COUNTER, CounterStep, WorkflowCounters
from docbinder.domain.errors import (
    AccessDenied,
    ConfigurationError,
    Conflict,
    CountersWouldGoBack,
    DuplicateFileItem,
    DuplicateLabel,
    FileItemNotFound,
    InvalidInput,
    QuotaExceeded,
    VersionTaken,
    WorkflowNotFound,
)
from docbinder.domain.governance import HoldKind, LegalHold, Quota, RetentionPolicy
from docbinder.domain.model import (
    MAX_FILE_NAME_LENGTH,
    MAX_LABEL_LENGTH,
    MAX_PROVENANCE_PARENTS,
    MAX_PROVENANCE_PATH,
    NO_PROVENANCE,
    ChatDocument,
    ChatMessage,
    ChatWorkflow,
    FileItem,
    FileVersion,
    Provenance,
    Scope,
    VersionSeries,
    arguments_sha256,
)
from docbinder.domain.providers import CopyState, ProviderCopy, ProviderCopyKey
from docbinder.ports.metadata import (
    CLAIM_TOKENS_KEPT,
    UnitOfWork,
    UnitOfWorkFactory,
    store_location_key,
)

T = TypeVar("T")

SHA_A = "a" * 64
SHA_B = "b" * 64
BASE_TIME = datetime(2024, 5, 17, 9, 30, 15, 123456, tzinfo=UTC)

UNICODE_NAMES = [
    "Étude d’opportunités v3.pptx",
    "Résumé_季度報告.pdf",
    "📊 Quartalszahlen 🚀 2024.xlsx",
    "e\u0301cole.txt",  # decomposed: e + combining acute accent
    "\u00e9cole.txt",  # precomposed é
    "tab\tseparated name.csv",
    "../../etc/passwd",
    "C:\\Users\\x\\report.docx",
    "trailing space.txt ",
    "Ω≈ç√∫˜µ≤≥÷ — “quoted” «guillemets».md",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math 𝟙𝟚𝟛.txt",
]

_counter = itertools.count()

# Every string the domain accepts as a file name / label: no surrogates, no C0/C1
# controls (tab allowed in names), DEL excluded.
_NAME_CHARS = st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\x7f")
FILE_NAMES = st.text(_NAME_CHARS | st.just("\t"), min_size=1, max_size=200)
LABELS = st.text(_NAME_CHARS, min_size=1, max_size=200).filter(lambda s: s.strip() != "")
# One test method runs once per backend class (a different "executor" each time);
# every example uses fresh ids, so examples never depend on each other.
PROPERTY_SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.differing_executors],
)


def new_id(prefix: str = "id") -> str:
    """A fresh random id."""
    return f"{prefix}-{uuid.uuid4()}"


def make_file(**overrides: object) -> FileItem:
    """A valid FileItem with fresh ids; ``overrides`` replace fields."""
    fields: dict[str, object] = {
        "id": new_id("file"),
        "file_name": "report.pdf",
        "mime_type": "application/pdf",
        "size": 1234,
        "sha256": SHA_A,
        "created_by": "user-1",
        "scope": Scope("mandate-1"),
        "created_at": BASE_TIME,
        "blob_key": f"blobs/{uuid.uuid4().hex}",
        "folder": None,
        "tags": (),
    }
    fields.update(overrides)
    return FileItem(**fields)  # type: ignore[arg-type]


def make_workflow(**overrides: object) -> ChatWorkflow:
    """A valid ChatWorkflow with a fresh id."""
    fields: dict[str, object] = {
        "id": new_id("wf"),
        "scope": Scope("mandate-1"),
        "created_by": "user-1",
        "created_at": BASE_TIME,
    }
    fields.update(overrides)
    return ChatWorkflow(**fields)  # type: ignore[arg-type]


def make_message(
    workflow: ChatWorkflow | str,
    label: str | None = None,
    *,
    files: int = 1,
    file_ids: list[str] | None = None,
    **overrides: object,
) -> ChatMessage:
    """A message of ``workflow`` carrying ``files`` documents (or one per id in ``file_ids``).

    Message and documents carry the workflow's counters (those of a new
    workflow when only its id is given), as ``add_message`` stores them.
    """
    if isinstance(workflow, str):
        wf_id, counters = workflow, WorkflowCounters(1, 0, 0)
    else:
        wf_id, counters = workflow.id, workflow.counters
    msg_id = new_id("msg")
    ids = file_ids if file_ids is not None else [new_id("file") for _ in range(files)]
    docs = tuple(
        ChatDocument(
            id=new_id("doc"),
            message_id=msg_id,
            workflow_id=wf_id,
            file_id=file_id,
            file_name=f"file-{n}.txt",
            file_size=100 + n,
            mime_type="text/plain",
            round_number=counters.round,
            task_number=counters.task,
            action_number=counters.action,
        )
        for n, file_id in enumerate(ids)
    )
    fields: dict[str, object] = {
        "id": msg_id,
        "workflow_id": wf_id,
        "documents_label": label if label is not None else f"label-{next(_counter)}",
        "published_at": BASE_TIME,
        "documents": docs,
        "round_number": counters.round,
        "task_number": counters.task,
        "action_number": counters.action,
    }
    fields.update(overrides)
    return ChatMessage(**fields)  # type: ignore[arg-type]


THREADS = 8
"""Threads of the concurrency tests."""


def at_once(work: Callable[[int], T], threads: int = THREADS) -> list[T | Exception]:
    """Run ``work(i)`` in ``threads`` threads released together; their results or raised errors."""
    barrier = threading.Barrier(threads)

    def run(i: int) -> T | Exception:
        barrier.wait(timeout=30)
        try:
            return work(i)
        except Exception as err:
            return err

    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = [pool.submit(run, i) for i in range(threads)]
        return [f.result(timeout=120) for f in futures]


class _MetadataSuite:
    """What every part of the metadata contract shares: the fixtures, the flags, the helpers.

    Capability flags (class attributes; a backend's test class overrides what
    its backend lacks, and the cases that need it are skipped with the reason):
    :attr:`supports_concurrency`, :attr:`supports_versions`.
    """

    supports_concurrency: ClassVar[bool] = True
    """Whether units of work in several threads at once are safe (uniqueness races end in
    docbinder's own errors, sequence numbers stay distinct). docbinder's async API
    and worker threads need it."""

    supports_versions: ClassVar[bool] = True
    """Whether the backend keeps file versions (:class:`~docbinder.ports.metadata.VersionRepository`,
    feature row B1). Without them its ``versions`` methods raise ``ConfigurationError``."""

    @pytest.fixture
    def make_uow_factory(self) -> UnitOfWorkFactory:
        pytest.fail("a backend's test class provides make_uow_factory")

    @pytest.fixture
    def uow(self, make_uow_factory: UnitOfWorkFactory) -> Callable[[], UnitOfWork]:
        return make_uow_factory

    # -- helpers -------------------------------------------------------------

    @staticmethod
    def store_files(
        uow: Callable[[], UnitOfWork], *items: FileItem, deduplicate: bool = True
    ) -> None:
        with uow() as u:
            for item in items:
                u.files.add(item, deduplicate=deduplicate)
            u.commit()

    @staticmethod
    def store_workflow(
        uow: Callable[[], UnitOfWork], workflow: ChatWorkflow | None = None
    ) -> ChatWorkflow:
        workflow = workflow or make_workflow()
        with uow() as u:
            u.workflows.add_workflow(workflow)
            u.commit()
        return workflow

    @staticmethod
    def store_messages(uow: Callable[[], UnitOfWork], *messages: ChatMessage) -> list[ChatMessage]:
        with uow() as u:
            stored = [u.workflows.add_message(m) for m in messages]
            u.commit()
        return stored

    @staticmethod
    def advance(
        uow: Callable[[], UnitOfWork], workflow_id: str, step: CounterStep
    ) -> WorkflowCounters:
        with uow() as u:
            counters = u.workflows.advance_counters(workflow_id, step)
            u.commit()
        return counters

    @staticmethod
    def stored_counters(uow: Callable[[], UnitOfWork], workflow_id: str) -> WorkflowCounters:
        with uow() as u:
            workflow = u.workflows.get_workflow(workflow_id)
        assert workflow is not None
        return workflow.counters

    def _needs_concurrency(self) -> None:
        if not self.supports_concurrency:
            pytest.skip("units of work are not thread-safe (supports_concurrency = False)")

    def _needs_versions(self) -> None:
        if not self.supports_versions:
            pytest.skip("the backend keeps no file versions (supports_versions = False)")


class FileRepositoryContract(_MetadataSuite):
    """:class:`~docbinder.ports.metadata.FileRepository` (core role): FileItems, duplicates, holds."""

    # -- FileItems: round trip -----------------------------------------------

    def test_file_item_round_trip(self, uow: Callable[[], UnitOfWork]) -> None:
        item = make_file(
            scope=Scope("mandate-1", "feature-7"),
            size=5 * 1024**3,
            folder="Berichte/2024 Q1",
            tags=("finance", "entwurf", "季度"),
            created_at=datetime(2023, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        )
        self.store_files(uow, item)
        with uow() as u:
            loaded = u.files.get(item.id)
        assert loaded == item
        assert loaded is not None
        assert loaded.created_at.utcoffset() == timedelta(0)
        assert loaded.created_at.microsecond == 999999
        assert isinstance(loaded.tags, tuple)

    def test_get_missing_file_gives_none(self, uow: Callable[[], UnitOfWork]) -> None:
        with uow() as u:
            assert u.files.get(new_id()) is None

    def test_get_many_returns_existing_items_in_asked_order(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        items = [make_file(file_name=f"f{n}.pdf") for n in range(3)]
        self.store_files(uow, *items)
        missing = new_id("file")
        asked = [items[2].id, missing, items[0].id, items[2].id, items[1].id]
        with uow() as u:
            got = u.files.get_many(asked)
            assert list(got) == [items[2].id, items[0].id, items[1].id]
            assert got == {item.id: item for item in items}
            assert u.files.get_many([]) == {}
            assert u.files.get_many([missing]) == {}

    def test_get_many_handles_more_ids_than_one_batch(self, uow: Callable[[], UnitOfWork]) -> None:
        items = [make_file(file_name=f"many{n}.pdf") for n in range(3)]
        self.store_files(uow, *items)
        asked = [new_id("file") for _ in range(1200)]
        asked[7], asked[600], asked[1199] = (item.id for item in items)
        with uow() as u:
            assert list(u.files.get_many(asked)) == [item.id for item in items]

    @pytest.mark.parametrize("name", UNICODE_NAMES)
    def test_unicode_file_names_round_trip_byte_for_byte(
        self, uow: Callable[[], UnitOfWork], name: str
    ) -> None:
        item = make_file(file_name=name)
        self.store_files(uow, item)
        with uow() as u:
            loaded = u.files.get(item.id)
            found = u.files.find_duplicates(item.sha256, name, item.created_by, item.scope)
        assert loaded is not None
        assert loaded.file_name.encode("utf-8") == name.encode("utf-8")
        assert [f.id for f in found] == [item.id]

    @pytest.mark.parametrize("char", ["x", "é", "😀"])
    def test_longest_file_name_round_trips(self, uow: Callable[[], UnitOfWork], char: str) -> None:
        name = char * MAX_FILE_NAME_LENGTH
        item = make_file(file_name=name)
        self.store_files(uow, item)
        with uow() as u:
            loaded = u.files.get(item.id)
        assert loaded is not None
        assert loaded.file_name == name
        assert len(loaded.file_name) == MAX_FILE_NAME_LENGTH

    @pytest.mark.parametrize(
        "tags",
        [(), ("a",), ("Ünïcödé", "季度", "🚀"), ('quote"d', "back\\slash", "comma,sep", "")],
    )
    def test_tags_round_trip(self, uow: Callable[[], UnitOfWork], tags: tuple[str, ...]) -> None:
        item = make_file(tags=tags)
        self.store_files(uow, item)
        with uow() as u:
            loaded = u.files.get(item.id)
        assert loaded is not None
        assert loaded.tags == tags

    # -- FileItems: duplicates -----------------------------------------------

    def test_same_duplicate_key_raises_duplicate_file_item(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        first = make_file()
        self.store_files(uow, first)
        with uow() as u, pytest.raises(DuplicateFileItem):
            u.files.add(make_file())
        with uow() as u:
            assert [
                f.id
                for f in u.files.find_duplicates(SHA_A, "report.pdf", "user-1", Scope("mandate-1"))
            ] == [first.id]

    def test_duplicate_within_one_unit_raises(self, uow: Callable[[], UnitOfWork]) -> None:
        first = make_file()
        with uow() as u:
            u.files.add(first)
            with pytest.raises(DuplicateFileItem):
                u.files.add(make_file())
            u.commit()
        with uow() as u:
            assert [f.id for f in u.maintenance.iter_files()] == [first.id]

    def test_a_refused_duplicate_leaves_the_unit_able_to_find_the_candidate(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        """``StoreFile`` inserts first and looks the candidates up in the same unit (ADR 0032)."""
        first = make_file()
        self.store_files(uow, first)
        with uow() as u:
            with pytest.raises(DuplicateFileItem):
                u.files.add(make_file())
            found = u.files.find_duplicates(SHA_A, "report.pdf", "user-1", Scope("mandate-1"))
            assert [f.id for f in found] == [first.id]
            assert u.files.get(first.id) == first

    @PROPERTY_SETTINGS
    @given(name=FILE_NAMES)
    def test_any_valid_file_name_round_trips(
        self, uow: Callable[[], UnitOfWork], name: str
    ) -> None:
        item = make_file(file_name=name)
        self.store_files(uow, item)
        with uow() as u:
            loaded = u.files.get(item.id)
            found = u.files.find_duplicates(SHA_A, name, "user-1", Scope("mandate-1"))
        assert loaded is not None
        assert loaded.file_name.encode("utf-8") == name.encode("utf-8")
        assert [f.id for f in found] == [item.id]

    def test_same_id_raises_conflict(self, uow: Callable[[], UnitOfWork]) -> None:
        first = make_file()
        self.store_files(uow, first)
        other = make_file(id=first.id, sha256=SHA_B, file_name="other.txt")
        with uow() as u, pytest.raises(Conflict) as caught:
            u.files.add(other)
        assert not isinstance(caught.value, DuplicateFileItem)
        with uow() as u:
            assert u.files.get(first.id) == first

    def test_same_id_without_deduplication_raises_conflict(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        first = make_file()
        self.store_files(uow, first, deduplicate=False)
        with uow() as u, pytest.raises(Conflict):
            u.files.add(make_file(id=first.id), deduplicate=False)

    def test_names_differing_in_case_or_normalisation_are_distinct(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        nfc = unicodedata.normalize("NFC", "Résumé.pdf")
        nfd = unicodedata.normalize("NFD", "Résumé.pdf")
        assert nfc != nfd
        names = ["a.txt", "A.txt", "a.txt ", nfc, nfd]
        items = [make_file(file_name=name) for name in names]
        self.store_files(uow, *items)  # no DuplicateFileItem: all keys differ
        with uow() as u:
            for item in items:
                found = u.files.find_duplicates(SHA_A, item.file_name, "user-1", Scope("mandate-1"))
                assert [f.id for f in found] == [item.id]
                loaded = u.files.get(item.id)
                assert loaded is not None
                assert loaded.file_name == item.file_name

    def test_find_duplicates_matches_scope_exactly(self, uow: Callable[[], UnitOfWork]) -> None:
        mandate_level = make_file(scope=Scope("mandate-1"))
        feature_level = make_file(scope=Scope("mandate-1", "feature-1"))
        other_feature = make_file(scope=Scope("mandate-1", "feature-2"))
        other_mandate = make_file(scope=Scope("mandate-2"))
        self.store_files(uow, mandate_level, feature_level, other_feature, other_mandate)
        with uow() as u:

            def ids(scope: Scope) -> list[str]:
                return [f.id for f in u.files.find_duplicates(SHA_A, "report.pdf", "user-1", scope)]

            assert ids(Scope("mandate-1")) == [mandate_level.id]
            assert ids(Scope("mandate-1", "feature-1")) == [feature_level.id]
            assert ids(Scope("mandate-1", "feature-2")) == [other_feature.id]
            assert ids(Scope("mandate-2")) == [other_mandate.id]
            assert ids(Scope("mandate-2", "feature-1")) == []
            assert ids(Scope("mandate-3")) == []

    def test_find_duplicates_needs_same_bytes_name_and_creator(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        item = make_file()
        self.store_files(uow, item)
        scope = Scope("mandate-1")
        with uow() as u:
            assert u.files.find_duplicates(SHA_A, "report.pdf", "user-1", scope) == [item]
            assert u.files.find_duplicates(SHA_B, "report.pdf", "user-1", scope) == []
            assert u.files.find_duplicates(SHA_A, "report.PDF", "user-1", scope) == []
            assert u.files.find_duplicates(SHA_A, "report.pdf", "user-2", scope) == []

    def test_items_without_deduplication_are_not_duplicates(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        plain = make_file()
        self.store_files(uow, plain, deduplicate=False)
        with uow() as u:
            assert u.files.find_duplicates(SHA_A, "report.pdf", "user-1", Scope("mandate-1")) == []
        # the key is still free, and further non-deduplicated copies are allowed
        indexed = make_file()
        again = make_file()
        self.store_files(uow, indexed)
        self.store_files(uow, again, deduplicate=False)
        with uow() as u:
            found = u.files.find_duplicates(SHA_A, "report.pdf", "user-1", Scope("mandate-1"))
            assert [f.id for f in found] == [indexed.id]
            assert {u.files.get(i.id) for i in (plain, indexed, again)} == {plain, indexed, again}

    def test_delete_frees_the_duplicate_key(self, uow: Callable[[], UnitOfWork]) -> None:
        first = make_file()
        self.store_files(uow, first)
        with uow() as u:
            assert u.files.delete(first.id) is True
            assert u.files.delete(first.id) is False
            u.commit()
        second = make_file()
        self.store_files(uow, second)
        with uow() as u:
            assert u.files.get(first.id) is None
            assert u.files.find_duplicates(SHA_A, "report.pdf", "user-1", Scope("mandate-1")) == [
                second
            ]

    def test_delete_missing_gives_false(self, uow: Callable[[], UnitOfWork]) -> None:
        with uow() as u:
            assert u.files.delete(new_id()) is False

    # -- FileItems: update ---------------------------------------------------

    def test_update_replaces_metadata(self, uow: Callable[[], UnitOfWork]) -> None:
        item = make_file()
        self.store_files(uow, item)
        changed = attrs.evolve(item, folder="neu/", tags=("x", "y"), mime_type="text/plain", size=7)
        with uow() as u:
            u.files.update(changed)
            u.commit()
        with uow() as u:
            assert u.files.get(item.id) == changed

    def test_update_with_unchanged_values_finds_the_item(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        item = make_file()
        self.store_files(uow, item)
        with uow() as u:
            u.files.update(item)  # nothing changes, the item still exists
            u.commit()
        with uow() as u:
            assert u.files.get(item.id) == item

    def test_update_missing_raises_file_item_not_found(self, uow: Callable[[], UnitOfWork]) -> None:
        with uow() as u, pytest.raises(FileItemNotFound):
            u.files.update(make_file())

    def test_update_moves_the_duplicate_key(self, uow: Callable[[], UnitOfWork]) -> None:
        item = make_file()
        self.store_files(uow, item)
        renamed = attrs.evolve(item, file_name="renamed.pdf")
        with uow() as u:
            u.files.update(renamed)
            u.commit()
        scope = Scope("mandate-1")
        with uow() as u:
            assert u.files.find_duplicates(SHA_A, "renamed.pdf", "user-1", scope) == [renamed]
            assert u.files.find_duplicates(SHA_A, "report.pdf", "user-1", scope) == []
        fresh = make_file()  # the old key is free again
        self.store_files(uow, fresh)

    def test_update_if_blob_key_is_a_compare_and_set(self, uow: Callable[[], UnitOfWork]) -> None:
        item = make_file()
        self.store_files(uow, item)
        moved = attrs.evolve(item, blob_key=f"blobs/{uuid.uuid4().hex}", size=7)
        with uow() as u:
            u.files.update(moved, if_blob_key=item.blob_key)
            u.commit()
        with uow() as u:
            with pytest.raises(Conflict) as caught:
                u.files.update(attrs.evolve(item, size=9), if_blob_key=item.blob_key)
            assert not isinstance(caught.value, DuplicateFileItem)
            with pytest.raises(FileItemNotFound):
                u.files.update(make_file(), if_blob_key=item.blob_key)
            # the unit is still usable after the refused update
            assert u.files.get(item.id) == moved
            u.files.update(attrs.evolve(moved, size=8), if_blob_key=moved.blob_key)
            u.commit()
        with uow() as u:
            assert u.files.get(item.id) == attrs.evolve(moved, size=8)

    def test_delete_if_blob_key_keeps_a_row_that_moved_on(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        item = make_file()
        self.store_files(uow, item)
        with uow() as u:
            assert u.files.delete(item.id, if_blob_key="blobs/another") is False
            u.commit()
        with uow() as u:
            assert u.files.get(item.id) == item
            assert u.files.delete(item.id, if_blob_key=item.blob_key) is True
            u.commit()
        with uow() as u:
            assert u.files.get(item.id) is None

    def test_update_into_a_taken_key_raises_duplicate_file_item(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        first = make_file(file_name="one.pdf")
        second = make_file(file_name="two.pdf")
        self.store_files(uow, first, second)
        with uow() as u:
            with pytest.raises(DuplicateFileItem):
                u.files.update(attrs.evolve(second, file_name="one.pdf"))
            # the unit survives the conflict
            u.files.update(attrs.evolve(second, folder="kept"))
            u.commit()
        with uow() as u:
            assert u.files.get(second.id) == attrs.evolve(second, folder="kept")
            assert u.files.get(first.id) == first

    def test_update_of_item_without_deduplication_stays_out_of_duplicates(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        indexed = make_file(file_name="one.pdf")
        plain = make_file(file_name="two.pdf")
        self.store_files(uow, indexed)
        self.store_files(uow, plain, deduplicate=False)
        with uow() as u:
            u.files.update(attrs.evolve(plain, file_name="one.pdf"))  # no DuplicateFileItem
            u.commit()
        with uow() as u:
            found = u.files.find_duplicates(SHA_A, "one.pdf", "user-1", Scope("mandate-1"))
            assert [f.id for f in found] == [indexed.id]

    # -- FileItems: listing --------------------------------------------------

    def test_list_is_newest_first_per_mandate_with_limit(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        items = [
            make_file(sha256=f"{n:064x}", created_at=BASE_TIME + timedelta(microseconds=n))
            for n in range(5)
        ]
        foreign = make_file(scope=Scope("mandate-2"), created_at=BASE_TIME + timedelta(days=1))
        self.store_files(uow, *items[::2], foreign, *items[1::2])
        with uow() as u:
            assert u.files.list("mandate-1") == items[::-1]
            assert u.files.list("mandate-1", limit=2) == items[:2:-1]
            assert u.files.list("mandate-1", limit=0) == []
            assert u.files.list("mandate-2") == [foreign]
            assert u.files.list("mandate-9") == []

    def test_list_breaks_ties_by_id_descending(self, uow: Callable[[], UnitOfWork]) -> None:
        ids = ["file-B", "file-a", "file-Z", "file-0", "file-z"]
        items = [make_file(id=i, sha256=f"{n:064x}") for n, i in enumerate(ids)]
        self.store_files(uow, *items)
        with uow() as u:
            assert [f.id for f in u.files.list("mandate-1")] == sorted(ids, reverse=True)

    def test_list_pages_with_after_cover_every_item_once(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        # Ties on created_at (three per second) make the id part of the key matter.
        ids = [f"file-{c}{n}" for n in range(3) for c in "aBz"]
        items = [
            make_file(
                id=i,
                sha256=f"{n:064x}",
                created_at=BASE_TIME + timedelta(seconds=n // 3),
            )
            for n, i in enumerate(ids)
        ]
        self.store_files(uow, *items, make_file(scope=Scope("mandate-2"), file_name="x.pdf"))
        with uow() as u:
            whole = u.files.list("mandate-1")
            pages: list[FileItem] = []
            after = None
            while True:
                page = u.files.list("mandate-1", limit=2, after=after)
                pages.extend(page)
                if len(page) < 2:
                    break
                after = page[-1]
        assert pages == whole and len(whole) == 9
        assert [(f.created_at, f.id) for f in whole] == sorted(
            ((f.created_at, f.id) for f in items), reverse=True
        )

    # -- FileItems: holds (confirm, lock, lock_shared) -----------------------

    def test_confirm_sees_only_a_row_that_still_names_its_blob(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        item = make_file()
        self.store_files(uow, item)
        with uow() as u:
            assert u.files.confirm(item.id, item.blob_key) == item
            assert u.files.confirm(item.id, "other/key") is None
            assert u.files.confirm("no-such-file", item.blob_key) is None
            u.commit()
        with uow() as u:
            assert u.files.get(item.id) == item  # the no-op changed nothing

    def test_lock_and_lock_shared_read_the_rows_as_get_and_get_many_do(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        items = [make_file(file_name=f"{n}.pdf") for n in range(3)]
        self.store_files(uow, *items)
        missing = new_id("file")
        asked = [items[2].id, missing, items[0].id, items[2].id]
        with uow() as u:
            shared = u.files.lock_shared(asked)
            assert list(shared) == [items[2].id, items[0].id]
            assert shared == u.files.get_many(asked)
            assert u.files.lock_shared([]) == {}
            # A unit may take the exclusive lock of a row it holds shared.
            assert u.files.lock(items[0].id) == items[0]
            assert u.files.lock(missing) is None
            assert u.files.delete(items[0].id)
            u.rollback()
        with uow() as u:
            assert u.files.lock(items[0].id) == items[0]
            assert u.files.delete(items[0].id)
            u.commit()
        with uow() as u:
            assert u.files.lock(items[0].id) is None
            assert u.files.lock_shared([items[0].id, items[1].id]) == {items[1].id: items[1]}


class WorkflowRepositoryContract(_MetadataSuite):
    """:class:`~docbinder.ports.metadata.WorkflowRepository` (core role): workflows, messages, documents."""

    # -- workflows -----------------------------------------------------------

    def test_workflow_round_trip_without_messages(self, uow: Callable[[], UnitOfWork]) -> None:
        workflow = make_workflow(
            scope=Scope("mandate-1", "feature-3"),
            status="completed",
            current_round=4,
            current_task=5,
            current_action=6,
            created_at=datetime(2024, 2, 29, 12, 0, 0, 1, tzinfo=UTC),
        )
        with_messages = attrs.evolve(workflow, messages=(make_message(workflow),))
        self.store_workflow(uow, with_messages)
        with uow() as u:
            loaded = u.workflows.get_workflow(workflow.id)
            assert loaded == workflow
            assert loaded is not None and loaded.messages == ()
            assert u.workflows.list_messages(workflow.id) == []

    def test_get_missing_workflow_gives_none(self, uow: Callable[[], UnitOfWork]) -> None:
        with uow() as u:
            assert u.workflows.get_workflow(new_id()) is None

    def test_add_workflow_with_taken_id_raises_conflict(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(uow)
        with uow() as u, pytest.raises(Conflict):
            u.workflows.add_workflow(make_workflow(id=workflow.id, status="other"))
        with uow() as u:
            assert u.workflows.get_workflow(workflow.id) == workflow

    def test_update_workflow_stores_status_and_counters(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(uow)
        changed = attrs.evolve(
            workflow, status="stopped", current_round=2, current_task=3, current_action=4
        )
        with uow() as u:
            u.workflows.update_workflow(changed)
            u.commit()
        with uow() as u:
            assert u.workflows.get_workflow(workflow.id) == changed

    def test_update_workflow_with_unchanged_values_finds_it(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(uow)
        with uow() as u:
            u.workflows.update_workflow(workflow)
            u.commit()

    def test_update_missing_workflow_raises(self, uow: Callable[[], UnitOfWork]) -> None:
        with uow() as u, pytest.raises(WorkflowNotFound):
            u.workflows.update_workflow(make_workflow())

    def test_list_workflows_newest_first_with_limit(self, uow: Callable[[], UnitOfWork]) -> None:
        flows = [make_workflow(created_at=BASE_TIME + timedelta(seconds=n)) for n in range(4)]
        foreign = make_workflow(scope=Scope("mandate-2"))
        for workflow in (flows[2], foreign, flows[0], flows[3], flows[1]):
            self.store_workflow(uow, workflow)
        with uow() as u:
            assert u.workflows.list_workflows("mandate-1") == flows[::-1]
            assert u.workflows.list_workflows("mandate-1", limit=3) == flows[:0:-1]
            assert u.workflows.list_workflows("mandate-2") == [foreign]
            assert u.workflows.list_workflows("nobody") == []

    def test_list_workflows_pages_with_after(self, uow: Callable[[], UnitOfWork]) -> None:
        flows = [
            make_workflow(id=f"wf-{c}{n}", created_at=BASE_TIME + timedelta(seconds=n))
            for n in range(3)
            for c in "aZ"
        ]
        for workflow in flows:
            self.store_workflow(uow, workflow)
        with uow() as u:
            first = u.workflows.list_workflows("mandate-1", limit=4)
            rest = u.workflows.list_workflows("mandate-1", after=first[-1])
            assert first + rest == u.workflows.list_workflows("mandate-1")
            assert len(first + rest) == 6 and len(set(first + rest)) == 6

    # -- workflow counters (round / task / action, ADR 0026) -----------------

    def test_a_new_workflow_is_in_round_one_with_no_task(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(uow)
        assert self.stored_counters(uow, workflow.id) == WorkflowCounters(1, 0, 0)

    def test_next_steps_count_up_and_reset_the_levels_below(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(uow, make_workflow(status="running"))
        steps = ["task", "action", "action", "task", "round", "action"]
        seen = [self.advance(uow, workflow.id, CounterStep.next(level)) for level in steps]
        assert [c.as_tuple() for c in seen] == [
            (1, 1, 0),
            (1, 1, 1),
            (1, 1, 2),
            (1, 2, 0),
            (2, 0, 0),
            (2, 0, 1),
        ]
        with uow() as u:
            stored = u.workflows.get_workflow(workflow.id)
        assert stored == attrs.evolve(workflow, current_round=2, current_task=0, current_action=1)

    def test_absolute_steps_set_their_level_and_keep_the_ones_above(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(uow)
        assert self.advance(uow, workflow.id, CounterStep.to(round=3, action=2)).as_tuple() == (
            3,
            0,
            2,
        )
        assert self.advance(uow, workflow.id, CounterStep.to(task=4)).as_tuple() == (3, 4, 0)
        assert self.advance(uow, workflow.id, CounterStep.to(action=7)).as_tuple() == (3, 4, 7)
        # The numbers it already has: nothing changes, nothing is refused.
        assert self.advance(uow, workflow.id, CounterStep.to(action=7)).as_tuple() == (3, 4, 7)
        assert self.stored_counters(uow, workflow.id) == WorkflowCounters(3, 4, 7)

    @pytest.mark.parametrize(
        "step",
        [
            CounterStep.to(round=2),
            CounterStep.to(round=3, task=3),
            CounterStep.to(task=4, action=6),
            CounterStep.to(task=1),
            CounterStep.to(action=0),
        ],
        ids=repr,
    )
    def test_a_step_behind_the_stored_counters_is_refused_and_changes_nothing(
        self, uow: Callable[[], UnitOfWork], step: CounterStep
    ) -> None:
        workflow = self.store_workflow(
            uow, make_workflow(current_round=3, current_task=4, current_action=7)
        )
        with uow() as u:
            with pytest.raises(CountersWouldGoBack) as caught:
                u.workflows.advance_counters(workflow.id, step)
            assert caught.value.current == WorkflowCounters(3, 4, 7)
            # The unit stays usable after the refusal.
            assert u.workflows.advance_counters(workflow.id, CounterStep.next("action")) == (
                WorkflowCounters(3, 4, 8)
            )
            u.commit()
        assert self.stored_counters(uow, workflow.id) == WorkflowCounters(3, 4, 8)

    def test_an_increment_past_the_largest_number_is_refused(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(
            uow, make_workflow(current_round=5, current_task=MAX_COUNTER, current_action=3)
        )
        with uow() as u, pytest.raises(InvalidInput):
            u.workflows.advance_counters(workflow.id, CounterStep.next("task"))
        assert self.stored_counters(uow, workflow.id) == WorkflowCounters(5, MAX_COUNTER, 3)
        assert self.advance(uow, workflow.id, CounterStep.next("round")).as_tuple() == (6, 0, 0)

    @pytest.mark.parametrize("step", [CounterStep.next("round"), CounterStep.to(task=1)], ids=repr)
    def test_advancing_a_missing_workflow_raises(
        self, uow: Callable[[], UnitOfWork], step: CounterStep
    ) -> None:
        with uow() as u, pytest.raises(WorkflowNotFound):
            u.workflows.advance_counters(new_id("wf"), step)

    def test_an_advance_rolled_back_is_not_kept(self, uow: Callable[[], UnitOfWork]) -> None:
        workflow = self.store_workflow(uow)
        with uow() as u:
            assert u.workflows.advance_counters(workflow.id, CounterStep.to(round=9)) == (
                WorkflowCounters(9, 0, 0)
            )
        assert self.stored_counters(uow, workflow.id) == WorkflowCounters(1, 0, 0)

    def test_advancing_leaves_the_message_numbering_alone(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(uow)
        self.store_messages(uow, make_message(workflow, "first"))
        self.advance(uow, workflow.id, CounterStep.next("round"))
        (second,) = self.store_messages(uow, make_message(workflow, "second"))
        assert second.sequence_nr == 2

    def test_add_message_carries_the_counters_stored_when_it_is_numbered(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(
            uow, make_workflow(current_round=4, current_task=5, current_action=6)
        )
        # What the message carries is ignored: it was read before someone advanced.
        stale = make_message(workflow.id, files=2)
        assert stale.counters == WorkflowCounters(1, 0, 0)
        (first,) = self.store_messages(uow, stale)
        self.advance(uow, workflow.id, CounterStep.next("action"))
        (second,) = self.store_messages(uow, make_message(workflow))
        assert first == stale.placed(1, WorkflowCounters(4, 5, 6))
        assert second.counters == WorkflowCounters(4, 5, 7)
        with uow() as u:
            listed = u.workflows.list_messages(workflow.id)
            assert listed == [first, second]
            assert [d.round_number for d in listed[0].documents] == [4, 4]
            assert [(d.task_number, d.action_number) for d in listed[0].documents] == [(5, 6)] * 2
            assert [d.action_number for d in listed[1].documents] == [7]

    # -- messages ------------------------------------------------------------

    def test_add_message_assigns_increasing_sequence_numbers(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(uow)
        other = self.store_workflow(uow)
        first = make_message(workflow, sequence_nr=99)
        stored = self.store_messages(uow, first, make_message(workflow), make_message(other))
        stored += self.store_messages(uow, make_message(workflow))
        assert [m.sequence_nr for m in stored] == [1, 2, 1, 3]
        assert stored[0] == attrs.evolve(first, sequence_nr=1)

    def test_message_round_trip_with_documents(self, uow: Callable[[], UnitOfWork]) -> None:
        workflow = self.store_workflow(
            uow, make_workflow(current_round=4, current_task=5, current_action=6)
        )
        messages = [
            make_message(workflow, files=3, message="Hier ist der Bericht 📎", role="assistant"),
            make_message(workflow, files=0, status="first", role="user"),
            make_message(workflow, files=1, published_at=BASE_TIME + timedelta(microseconds=7)),
        ]
        stored = self.store_messages(uow, *messages)
        with uow() as u:
            listed = u.workflows.list_messages(workflow.id)
        assert listed == stored
        assert [m.sequence_nr for m in listed] == [1, 2, 3]
        assert listed[0].documents == messages[0].documents
        assert listed[2].published_at == BASE_TIME + timedelta(microseconds=7)

    def test_long_message_text_round_trips(self, uow: Callable[[], UnitOfWork]) -> None:
        workflow = self.store_workflow(uow)
        text = "Zeile ✓ 😀\n" * 20_000  # well over 64 KiB of UTF-8
        [stored] = self.store_messages(uow, make_message(workflow, message=text))
        with uow() as u:
            assert u.workflows.list_messages(workflow.id) == [stored]

    def test_add_message_to_missing_workflow_raises(self, uow: Callable[[], UnitOfWork]) -> None:
        with uow() as u, pytest.raises(WorkflowNotFound):
            u.workflows.add_message(make_message(new_id("wf")))

    def test_duplicate_label_in_one_workflow_raises(self, uow: Callable[[], UnitOfWork]) -> None:
        workflow = self.store_workflow(uow)
        other = self.store_workflow(uow)
        [first] = self.store_messages(uow, make_message(workflow, "writeFile:a.txt"))
        with uow() as u, pytest.raises(DuplicateLabel):
            u.workflows.add_message(make_message(workflow, "writeFile:a.txt"))
        # the same label in another workflow is fine
        self.store_messages(uow, make_message(other, "writeFile:a.txt"))
        with uow() as u:
            assert u.workflows.list_messages(workflow.id) == [first]

    def test_labels_differing_in_case_or_trailing_space_are_distinct(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(uow)
        labels = ["writeFile:a.txt", "writeFile:A.txt", "writeFile:a.txt ", "x:é", "x:e\u0301"]
        stored = self.store_messages(uow, *(make_message(workflow, label) for label in labels))
        with uow() as u:
            for label, message in zip(labels, stored, strict=True):
                assert u.workflows.documents_by_label(workflow.id, label) == list(message.documents)

    @PROPERTY_SETTINGS
    @given(label=LABELS)
    def test_any_valid_label_round_trips_and_is_found(
        self, uow: Callable[[], UnitOfWork], label: str
    ) -> None:
        workflow = self.store_workflow(uow)
        [stored] = self.store_messages(uow, make_message(workflow, label))
        with uow() as u:
            assert u.workflows.list_messages(workflow.id)[0].documents_label == label
            assert u.workflows.documents_by_label(workflow.id, label) == list(stored.documents)
            assert u.workflows.documents_by_label(workflow.id, label + " ") == []

    def test_longest_label_round_trips(self, uow: Callable[[], UnitOfWork]) -> None:
        workflow = self.store_workflow(uow)
        label = "😀" * MAX_LABEL_LENGTH
        [stored] = self.store_messages(uow, make_message(workflow, label))
        with uow() as u:
            assert u.workflows.list_messages(workflow.id)[0].documents_label == label
            assert u.workflows.documents_by_label(workflow.id, label) == list(stored.documents)
            with pytest.raises(DuplicateLabel):
                u.workflows.add_message(make_message(workflow, label))

    def test_duplicate_message_id_raises_conflict(self, uow: Callable[[], UnitOfWork]) -> None:
        workflow = self.store_workflow(uow)
        [first] = self.store_messages(uow, make_message(workflow, files=0))
        with uow() as u:
            with pytest.raises(Conflict) as caught:
                u.workflows.add_message(make_message(workflow, files=0, id=first.id))
            second = u.workflows.add_message(make_message(workflow, files=0))
            u.commit()
        assert not isinstance(caught.value, DuplicateLabel)
        # The message holding the id is untouched, and the refused one used up no number.
        with uow() as u:
            assert u.workflows.list_messages(workflow.id) == [first, second]
        assert second.sequence_nr == 2

    def test_a_taken_id_among_several_documents_stores_none_of_them(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(uow)
        [first] = self.store_messages(uow, make_message(workflow, files=2))
        clash = make_message(workflow, files=3)
        taken = attrs.evolve(clash.documents[1], id=first.documents[1].id)
        clash = attrs.evolve(clash, documents=(clash.documents[0], taken, clash.documents[2]))
        with uow() as u:
            with pytest.raises(Conflict):
                u.workflows.add_message(clash)
            second = u.workflows.add_message(make_message(workflow, files=1))
            u.commit()
        with uow() as u:
            assert u.workflows.list_messages(workflow.id) == [first, second]
            assert u.workflows.get_documents(workflow.id, [d.id for d in clash.documents]) == {
                first.documents[1].id: first.documents[1]
            }
        assert second.sequence_nr == 2

    def test_duplicate_document_id_raises_conflict_and_stores_nothing(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(uow)
        [first] = self.store_messages(uow, make_message(workflow))
        clash = make_message(workflow)
        clash = attrs.evolve(
            clash, documents=(attrs.evolve(clash.documents[0], id=first.documents[0].id),)
        )
        with uow() as u:
            with pytest.raises(Conflict):
                u.workflows.add_message(clash)
            [second] = [u.workflows.add_message(make_message(workflow))]
            u.commit()
        with uow() as u:
            assert u.workflows.list_messages(workflow.id) == [first, second]
        assert second.sequence_nr == 2

    def test_sequence_continues_after_a_failed_add(self, uow: Callable[[], UnitOfWork]) -> None:
        workflow = self.store_workflow(uow)
        with uow() as u:
            first = u.workflows.add_message(make_message(workflow, "same"))
            with pytest.raises(DuplicateLabel):
                u.workflows.add_message(make_message(workflow, "same"))
            second = u.workflows.add_message(make_message(workflow, "other"))
            u.commit()
        assert (first.sequence_nr, second.sequence_nr) == (1, 2)

    def test_admit_gets_the_stored_workflow_as_a_resource(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(
            uow, make_workflow(scope=Scope("mandate-9", "feature-3"), created_by="owner-9")
        )
        seen: list[Resource] = []
        # The message may name any scope: admit sees the stored workflow's.
        with uow() as u:
            stored = u.workflows.add_message(make_message(workflow), seen.append)
            u.commit()
        assert seen == [
            Resource(ResourceKind.WORKFLOW, Scope("mandate-9", "feature-3"), "owner-9", workflow.id)
        ]
        with uow() as u:
            assert u.workflows.list_messages(workflow.id) == [stored]

    def test_a_refusing_admit_keeps_nothing_and_uses_up_no_number(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(uow)
        [first] = self.store_messages(uow, make_message(workflow, "taken"))

        def refuse(resource: Resource) -> None:
            raise AccessDenied(f"no update on {resource.id}")

        with uow() as u:
            # Refused before the label is looked at: no DuplicateLabel for a taken one.
            for label in ("taken", "free"):
                refused = make_message(workflow, label)
                with pytest.raises(AccessDenied):
                    u.workflows.add_message(refused, refuse)
            second = u.workflows.add_message(make_message(workflow, "free"))
            u.commit()
        with uow() as u:
            assert u.workflows.list_messages(workflow.id) == [first, second]
            assert u.workflows.get_documents(workflow.id, [refused.documents[0].id]) == {}
        assert second.sequence_nr == 2

    def test_an_admit_raising_any_exception_keeps_nothing_and_leaves_the_unit_usable(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(uow)
        [first] = self.store_messages(uow, make_message(workflow, "first"))
        failure = RuntimeError("the authorizer is down")

        def fail(resource: Resource) -> None:
            raise failure

        with uow() as u:
            refused = make_message(workflow, "refused")
            with pytest.raises(RuntimeError) as raised:
                u.workflows.add_message(refused, fail)
            assert raised.value is failure  # propagated as it is
            # The unit goes on and commits, as after a refusal by a docbinder error.
            second = u.workflows.add_message(make_message(workflow, "second"))
            u.commit()
        with uow() as u:
            assert u.workflows.list_messages(workflow.id) == [first, second]
            assert u.workflows.get_documents(workflow.id, [refused.documents[0].id]) == {}
        assert second.sequence_nr == 2

    def test_admit_is_not_called_for_a_missing_workflow(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        seen: list[Resource] = []
        with uow() as u, pytest.raises(WorkflowNotFound):
            u.workflows.add_message(make_message(new_id("wf")), seen.append)
        assert seen == []

    # -- documents -----------------------------------------------------------

    def test_get_documents_only_within_the_workflow(self, uow: Callable[[], UnitOfWork]) -> None:
        workflow = self.store_workflow(uow)
        other = self.store_workflow(uow)
        [mine, theirs] = self.store_messages(
            uow, make_message(workflow, files=2), make_message(other)
        )
        wanted = [
            mine.documents[1].id,
            theirs.documents[0].id,
            "docItem-missing",
            mine.documents[0].id,
        ]
        with uow() as u:
            got = u.workflows.get_documents(workflow.id, wanted)
            assert got == {d.id: d for d in mine.documents}
            assert u.workflows.get_documents(other.id, wanted) == {
                theirs.documents[0].id: theirs.documents[0]
            }
            assert u.workflows.get_documents(workflow.id, []) == {}

    def test_get_documents_handles_many_ids(self, uow: Callable[[], UnitOfWork]) -> None:
        workflow = self.store_workflow(uow)
        [message] = self.store_messages(uow, make_message(workflow, files=30))
        wanted = [new_id("missing") for _ in range(1200)] + [d.id for d in message.documents]
        with uow() as u:
            assert u.workflows.get_documents(workflow.id, wanted) == {
                d.id: d for d in message.documents
            }

    def test_documents_by_label_in_stored_order(self, uow: Callable[[], UnitOfWork]) -> None:
        workflow = self.store_workflow(uow)
        other = self.store_workflow(uow)
        [target, empty, _] = self.store_messages(
            uow,
            make_message(workflow, "renderDocument:report", files=4),
            make_message(workflow, "note", files=0),
            make_message(other, "renderDocument:report", files=2),
        )
        with uow() as u:
            assert u.workflows.documents_by_label(workflow.id, "renderDocument:report") == list(
                target.documents
            )
            assert u.workflows.documents_by_label(workflow.id, empty.documents_label) == []
            assert u.workflows.documents_by_label(workflow.id, "unknown") == []
            assert u.workflows.documents_by_label(new_id("wf"), "renderDocument:report") == []

    def test_documents_by_file_oldest_first_within_workflow(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(uow)
        other = self.store_workflow(uow)
        file_id = new_id("file")
        stored = self.store_messages(
            uow,
            make_message(workflow, file_ids=[file_id, new_id("file"), file_id]),
            make_message(other, file_ids=[file_id]),
            make_message(workflow, file_ids=[file_id]),
        )
        expected = [stored[0].documents[0], stored[0].documents[2], stored[2].documents[0]]
        with uow() as u:
            assert u.workflows.documents_by_file(workflow.id, file_id) == expected
            assert u.workflows.documents_by_file(other.id, file_id) == list(stored[1].documents)
            assert u.workflows.documents_by_file(workflow.id, new_id("file")) == []

    def test_documents_by_labels_is_documents_by_label_for_each(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(uow)
        other = self.store_workflow(uow)
        labels = ["task:a", "task:A", "task:a ", "x:é", "x:e\u0301", "note"]
        files = {"note": 0, "task:a": 4}
        stored = self.store_messages(
            uow,
            *(make_message(workflow, label, files=files.get(label, 2)) for label in labels),
            make_message(other, "task:b", files=3),
        )
        mine = {m.documents_label: list(m.documents) for m in stored[:-1] if m.documents}
        asked = ["x:é", "unknown", "task:b", "task:a", "note", "x:é", "task:a ", "task:A"]
        with uow() as u:
            got = u.workflows.documents_by_labels(workflow.id, asked)
            for label in asked:
                assert got.get(label, []) == u.workflows.documents_by_label(workflow.id, label)
            assert got == {label: mine[label] for label in ["x:é", "task:a", "task:a ", "task:A"]}
            assert list(got) == ["x:é", "task:a", "task:a ", "task:A"]
            assert u.workflows.documents_by_labels(other.id, asked) == {
                "task:b": list(stored[-1].documents)
            }
            assert u.workflows.documents_by_labels(workflow.id, []) == {}
            assert u.workflows.documents_by_labels(new_id("wf"), labels) == {}

    def test_documents_by_labels_handles_many_labels(self, uow: Callable[[], UnitOfWork]) -> None:
        workflow = self.store_workflow(uow)
        stored = self.store_messages(
            uow, *(make_message(workflow, f"task:{n}", files=2) for n in range(30))
        )
        asked = [f"missing:{n}" for n in range(1200)] + [m.documents_label for m in stored][::-1]
        with uow() as u:
            got = u.workflows.documents_by_labels(workflow.id, asked)
        assert got == {m.documents_label: list(m.documents) for m in stored[::-1]}

    def test_documents_by_files_is_documents_by_file_for_each(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(uow)
        other = self.store_workflow(uow)
        a, b, c = new_id("file"), new_id("file"), new_id("file")
        stored = self.store_messages(
            uow,
            make_message(workflow, file_ids=[a, b, a]),
            make_message(other, file_ids=[a, c]),
            make_message(workflow, file_ids=[b]),
            make_message(workflow, file_ids=[a]),
        )
        asked = [b, new_id("file"), c, a, b]
        with uow() as u:
            got = u.workflows.documents_by_files(workflow.id, asked)
            for file_id in asked:
                assert got.get(file_id, []) == u.workflows.documents_by_file(workflow.id, file_id)
            assert got == {
                b: [stored[0].documents[1], stored[2].documents[0]],
                a: [stored[0].documents[0], stored[0].documents[2], stored[3].documents[0]],
            }
            assert list(got) == [b, a]
            assert u.workflows.documents_by_files(other.id, asked) == {
                c: [stored[1].documents[1]],
                a: [stored[1].documents[0]],
            }
            assert u.workflows.documents_by_files(workflow.id, []) == {}

    def test_documents_by_file_names_match_the_stored_name_exactly(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(uow)
        other = self.store_workflow(uow)
        stored = self.store_messages(
            uow,
            make_message(workflow, files=2),  # file-0.txt, file-1.txt
            make_message(other, files=1),
            make_message(workflow, files=1),  # file-0.txt again
        )
        with uow() as u:
            got = u.workflows.documents_by_file_names(
                workflow.id, ["file-0.txt", "FILE-1.TXT", "file-1.txt", "nothing.txt", "file-0.txt"]
            )
            # oldest first; no case folding (MariaDB's collation would fold it)
            assert got == {
                "file-0.txt": [stored[0].documents[0], stored[2].documents[0]],
                "file-1.txt": [stored[0].documents[1]],
            }
            assert list(got) == ["file-0.txt", "file-1.txt"]
            assert u.workflows.documents_by_file_names(other.id, ["file-1.txt"]) == {}
            assert u.workflows.documents_by_file_names(workflow.id, []) == {}

    def test_documents_by_files_handles_many_ids(self, uow: Callable[[], UnitOfWork]) -> None:
        workflow = self.store_workflow(uow)
        [message] = self.store_messages(uow, make_message(workflow, files=30))
        asked = [new_id("missing") for _ in range(1200)] + [d.file_id for d in message.documents]
        with uow() as u:
            got = u.workflows.documents_by_files(workflow.id, asked)
        assert got == {d.file_id: [d] for d in message.documents}

    def test_recent_documents_newest_first_with_limit(self, uow: Callable[[], UnitOfWork]) -> None:
        workflow = self.store_workflow(uow)
        other = self.store_workflow(uow)
        stored = self.store_messages(
            uow,
            make_message(workflow, files=2),
            make_message(other, files=3),
            make_message(workflow, files=0),
            make_message(workflow, files=3),
        )
        stored += self.store_messages(uow, make_message(workflow, files=1))
        in_order = [d for m in stored if m.workflow_id == workflow.id for d in m.documents]
        with uow() as u:
            assert u.workflows.recent_documents(workflow.id, 100) == in_order[::-1]
            assert u.workflows.recent_documents(workflow.id, 4) == in_order[:-5:-1]
            assert u.workflows.recent_documents(workflow.id, 0) == []
            assert u.workflows.recent_documents(new_id("wf"), 5) == []

    def test_negative_limits_are_refused(self, uow: Callable[[], UnitOfWork]) -> None:
        workflow = self.store_workflow(uow)
        self.store_messages(uow, make_message(workflow))
        self.store_files(uow, make_file())
        with uow() as u:
            with pytest.raises(InvalidInput):
                u.workflows.recent_documents(workflow.id, -1)
            with pytest.raises(InvalidInput):
                u.files.list("mandate-1", limit=-1)
            with pytest.raises(InvalidInput):
                u.workflows.list_workflows("mandate-1", limit=-1)
            assert len(u.workflows.recent_documents(workflow.id, 1)) == 1

    def test_document_with_longest_unicode_name_round_trips(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        workflow = self.store_workflow(uow)
        message = make_message(workflow)
        name = ("Résumé_季度報告 😀" * MAX_FILE_NAME_LENGTH)[:MAX_FILE_NAME_LENGTH]
        assert len(name) == MAX_FILE_NAME_LENGTH
        message = attrs.evolve(
            message,
            documents=(attrs.evolve(message.documents[0], file_name=name, file_size=2**40),),
        )
        self.store_messages(uow, message)
        with uow() as u:
            [doc] = u.workflows.recent_documents(workflow.id, 1)
        assert doc == message.documents[0]
        assert doc.file_name.encode("utf-8") == name.encode("utf-8")

    def test_documents_referring_to_a_file_are_counted_across_workflows(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        item = make_file()
        one, two = make_workflow(), make_workflow()
        with uow() as u:
            u.files.add(item)
            u.workflows.add_workflow(one)
            u.workflows.add_workflow(two)
            u.workflows.add_message(make_message(one.id, file_ids=[item.id, item.id]))
            u.workflows.add_message(make_message(two.id, file_ids=[item.id]))
            u.commit()
        with uow() as u:
            assert u.workflows.count_documents_for_file(item.id) == 3
            assert u.workflows.count_documents_for_file("no-such-file") == 0


class UnitOfWorkContract(_MetadataSuite):
    """:class:`~docbinder.ports.metadata.UnitOfWork`: one transaction over every repository."""

    def test_leaving_without_commit_rolls_back(self, uow: Callable[[], UnitOfWork]) -> None:
        item = make_file()
        workflow = make_workflow()
        with uow() as u:
            u.files.add(item)
            u.workflows.add_workflow(workflow)
            u.workflows.add_message(make_message(workflow))
        with uow() as u:
            assert u.files.get(item.id) is None
            assert u.workflows.get_workflow(workflow.id) is None
            assert u.workflows.recent_documents(workflow.id, 10) == []
            assert u.files.find_duplicates(SHA_A, "report.pdf", "user-1", Scope("mandate-1")) == []

    def test_commit_makes_changes_visible_to_later_units(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        item = make_file()
        workflow = make_workflow()
        with uow() as u:
            u.files.add(item)
            u.workflows.add_workflow(workflow)
            message = u.workflows.add_message(make_message(workflow))
            u.commit()
        with uow() as u:
            assert u.files.get(item.id) == item
            assert u.workflows.get_workflow(workflow.id) == workflow
            assert u.workflows.list_messages(workflow.id) == [message]

    def test_exception_in_block_rolls_back_and_propagates(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        item = make_file()

        class Boom(Exception):
            pass

        with pytest.raises(Boom), uow() as u:
            u.files.add(item)
            raise Boom
        with uow() as u:
            assert u.files.get(item.id) is None

    def test_explicit_rollback_discards_uncommitted_work(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        kept = make_file(file_name="kept.pdf")
        dropped = make_file(file_name="dropped.pdf")
        with uow() as u:
            u.files.add(kept)
            u.commit()
            u.files.add(dropped)
            u.files.update(attrs.evolve(kept, folder="changed"))
            u.files.delete(kept.id)
            u.rollback()
            assert u.files.get(dropped.id) is None
            assert u.files.get(kept.id) == kept
        with uow() as u:
            assert u.files.get(kept.id) == kept

    def test_work_after_commit_is_rolled_back_on_exit(self, uow: Callable[[], UnitOfWork]) -> None:
        workflow = make_workflow()
        with uow() as u:
            u.workflows.add_workflow(workflow)
            first = u.workflows.add_message(make_message(workflow))
            u.commit()
            u.workflows.add_message(make_message(workflow))
            u.workflows.update_workflow(attrs.evolve(workflow, status="stopped"))
        with uow() as u:
            assert u.workflows.list_messages(workflow.id) == [first]
            assert u.workflows.get_workflow(workflow.id) == workflow
            assert u.workflows.add_message(make_message(workflow)).sequence_nr == 2

    def test_unit_survives_conflicts_and_commits_the_rest(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        existing = make_file()
        workflow = make_workflow()
        self.store_files(uow, existing)
        before = make_file(file_name="before.pdf")
        after = make_file(file_name="after.pdf")
        with uow() as u:
            u.files.add(before)
            u.workflows.add_workflow(workflow)
            first = u.workflows.add_message(make_message(workflow, "lbl"))
            with pytest.raises(DuplicateFileItem):
                u.files.add(make_file())
            with pytest.raises(Conflict):
                u.files.add(make_file(id=before.id, file_name="x.pdf"))
            with pytest.raises(DuplicateLabel):
                u.workflows.add_message(make_message(workflow, "lbl"))
            with pytest.raises(Conflict):
                u.workflows.add_workflow(make_workflow(id=workflow.id))
            with pytest.raises(WorkflowNotFound):
                u.workflows.add_message(make_message(new_id("wf")))
            # retry inside the same unit: the duplicate is visible, other work goes on
            assert u.files.find_duplicates(SHA_A, "report.pdf", "user-1", Scope("mandate-1")) == [
                existing
            ]
            u.files.add(after)
            second = u.workflows.add_message(make_message(workflow, "lbl2"))
            u.commit()
        with uow() as u:
            assert u.files.get(before.id) == before
            assert u.files.get(after.id) == after
            assert u.workflows.list_messages(workflow.id) == [first, second]
            assert second.sequence_nr == 2


class VersionRepositoryContract(_MetadataSuite):
    """:class:`~docbinder.ports.metadata.VersionRepository` (versions role; flag :attr:`supports_versions`)."""

    def test_versions_number_a_series_and_go_with_their_file_item(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        self._needs_versions()
        series = VersionSeries(Scope("mandate-1"), "notes.txt", "app")
        other = VersionSeries(Scope("mandate-1"), "other.txt", "app")
        items = [make_file(file_name="notes.txt", sha256=f"{n:064x}") for n in range(4)]
        self.store_files(uow, *items)
        with uow() as u:
            u.versions.add_version(FileVersion(items[0].id, series, 0, user_metadata={"n": 0}))
            u.versions.add_version(FileVersion(items[1].id, series, 1, host_data={"kind": "text"}))
            with pytest.raises(VersionTaken):
                u.versions.add_version(FileVersion(items[2].id, series, 1))
            with pytest.raises(Conflict) as caught:
                u.versions.add_version(FileVersion(items[0].id, other, 0))
            assert not isinstance(caught.value, VersionTaken)
            u.versions.add_version(FileVersion(items[3].id, other, 0))
            u.commit()
        with uow() as u:
            assert u.versions.latest_version(series.key) == FileVersion(
                items[1].id, series, 1, host_data={"kind": "text"}
            )
            first = u.versions.get_version(series.key, 0)
            assert first is not None and first.user_metadata == {"n": 0}
            assert u.versions.get_version(series.key, 7) is None
            assert [v.file_id for v in u.versions.list_versions(series.key)] == [
                items[0].id,
                items[1].id,
            ]
            version = u.versions.version_of(items[1].id)
            assert version is not None and version.version == 1
            assert u.versions.version_of(items[2].id) is None
            assert u.versions.series_names(series.space_key) == ["notes.txt", "other.txt"]
            assert u.versions.latest_version(new_id("series")) is None
            assert u.versions.list_versions(new_id("series")) == []
            assert u.files.delete(items[1].id)
            u.commit()
        with uow() as u:
            latest = u.versions.latest_version(series.key)
            assert latest is not None and latest.file_id == items[0].id
            assert u.versions.version_of(items[1].id) is None

    def test_a_backend_without_versions_refuses_them_naming_the_setting(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        """A backend that declares no versions refuses each call, so no caller takes
        "no versions" for "this file has none"."""
        if self.supports_versions:
            pytest.skip("the backend keeps file versions (supports_versions = True)")
        item = make_file()
        self.store_files(uow, item)
        series = VersionSeries(Scope("mandate-1"), "notes.txt", "app")
        calls: list[Callable[[UnitOfWork], object]] = [
            lambda u: u.versions.add_version(FileVersion(item.id, series, 0)),
            lambda u: u.versions.latest_version(series.key),
            lambda u: u.versions.get_version(series.key, 0),
            lambda u: u.versions.list_versions(series.key),
            lambda u: u.versions.version_of(item.id),
            lambda u: u.versions.series_names(series.space_key),
        ]
        for call in calls:
            with uow() as u, pytest.raises(ConfigurationError):
                call(u)


class MaintenanceRepositoryContract(_MetadataSuite):
    """:class:`~docbinder.ports.metadata.MaintenanceRepository`: scans, marks and identities."""

    def test_iter_files_yields_every_item(self, uow: Callable[[], UnitOfWork]) -> None:
        items = [make_file(scope=Scope(f"mandate-{n}"), sha256=f"{n:064x}") for n in range(7)]
        self.store_files(uow, *items[:4])
        self.store_files(uow, *items[4:], deduplicate=False)
        with uow() as u:
            assert sorted(u.maintenance.iter_files(), key=lambda f: f.id) == sorted(
                items, key=lambda f: f.id
            )

    def test_iter_documents_yields_every_document(self, uow: Callable[[], UnitOfWork]) -> None:
        flows = [self.store_workflow(uow) for _ in range(2)]
        stored = self.store_messages(
            uow, make_message(flows[0], files=3), make_message(flows[1], files=2)
        )
        expected = sorted((d for m in stored for d in m.documents), key=lambda d: d.id)
        with uow() as u:
            assert sorted(u.maintenance.iter_documents(), key=lambda d: d.id) == expected

    def test_missing_blob_marks_keep_their_first_time_and_go_with_the_row(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        item = make_file()
        later = BASE_TIME + timedelta(hours=2)
        with uow() as u:
            u.files.add(item)
            assert u.maintenance.mark_missing(item.id, item.blob_key, BASE_TIME) == BASE_TIME
            u.commit()
        with uow() as u:
            assert u.maintenance.mark_missing(item.id, item.blob_key, later) == BASE_TIME
            assert u.maintenance.marks() == {item.id: (item.blob_key, BASE_TIME)}
            # A mark for another blob of the row replaces the old one.
            assert u.maintenance.mark_missing(item.id, "ne/new-key", later) == later
            u.commit()
        with uow() as u:
            assert u.maintenance.marks() == {item.id: ("ne/new-key", later)}
            u.maintenance.clear_mark(item.id)
            u.maintenance.clear_mark("no-such-file")
            u.commit()
        with uow() as u:
            assert u.maintenance.marks() == {}
            u.maintenance.mark_missing(item.id, item.blob_key, BASE_TIME)
            u.rollback()
        with uow() as u:
            assert u.maintenance.marks() == {}
            u.maintenance.mark_missing(item.id, item.blob_key, BASE_TIME)
            u.commit()
        with uow() as u:
            assert u.files.delete(item.id)
            u.commit()
        with uow() as u:
            assert u.maintenance.marks() == {}

    def test_the_store_identity_is_recorded_once_and_only_on_rows_without_one(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        legacy = make_file()
        other = make_file(blob_store="store-b", file_name="other.pdf")
        self.store_files(uow, legacy, other)
        with uow() as u:
            assert not u.maintenance.set_blob_store(legacy.id, "wrong/key", "store-a")
            assert u.maintenance.set_blob_store(legacy.id, legacy.blob_key, "store-a")
            assert not u.maintenance.set_blob_store(legacy.id, legacy.blob_key, "store-c")
            assert not u.maintenance.set_blob_store(other.id, other.blob_key, "store-a")
            u.commit()
        with uow() as u:
            assert u.files.get(legacy.id) == attrs.evolve(legacy, blob_store="store-a")
            assert u.files.get(other.id) == other

    def test_the_database_identity_is_made_once_and_only_when_asked(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        with uow() as u:
            assert u.maintenance.database_id() is None
            made = u.maintenance.database_id(create=True)
            assert made and u.maintenance.database_id(create=True) == made
            # left without commit: gone again
        with uow() as u:
            assert u.maintenance.database_id() is None
            made = u.maintenance.database_id(create=True)
            u.commit()
        with uow() as u:
            assert u.maintenance.database_id() == made
            assert u.maintenance.database_id(create=True) == made

    def test_the_database_claim_rotates_by_compare_and_set(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        first, second, third = "a1" * 16, "b2" * 16, "c3" * 16
        with uow() as u:
            assert u.maintenance.database_claims() == ()
            assert u.maintenance.rotate_database_claim(None, first)
            assert u.maintenance.database_claims() == (first,)
            # left without commit: gone again
        with uow() as u:
            assert u.maintenance.database_claims() == ()
            assert u.maintenance.rotate_database_claim(None, first)
            u.commit()
        with uow() as u:
            assert not u.maintenance.rotate_database_claim(None, second)  # a first claim exists
            assert not u.maintenance.rotate_database_claim(second, third)  # not the current one
            assert u.maintenance.database_claims() == (first,)
            assert u.maintenance.rotate_database_claim(first, second)
            u.commit()
        with uow() as u:
            assert u.maintenance.database_claims() == (second, first)
            assert u.maintenance.rotate_database_claim(second, third)
            u.commit()
        with uow() as u:
            # the replaced ones are kept: a store still holding one of them is this database's
            assert u.maintenance.database_claims() == (third, second, first)
            assert u.maintenance.database_id() is None  # claims are not the database identity
        tokens = [third]
        for n in range(CLAIM_TOKENS_KEPT + 3):
            with uow() as u:
                tokens.insert(0, f"{n:032x}")
                assert u.maintenance.rotate_database_claim(tokens[1], tokens[0])
                u.commit()
        with uow() as u:
            # at most CLAIM_TOKENS_KEPT, newest first: the oldest went
            assert u.maintenance.database_claims() == tuple(tokens[:CLAIM_TOKENS_KEPT])

    def test_store_locations_are_recorded_once_and_replaced_only_when_asked(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        store, other = (
            "4f1c2d7e-0000-4000-8000-000000000001",
            "4f1c2d7e-0000-4000-8000-000000000002",
        )
        here, there = "a" * 64, "b" * 64
        with uow() as u:
            assert u.maintenance.store_locations() == {}
            assert u.maintenance.record_store_location(store, here) == here
            # left without commit: gone again
        with uow() as u:
            assert u.maintenance.store_locations() == {}
            assert u.maintenance.record_store_location(store, here) == here
            u.commit()
        with uow() as u:
            # first use wins: a second writer gets the recorded location back to compare
            assert u.maintenance.record_store_location(store, there) == here
            assert u.maintenance.record_store_location(other, there) == there
            u.commit()
        with uow() as u:
            assert u.maintenance.store_locations() == {store: here, other: there}
            assert u.maintenance.record_store_location(store, there, replace=True) == there
            u.commit()
        with uow() as u:
            assert u.maintenance.store_locations() == {store: there, other: there}
            assert u.maintenance.database_id() is None  # locations are not the database identity
            # any identity fits: a long one is listed under its store_location_key
            long_id = "arn:aws:s3:::a-bucket-with-a-long-name/and/a/deep/prefix/" + "x" * 60
            assert u.maintenance.record_store_location(long_id, here) == here
            u.commit()
        with uow() as u:
            assert u.maintenance.store_locations()[store_location_key(long_id)] == here


class MetadataConcurrencyContract(_MetadataSuite):
    """Units of work in several threads at once (flag :attr:`supports_concurrency`)."""

    def test_concurrent_increments_are_never_lost(self, uow: Callable[[], UnitOfWork]) -> None:
        self._needs_concurrency()
        workflow = self.store_workflow(uow)
        outcomes = at_once(lambda _: self.advance(uow, workflow.id, CounterStep.next("action")))
        advanced = [c for c in outcomes if isinstance(c, WorkflowCounters)]
        assert sorted(c.action for c in advanced) == list(range(1, THREADS + 1)), outcomes
        assert self.stored_counters(uow, workflow.id) == WorkflowCounters(1, 0, THREADS)

    def test_concurrent_absolute_steps_end_at_the_highest(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        self._needs_concurrency()
        workflow = self.store_workflow(uow)

        def step(i: int) -> WorkflowCounters | CountersWouldGoBack:
            try:
                return self.advance(uow, workflow.id, CounterStep.to(task=i + 1))
            except CountersWouldGoBack as refused:
                return refused

        outcomes = at_once(step)
        kept = [o.task for o in outcomes if isinstance(o, WorkflowCounters)]
        refused = [o for o in outcomes if isinstance(o, CountersWouldGoBack)]
        assert len(kept) + len(refused) == THREADS, outcomes
        assert THREADS in kept
        assert self.stored_counters(uow, workflow.id) == WorkflowCounters(1, THREADS, 0)

    def test_concurrent_advances_and_messages_keep_the_counters_in_sequence_order(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        """Half the threads advance the task while half add messages built from a read first.

        Each adding unit reads the workflow before it adds (as an attach does);
        an advance committed in between must not leave the later-numbered
        message with older counters than an earlier-numbered one.
        """
        self._needs_concurrency()
        workflow = self.store_workflow(uow)
        rounds = 15

        def work(i: int) -> int:
            for n in range(rounds):
                if i % 2:
                    self.advance(uow, workflow.id, CounterStep.next("task"))
                    continue
                with uow() as u:
                    read = u.workflows.get_workflow(workflow.id)
                    assert read is not None
                    u.workflows.add_message(make_message(read, f"t{i}-{n}"))
                    u.commit()
            return i

        outcomes = at_once(work)
        assert outcomes == list(range(THREADS)), outcomes
        advances = rounds * (THREADS // 2)
        assert self.stored_counters(uow, workflow.id) == WorkflowCounters(1, advances, 0)
        with uow() as u:
            listed = u.workflows.list_messages(workflow.id)
        assert len(listed) == rounds * (THREADS - THREADS // 2)
        positions = [(m.sequence_nr, m.counters.as_tuple()) for m in listed]
        behind = [(a, b) for a, b in itertools.pairwise(positions) if b[1] < a[1]]
        assert behind == [], behind
        documents = [
            ((d.round_number, d.task_number, d.action_number), m)
            for m in listed
            for d in m.documents
        ]
        assert all(numbers == m.counters.as_tuple() for numbers, m in documents)

    def test_same_duplicate_key_one_row_and_the_rest_duplicates(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        self._needs_concurrency()
        items = [make_file() for _ in range(THREADS)]  # distinct ids, one duplicate key

        def add(i: int) -> str:
            with uow() as u:
                u.files.add(items[i])
                u.commit()
            return items[i].id

        outcomes = at_once(add)
        winners = [o for o in outcomes if isinstance(o, str)]
        assert len(winners) == 1, outcomes
        assert all(isinstance(o, DuplicateFileItem) for o in outcomes if o not in winners)
        with uow() as u:
            assert [f.id for f in u.maintenance.iter_files()] == winners

    def test_race_loser_finds_the_winner_in_the_same_unit(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        self._needs_concurrency()
        items = [make_file() for _ in range(THREADS)]

        def find_or_add(i: int) -> tuple[str, str]:
            item = items[i]
            with uow() as u:
                key = (item.sha256, item.file_name, item.created_by, item.scope)
                found = u.files.find_duplicates(*key)
                if found:
                    return "found", found[0].id
                try:
                    u.files.add(item)
                except DuplicateFileItem:
                    again = u.files.find_duplicates(*key)
                    assert len(again) == 1, "the winner must be visible to the loser's retry"
                    return "raced", again[0].id
                u.commit()
                return "added", item.id

        outcomes = at_once(find_or_add)
        assert all(isinstance(o, tuple) for o in outcomes), outcomes
        assert [o[0] for o in outcomes].count("added") == 1, outcomes  # type: ignore[index]
        assert len({o[1] for o in outcomes}) == 1, outcomes  # type: ignore[index]

    def test_same_label_one_message_and_the_rest_duplicate_labels(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        self._needs_concurrency()
        workflow = self.store_workflow(uow)
        messages = [make_message(workflow, "datasource:sharepoint") for _ in range(THREADS)]

        def add(i: int) -> ChatMessage:
            with uow() as u:
                stored = u.workflows.add_message(messages[i])
                u.commit()
            return stored

        outcomes = at_once(add)
        winners = [o for o in outcomes if isinstance(o, ChatMessage)]
        assert len(winners) == 1, outcomes
        assert all(isinstance(o, DuplicateLabel) for o in outcomes if o not in winners)
        assert winners[0].sequence_nr == 1
        with uow() as u:
            assert u.workflows.list_messages(workflow.id) == winners

    def test_distinct_labels_all_succeed_with_distinct_sequence_numbers(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        self._needs_concurrency()
        workflow = self.store_workflow(uow)

        def add(i: int) -> ChatMessage:
            with uow() as u:
                # a read first, as the bridge does, before the write
                assert u.workflows.get_workflow(workflow.id) is not None
                stored = u.workflows.add_message(
                    make_message(workflow, f"writeFile:{i}.txt", files=2)
                )
                u.commit()
            return stored

        outcomes = at_once(add)
        stored = [o for o in outcomes if isinstance(o, ChatMessage)]
        assert len(stored) == THREADS, outcomes
        numbers = sorted(m.sequence_nr for m in stored)
        assert numbers == list(range(1, THREADS + 1))
        with uow() as u:
            listed = u.workflows.list_messages(workflow.id)
            assert [m.sequence_nr for m in listed] == numbers
            assert len(u.workflows.recent_documents(workflow.id, 100)) == 2 * THREADS


class ProvenanceContract(_MetadataSuite):
    """A FileItem's :class:`~docbinder.domain.model.Provenance` round-trips on every backend (B9)."""

    def test_full_provenance_round_trips(self, uow: Callable[[], UnitOfWork]) -> None:
        parents = tuple(new_id("parent") for _ in range(MAX_PROVENANCE_PARENTS))
        item = make_file(
            provenance=Provenance(
                tool="create_chart",
                tool_call_id="call_7Qx9 Ü",
                args_sha256=arguments_sha256({"spec": {"kind": "bar"}}),
                run_id=new_id("run"),
                workflow_id=new_id("wf"),
                model="gpt-4.1-mini",
                message_id=new_id("msg"),
                parents=parents,
            )
        )
        self.store_files(uow, item)
        with uow() as u:
            loaded = u.files.get(item.id)
        assert loaded == item
        assert loaded is not None and loaded.provenance.parents == parents

    def test_a_harvested_files_sandbox_and_long_path_round_trip(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        tail = "/chart.png"
        path = ("/mnt/data/" + "/".join(["répertoire"] * 400))[: MAX_PROVENANCE_PATH - len(tail)]
        path += tail
        item = make_file(
            provenance=Provenance(
                tool="code_execution",
                tool_call_id="ci_1",
                sandbox_id="cntr_682d 沙盒",
                source_path=path,
            )
        )
        self.store_files(uow, item)
        with uow() as u:
            loaded = u.files.get(item.id)
        assert loaded == item
        assert loaded is not None and loaded.provenance.source_path == path
        assert len(path) == MAX_PROVENANCE_PATH

    def test_a_file_without_provenance_loads_with_none_declared(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        item = make_file()
        self.store_files(uow, item)
        with uow() as u:
            loaded = u.files.get(item.id)
        assert loaded is not None
        assert loaded.provenance == NO_PROVENANCE
        assert loaded.provenance.tool is None and not loaded.provenance.declared

    def test_update_keeps_or_replaces_provenance(self, uow: Callable[[], UnitOfWork]) -> None:
        item = make_file(provenance=Provenance(tool="write_file", run_id="run-1"))
        self.store_files(uow, item)
        changed = attrs.evolve(item, size=99)
        with uow() as u:
            u.files.update(changed)
            u.commit()
        with uow() as u:
            loaded = u.files.get(item.id)
        assert loaded is not None and loaded.provenance == item.provenance


class QuotaRepositoryContract(_MetadataSuite):
    """:class:`~docbinder.ports.metadata.QuotaRepository` and the usage the FileRepository keeps (B12)."""

    @staticmethod
    def set_quota(uow: Callable[[], UnitOfWork], quota: Quota) -> Quota:
        with uow() as u:
            stored = u.quotas.set_quota(quota)
            u.commit()
        return stored

    @staticmethod
    def quota(uow: Callable[[], UnitOfWork], scope: Scope) -> Quota:
        with uow() as u:
            found = u.quotas.get_quota(scope)
        assert found is not None
        return found

    @staticmethod
    def file_ids(uow: Callable[[], UnitOfWork], mandate: str) -> set[str]:
        with uow() as u:
            return {f.id for f in u.files.list(mandate)}

    def test_set_counts_the_files_already_stored(self, uow: Callable[[], UnitOfWork]) -> None:
        mandate = new_id("m")
        self.store_files(
            uow,
            make_file(scope=Scope(mandate), size=10),
            make_file(scope=Scope(mandate, "fi-1"), size=20, sha256="b" * 64),
            make_file(scope=Scope(new_id("other")), size=1000),
        )
        whole = self.set_quota(uow, Quota(Scope(mandate), max_bytes=1000))
        feature = self.set_quota(uow, Quota(Scope(mandate, "fi-1"), max_files=5))
        assert (whole.used_bytes, whole.used_files) == (30, 2)
        assert (feature.used_bytes, feature.used_files) == (20, 1)
        assert (whole.max_bytes, whole.max_files, whole.max_file_size) == (1000, None, None)
        with uow() as u:
            assert u.quotas.usage(Scope(mandate)) == (30, 2)
            assert u.quotas.usage(Scope(mandate, "fi-1")) == (20, 1)
            assert [q.scope for q in u.quotas.list_quotas(mandate)] == [
                Scope(mandate),
                Scope(mandate, "fi-1"),
            ]

    def test_set_again_replaces_the_limits(self, uow: Callable[[], UnitOfWork]) -> None:
        scope = Scope(new_id("m"))
        self.set_quota(uow, Quota(scope, max_bytes=10, max_files=2))
        again = self.set_quota(uow, Quota(scope, max_file_size=7))
        assert (again.max_bytes, again.max_files, again.max_file_size) == (None, None, 7)
        assert self.quota(uow, scope) == again

    def test_remove_drops_the_quota(self, uow: Callable[[], UnitOfWork]) -> None:
        scope = Scope(new_id("m"))
        self.set_quota(uow, Quota(scope, max_bytes=1))
        with uow() as u:
            assert u.quotas.remove_quota(scope) is True
            assert u.quotas.remove_quota(scope) is False
            u.commit()
        with uow() as u:
            assert u.quotas.get_quota(scope) is None
        # Without a quota nothing limits the scope.
        self.store_files(uow, make_file(scope=scope, size=10**9))

    def test_an_add_over_max_bytes_is_refused_and_keeps_nothing(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        scope = Scope(new_id("m"))
        self.set_quota(uow, Quota(scope, max_bytes=100))
        self.store_files(uow, make_file(scope=scope, size=60))
        refused = make_file(scope=scope, size=41, sha256="c" * 64)
        with uow() as u:
            with pytest.raises(QuotaExceeded) as caught:
                u.files.add(refused)
            u.commit()
        assert caught.value.quota == "max_bytes"
        assert (caught.value.limit, caught.value.used) == (100, 60)
        message = str(caught.value)
        assert "max-bytes" in message and "100" in message and "60" in message
        assert refused.id not in self.file_ids(uow, scope.mandate_id)
        quota = self.quota(uow, scope)
        assert (quota.used_bytes, quota.used_files) == (60, 1)
        # What is left still fits.
        self.store_files(uow, make_file(scope=scope, size=40, sha256="d" * 64))
        assert self.quota(uow, scope).used_bytes == 100

    def test_max_files_and_max_file_size_are_enforced(self, uow: Callable[[], UnitOfWork]) -> None:
        scope = Scope(new_id("m"))
        self.set_quota(uow, Quota(scope, max_files=1, max_file_size=10))
        with uow() as u, pytest.raises(QuotaExceeded) as too_large:
            u.files.add(make_file(scope=scope, size=11))
        assert too_large.value.quota == "max_file_size"
        assert too_large.value.http_status == 413
        self.store_files(uow, make_file(scope=scope, size=10))
        with uow() as u, pytest.raises(QuotaExceeded) as too_many:
            u.files.add(make_file(scope=scope, size=1, sha256="e" * 64))
        assert too_many.value.quota == "max_files"
        assert too_many.value.http_status == 409

    def test_a_file_may_not_grow_past_max_file_size(self, uow: Callable[[], UnitOfWork]) -> None:
        """An append or a replace makes the one file bigger: ``max_file_size`` holds for it too."""
        scope = Scope(new_id("m"))
        self.set_quota(uow, Quota(scope, max_file_size=10))
        item = make_file(scope=scope, size=9)
        self.store_files(uow, item)
        with uow() as u, pytest.raises(QuotaExceeded) as grown:
            u.files.update(attrs.evolve(item, size=11))
        assert grown.value.quota == "max_file_size" and grown.value.used == 11
        assert "would have 11 bytes" in str(grown.value)
        with uow() as u:
            u.files.update(attrs.evolve(item, size=10))
            u.commit()
        with uow() as u:
            u.files.update(attrs.evolve(item, size=3))  # shrinking is never refused
            u.commit()
        assert self.quota(uow, scope).used_bytes == 3

    def test_a_mandate_quota_counts_its_feature_instances_and_not_the_reverse(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        mandate = new_id("m")
        self.set_quota(uow, Quota(Scope(mandate), max_bytes=100))
        self.set_quota(uow, Quota(Scope(mandate, "fi-a"), max_bytes=30))
        self.store_files(uow, make_file(scope=Scope(mandate, "fi-a"), size=30))
        self.store_files(uow, make_file(scope=Scope(mandate, "fi-b"), size=50, sha256="b" * 64))
        with uow() as u:
            with pytest.raises(QuotaExceeded):  # fi-a is full
                u.files.add(make_file(scope=Scope(mandate, "fi-a"), size=1, sha256="c" * 64))
            with pytest.raises(QuotaExceeded):  # the mandate as a whole is
                u.files.add(make_file(scope=Scope(mandate), size=21, sha256="d" * 64))
        assert self.quota(uow, Scope(mandate)).used_bytes == 80
        assert self.quota(uow, Scope(mandate, "fi-a")).used_bytes == 30

    def test_delete_and_update_keep_the_usage(self, uow: Callable[[], UnitOfWork]) -> None:
        scope = Scope(new_id("m"), "fi")
        self.set_quota(uow, Quota(scope, max_bytes=100))
        item = make_file(scope=scope, size=40)
        self.store_files(uow, item)
        grown = attrs.evolve(item, size=70)
        with uow() as u:
            u.files.update(grown)
            u.commit()
        assert self.quota(uow, scope).used_bytes == 70
        too_big = attrs.evolve(item, size=101)
        with uow() as u:
            with pytest.raises(QuotaExceeded):
                u.files.update(too_big)
            u.commit()
        with uow() as u:
            assert u.files.get(item.id) == grown
            assert u.files.delete(item.id) is True
            u.commit()
        quota = self.quota(uow, scope)
        assert (quota.used_bytes, quota.used_files) == (0, 0)

    def test_a_rolled_back_add_gives_its_usage_back(self, uow: Callable[[], UnitOfWork]) -> None:
        scope = Scope(new_id("m"))
        self.set_quota(uow, Quota(scope, max_files=1))
        with uow() as u:
            u.files.add(make_file(scope=scope))
            # no commit
        assert self.quota(uow, scope).used_files == 0
        self.store_files(uow, make_file(scope=scope))
        assert self.quota(uow, scope).used_files == 1

    def test_a_refused_duplicate_counts_nothing(self, uow: Callable[[], UnitOfWork]) -> None:
        scope = Scope(new_id("m"))
        self.set_quota(uow, Quota(scope, max_bytes=100))
        item = make_file(scope=scope, size=50)
        self.store_files(uow, item)
        with uow() as u:
            with pytest.raises(DuplicateFileItem):
                u.files.add(make_file(scope=scope, size=50))
            u.commit()
        quota = self.quota(uow, scope)
        assert (quota.used_bytes, quota.used_files) == (50, 1)

    def test_concurrent_adds_never_overshoot(self, uow: Callable[[], UnitOfWork]) -> None:
        self._needs_concurrency()
        scope = Scope(new_id("m"))
        allowed = THREADS // 2
        self.set_quota(uow, Quota(scope, max_bytes=10 * allowed))

        def add(i: int) -> str:
            item = make_file(scope=scope, size=10, sha256=f"{i:064x}")
            with uow() as u:
                u.files.add(item)
                u.commit()
            return item.id

        results = at_once(add)
        stored = [r for r in results if isinstance(r, str)]
        refused = [r for r in results if isinstance(r, QuotaExceeded)]
        assert len(stored) == allowed, results
        assert len(refused) == THREADS - allowed, results
        assert self.file_ids(uow, scope.mandate_id) == set(stored)
        quota = self.quota(uow, scope)
        assert (quota.used_bytes, quota.used_files) == (10 * allowed, allowed)


class AuditRepositoryContract(_MetadataSuite):
    """:class:`~docbinder.ports.metadata.AuditRepository`: one append-only hash chain (B11)."""

    @staticmethod
    def audit_event(n: int = 0, **overrides: object) -> AuditEvent:
        fields: dict[str, object] = {
            "id": new_id("ev"),
            "at": BASE_TIME + timedelta(seconds=n),
            "action": AuditAction.STORE,
            "principal": "user-1",
            "mandate_id": "mandate-1",
            "file_id": new_id("file"),
            "detail": {"size": n, "name": "Résumé 📊"},
        }
        fields.update(overrides)
        return AuditEvent(**fields)  # type: ignore[arg-type]

    def append(self, uow: Callable[[], UnitOfWork], *events: AuditEvent) -> list[AuditEvent]:
        with uow() as u:
            stored = u.audit.append(events)
            u.commit()
        return stored

    def test_appended_events_form_a_chain_that_verifies(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        first = self.append(uow, self.audit_event(0), self.audit_event(1))
        second = self.append(uow, self.audit_event(2, action=AuditAction.READ_CONTENT))
        assert [e.seq for e in first + second] == [1, 2, 3]
        assert first[0].prev_hash == GENESIS_HASH
        assert first[1].prev_hash == first[0].hash and second[0].prev_hash == first[1].hash
        with uow() as u:
            stored = u.audit.events()
            head = u.audit.head()
        assert stored == first + second  # a save -> load -> equal round trip
        assert head == (3, second[0].hash)
        assert verify_chain(stored, head=head) == (3, None)

    def test_a_rolled_back_append_leaves_no_event_and_no_gap(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        self.append(uow, self.audit_event(0))
        with uow() as u:
            u.audit.append([self.audit_event(1)])
            # no commit: the write it recorded did not happen either
        [after] = self.append(uow, self.audit_event(2))
        with uow() as u:
            assert [e.seq for e in u.audit.events()] == [1, 2]
            assert verify_chain(u.audit.events(), head=u.audit.head())[1] is None
        assert after.seq == 2

    def test_events_filter_by_file_user_time_and_position(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        file_id = new_id("file")
        events = [
            self.audit_event(0, file_id=file_id),
            self.audit_event(10, principal="user-2"),
            self.audit_event(20, file_id=file_id, principal="user-2"),
        ]
        self.append(uow, *events)
        with uow() as u:
            assert [e.seq for e in u.audit.events(file_id=file_id)] == [1, 3]
            assert [e.seq for e in u.audit.events(principal="user-2")] == [2, 3]
            assert [e.seq for e in u.audit.events(since=BASE_TIME + timedelta(seconds=10))] == [
                2,
                3,
            ]
            assert [e.seq for e in u.audit.events(after_seq=1, limit=1)] == [2]

    def test_prune_keeps_the_rest_verifiable_from_its_anchor(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        stored = self.append(uow, *(self.audit_event(n) for n in range(5)))
        with uow() as u:
            removed = u.audit.prune(BASE_TIME + timedelta(seconds=2))
            u.commit()
        assert removed == 2
        with uow() as u:
            kept = u.audit.events()
            anchor, head = u.audit.anchor(), u.audit.head()
        assert [e.seq for e in kept] == [3, 4, 5]
        assert anchor == (2, stored[1].hash)
        assert verify_chain(kept, anchor=anchor, head=head) == (3, None)
        # without the anchor the cut shows
        assert verify_chain(kept, head=head)[1] is not None
        [next_event] = self.append(uow, self.audit_event(9))
        assert next_event.seq == 6 and next_event.prev_hash == stored[4].hash

    def test_concurrent_appends_never_fork_the_chain(self, uow: Callable[[], UnitOfWork]) -> None:
        self._needs_concurrency()

        def add(i: int) -> None:
            self.append(uow, self.audit_event(i), self.audit_event(i))

        results = at_once(add)
        assert [r for r in results if isinstance(r, Exception)] == []
        with uow() as u:
            stored = u.audit.events()
            head = u.audit.head()
        assert [e.seq for e in stored] == list(range(1, 2 * THREADS + 1))
        assert verify_chain(stored, head=head) == (2 * THREADS, None)


class RetentionRepositoryContract(_MetadataSuite):
    """:class:`~docbinder.ports.metadata.RetentionRepository`: policies and legal holds (B5)."""

    def test_policies_round_trip_and_replace(self, uow: Callable[[], UnitOfWork]) -> None:
        mandate = new_id("m")
        whole = RetentionPolicy(Scope(mandate), timedelta(days=30))
        feature = RetentionPolicy(
            Scope(mandate, "fi"), timedelta(hours=12), "last_read", set_at=BASE_TIME
        )
        with uow() as u:
            u.retention.set_policy(feature)
            u.retention.set_policy(whole)
            u.commit()
        with uow() as u:
            assert u.retention.policies(mandate) == [whole, feature]
            assert u.retention.policies(mandate)[1].set_at == BASE_TIME
            u.retention.set_policy(RetentionPolicy(Scope(mandate), timedelta(seconds=2)))
            later = BASE_TIME + timedelta(days=1, microseconds=7)
            u.retention.set_policy(attrs.evolve(feature, set_at=later))
            u.commit()
        with uow() as u:
            assert u.retention.policies(mandate)[0].max_age == timedelta(seconds=2)
            assert u.retention.policies(mandate)[1].set_at == later  # replaced with the policy
            assert u.retention.remove_policy(Scope(mandate, "fi")) is True
            assert u.retention.remove_policy(Scope(mandate, "fi")) is False
            u.commit()
        with uow() as u:
            assert [p.scope for p in u.retention.policies(mandate)] == [Scope(mandate)]
            assert u.retention.policies(new_id("other")) == []

    def test_holds_are_placed_found_and_released(self, uow: Callable[[], UnitOfWork]) -> None:
        mandate, file_id, workflow_id = new_id("m"), new_id("file"), new_id("wf")
        with uow() as u:
            u.retention.place_hold(LegalHold("file", file_id, mandate, "case 7", BASE_TIME))
            u.retention.place_hold(LegalHold("workflow", workflow_id, mandate, "", BASE_TIME))
            u.commit()
        with uow() as u:
            assert u.retention.held([file_id, new_id("x")], [workflow_id]) == {
                file_id,
                workflow_id,
            }
            # a file id is no workflow id: kinds do not mix
            assert u.retention.held([workflow_id], [file_id]) == set()
            holds = u.retention.holds(mandate)
            assert [(h.kind.value, h.target_id, h.reason) for h in holds] == [
                ("file", file_id, "case 7"),
                ("workflow", workflow_id, ""),
            ]
            assert holds[0].placed_at == BASE_TIME
            # another mandate's release leaves the hold: its id answers like an unknown one
            assert u.retention.release_hold(HoldKind.FILE, file_id, new_id("other")) is False
            assert u.retention.release_hold(HoldKind.FILE, file_id, mandate) is True
            assert u.retention.release_hold(HoldKind.FILE, file_id, mandate) is False
            u.commit()
        with uow() as u:
            assert u.retention.held([file_id], [workflow_id]) == {workflow_id}

    def test_last_reads_come_from_the_audit_log(self, uow: Callable[[], UnitOfWork]) -> None:
        read, unread, linked = new_id("file"), new_id("file"), new_id("file")
        events = [
            AuditEvent(new_id("e"), BASE_TIME, "store", file_id=read),
            AuditEvent(new_id("e"), BASE_TIME + timedelta(hours=1), "read_content", file_id=read),
            AuditEvent(new_id("e"), BASE_TIME + timedelta(hours=2), "read_bytes", file_id=read),
            AuditEvent(new_id("e"), BASE_TIME + timedelta(hours=3), "attach", file_id=read),
            # a read that did not happen is no read (ADR 0127)
            AuditEvent(
                new_id("e"),
                BASE_TIME + timedelta(hours=4),
                "read_content",
                outcome="blob_missing",
                file_id=read,
            ),
            AuditEvent(new_id("e"), BASE_TIME, "store", file_id=unread),
            AuditEvent(new_id("e"), BASE_TIME, "read_content", outcome="not_read", file_id=unread),
            # a redeemed signed link hands the bytes out: a read; a refused one is not
            AuditEvent(new_id("e"), BASE_TIME + timedelta(hours=5), "link_redeem", file_id=linked),
            AuditEvent(
                new_id("e"),
                BASE_TIME + timedelta(hours=6),
                "link_redeem",
                outcome="expired",
                file_id=linked,
            ),
        ]
        with uow() as u:
            u.audit.append(events)
            u.commit()
        with uow() as u:
            assert u.retention.last_reads([read, unread, linked]) == {
                read: BASE_TIME + timedelta(hours=2),
                linked: BASE_TIME + timedelta(hours=5),
            }

    def test_expired_files_are_the_old_files_a_policy_governs(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        mandate = new_id("m")
        day = timedelta(days=1)

        def file(age_days: int, feature: str | None = None) -> FileItem:
            return make_file(
                scope=Scope(mandate, feature),
                created_at=BASE_TIME - age_days * day,
                sha256=f"{age_days:02d}{feature or ''}".encode().hex().ljust(64, "0")[:64],
            )

        old, young, older = file(10), file(1), file(20)
        old_fi, young_fi = file(10, "fi"), file(3, "fi")
        old_other = file(10, "other")
        elsewhere = make_file(scope=Scope(new_id("m")), created_at=BASE_TIME - 30 * day)
        self.store_files(uow, old, young, older, old_fi, young_fi, old_other, elsewhere)
        whole = RetentionPolicy(Scope(mandate), 5 * day)
        feature = RetentionPolicy(Scope(mandate, "fi"), 2 * day)
        with uow() as u:
            u.retention.set_policy(whole)
            u.retention.set_policy(feature)
            u.commit()
        with uow() as u:
            assert mandate in u.retention.policy_mandates()
            assert elsewhere.scope.mandate_id not in u.retention.policy_mandates()
            got = u.retention.expired_files(whole, BASE_TIME - whole.max_age, other_features=["fi"])
            assert {f.id for f in got} == {older.id, old.id, old_other.id}
            assert got[0] == older  # whole FileItems, oldest first
            got_fi = u.retention.expired_files(feature, BASE_TIME - feature.max_age)
            assert [f.id for f in got_fi] == [old_fi.id, young_fi.id]
            everything = u.retention.expired_files(whole, BASE_TIME - whole.max_age)
            assert {f.id for f in everything} == {older.id, old.id, old_other.id, old_fi.id}

    def test_expired_files_from_the_last_read_skip_files_read_since(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        mandate = new_id("m")
        day = timedelta(days=1)
        read_lately, read_long_ago, never_read, linked_lately = (
            make_file(scope=Scope(mandate), created_at=BASE_TIME - 10 * day, sha256=c * 64)
            for c in "abcd"
        )
        self.store_files(uow, read_lately, read_long_ago, never_read, linked_lately)
        policy = RetentionPolicy(Scope(mandate), 5 * day, "last_read")
        with uow() as u:
            u.retention.set_policy(policy)
            u.audit.append(
                [
                    AuditEvent(new_id("e"), BASE_TIME - day, "read_bytes", file_id=read_lately.id),
                    AuditEvent(new_id("e"), BASE_TIME - day, "attach", file_id=never_read.id),
                    AuditEvent(
                        new_id("e"), BASE_TIME - day, "link_redeem", file_id=linked_lately.id
                    ),
                    AuditEvent(
                        new_id("e"), BASE_TIME - 8 * day, "read_content", file_id=read_long_ago.id
                    ),
                    AuditEvent(
                        new_id("e"),
                        BASE_TIME - day,
                        "read_content",
                        outcome="not_read",
                        file_id=read_long_ago.id,
                    ),
                ]
            )
            u.commit()
        with uow() as u:
            got = u.retention.expired_files(policy, BASE_TIME - policy.max_age)
        assert {f.id for f in got} == {read_long_ago.id, never_read.id}


def _copy_key(scope: Scope | None = None, **changes: str) -> ProviderCopyKey:
    fields = {"sha256": "ab" * 32, "provider": "openai", "account": "main"} | changes
    return ProviderCopyKey(scope=scope or Scope(new_id("m")), **fields)


class ProviderCopyRepositoryContract(_MetadataSuite):
    """:class:`~docbinder.ports.metadata.ProviderCopyRepository`: copies at model providers (B22)."""

    def test_a_key_is_claimed_once_and_round_trips(self, uow: Callable[[], UnitOfWork]) -> None:
        key = _copy_key(Scope(new_id("m"), "fi"))
        first = ProviderCopy(key, "uploading", "claim-1", BASE_TIME, size=42)
        with uow() as u:
            assert u.provider_copies.claim(first) is None
            u.commit()
        ready = attrs.evolve(
            first,
            state="ready",
            file_id="file-abc",
            uri="https://example.invalid/v1beta/files/abc",
            uploaded_at=BASE_TIME + timedelta(seconds=1),
            expires_at=BASE_TIME + timedelta(days=2),
        )
        with uow() as u:
            # a second claim of the key loses and sees the row as it is; the unit goes on
            assert u.provider_copies.claim(attrs.evolve(first, claim="claim-2")) == first
            assert u.provider_copies.replace("claim-1", ready) is True
            u.commit()
        with uow() as u:
            assert u.provider_copies.get(key) == ready

    def test_the_upload_token_and_the_lost_state_round_trip(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        key = _copy_key(Scope(new_id("m")))
        token = "3f2a9c1e-7b4d-4e2a-9c1e-7b4d4e2a9c1e"
        first = ProviderCopy(key, "uploading", "claim-1", BASE_TIME, upload_token=token)
        lost = attrs.evolve(first, state="lost", claim="claim-2")
        with uow() as u:
            assert u.provider_copies.claim(first) is None
            assert u.provider_copies.replace("claim-1", lost) is True
            u.commit()
        with uow() as u:
            assert u.provider_copies.get(key) == lost
            assert u.provider_copies.of_content(key.scope, key.sha256) == [lost]

    def test_every_lookup_is_tenant_scoped(self, uow: Callable[[], UnitOfWork]) -> None:
        mandate = new_id("m")
        key = _copy_key(Scope(mandate))
        copy = ProviderCopy(key, "ready", "c", BASE_TIME, file_id="file-a")
        with uow() as u:
            u.provider_copies.claim(copy)
            u.commit()
        others = [
            attrs.evolve(key, scope=Scope(new_id("m"))),  # another mandate
            attrs.evolve(key, scope=Scope(mandate, "fi")),  # a feature instance of it
            attrs.evolve(key, account="other"),
            attrs.evolve(key, provider="anthropic"),
            attrs.evolve(key, sha256="cd" * 32),
        ]
        with uow() as u:
            assert u.provider_copies.get(key) == copy
            assert [u.provider_copies.get(other) for other in others] == [None] * len(others)
            assert u.provider_copies.of_content(Scope(mandate, "fi"), key.sha256) == []
            assert u.provider_copies.of_content(Scope(mandate), key.sha256) == [copy]
            for other in others:  # each one is a key of its own
                assert u.provider_copies.claim(attrs.evolve(copy, key=other)) is None
            u.commit()
        with uow() as u:
            assert u.provider_copies.get(key) == copy

    def test_changes_are_compare_and_sets_on_the_claim(self, uow: Callable[[], UnitOfWork]) -> None:
        key = _copy_key()
        copy = ProviderCopy(key, "uploading", "mine", BASE_TIME)
        with uow() as u:
            u.provider_copies.claim(copy)
            u.commit()
        with uow() as u:
            taken = attrs.evolve(copy, claim="theirs", claimed_at=BASE_TIME + timedelta(minutes=5))
            assert u.provider_copies.replace("stale", taken) is False
            assert u.provider_copies.replace("mine", taken) is True
            assert u.provider_copies.remove(key, "mine") is False
            u.commit()
        with uow() as u:
            assert u.provider_copies.get(key) == taken
            assert u.provider_copies.remove(key, "theirs") is True
            u.commit()
        with uow() as u:
            assert u.provider_copies.get(key) is None
            assert u.provider_copies.remove(key, "theirs") is False

    def test_only_the_holder_of_an_uploading_claim_renews_it(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        key = _copy_key()
        copy = ProviderCopy(key, "uploading", "mine", BASE_TIME, size=7, upload_token="tok-1")
        later = BASE_TIME + timedelta(seconds=5)
        with uow() as u:
            u.provider_copies.claim(copy)
            u.commit()
        with uow() as u:
            assert u.provider_copies.renew(key, "theirs", later) is False
            assert u.provider_copies.renew(key, "mine", later) is True
            u.commit()
        with uow() as u:  # the time moved, nothing else: the claim stays the holder's
            assert u.provider_copies.get(key) == attrs.evolve(copy, claimed_at=later)
        with uow() as u:  # an uncommitted renewal is rolled back
            assert u.provider_copies.renew(key, "mine", later + timedelta(seconds=5)) is True
        with uow() as u:
            got = u.provider_copies.get(key)
            assert got is not None and got.claimed_at == later
        for state in ("ready", "lost", "deleting"):  # only an upload in progress is renewed
            moved = attrs.evolve(copy, state=state, claim=f"c-{state}", claimed_at=later)
            with uow() as u:
                assert u.provider_copies.replace(u.provider_copies.get(key).claim, moved)  # type: ignore[union-attr]
                assert u.provider_copies.renew(key, f"c-{state}", later + timedelta(1)) is False
                u.commit()
            with uow() as u:
                assert u.provider_copies.get(key) == moved
        with uow() as u:
            assert u.provider_copies.renew(_copy_key(), "mine", later) is False  # no such row

    def test_an_uncommitted_claim_is_rolled_back(self, uow: Callable[[], UnitOfWork]) -> None:
        key = _copy_key()
        with uow() as u:
            assert u.provider_copies.claim(ProviderCopy(key, "uploading", "c", BASE_TIME)) is None
        with uow() as u:
            assert u.provider_copies.get(key) is None

    def test_deleting_lists_copies_to_delete_oldest_first(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        scope = Scope(new_id("m"))
        rows = [
            ProviderCopy(
                _copy_key(scope, account=f"a{i}"),
                "deleting" if i != 1 else "ready",
                f"c{i}",
                BASE_TIME - timedelta(minutes=i),
                file_id=f"file-{i}",
            )
            for i in range(4)
        ]
        with uow() as u:
            for row in rows:
                u.provider_copies.claim(row)
            u.commit()
        with uow() as u:
            mine = [c for c in u.provider_copies.deleting(1000) if c.key.scope == scope]
            assert [c.key.account for c in mine] == ["a3", "a2", "a0"]
            assert all(c.state is CopyState.DELETING for c in mine)
            assert len(u.provider_copies.deleting(1)) == 1

    def test_concurrent_claims_of_one_key_have_one_winner(
        self, uow: Callable[[], UnitOfWork]
    ) -> None:
        self._needs_concurrency()
        key = _copy_key()

        def claim(i: int) -> str:
            with uow() as u:
                there = u.provider_copies.claim(ProviderCopy(key, "uploading", f"c{i}", BASE_TIME))
                u.commit()
            return f"c{i}" if there is None else f"lost to {there.claim}"

        outcomes = at_once(claim)
        winners = [o for o in outcomes if isinstance(o, str) and not o.startswith("lost")]
        assert len(winners) == 1, outcomes
        assert all(o == f"lost to {winners[0]}" for o in outcomes if o not in winners), outcomes


class MetadataContract(
    FileRepositoryContract,
    ProvenanceContract,
    QuotaRepositoryContract,
    AuditRepositoryContract,
    RetentionRepositoryContract,
    ProviderCopyRepositoryContract,
    WorkflowRepositoryContract,
    UnitOfWorkContract,
    VersionRepositoryContract,
    MaintenanceRepositoryContract,
    MetadataConcurrencyContract,
):
    """Behaviour every metadata backend must show; subclasses provide ``make_uow_factory``.

    The cases of every role (:class:`FileRepositoryContract`,
    :class:`WorkflowRepositoryContract`, :class:`UnitOfWorkContract`,
    :class:`VersionRepositoryContract`, :class:`MaintenanceRepositoryContract`,
    :class:`MetadataConcurrencyContract`). Capability flags (class attributes,
    override in the subclass): :attr:`supports_concurrency`, :attr:`supports_versions`.
    """
