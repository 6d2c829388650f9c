"""Contract of file versions (feature row B1) over a whole binder, run on every metadata backend.

A concrete class provides the ``binder`` fixture (a :class:`DocBinder` over
the backend under test).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from docbinder.application import DocBinder
from docbinder.domain.errors import AccessDenied, InvalidInput
from docbinder.domain.model import Principal

ALICE = Principal("alice", "m1", "app1")
BOB = Principal("bob", "m1", "app1")
OTHER_APP = Principal("alice", "m1", "app2")
VIEWER = Principal("vera", "m1", "app1", roles=("viewer",))


class VersionsContract:
    """Numbering, metadata, reads, listing, deletion and isolation of versions."""

    def test_versions_are_numbered_from_zero_in_save_order(self, binder: DocBinder) -> None:
        v = binder.versions
        numbers = [
            v.save(ALICE, "notes.txt", f"rev {i}".encode(), mime_type="text/plain").number
            for i in range(3)
        ]
        assert numbers == [0, 1, 2]
        assert [s.number for s in v.list(ALICE, "notes.txt")] == [0, 1, 2]
        latest = v.latest(ALICE, "notes.txt")
        assert latest is not None and latest.number == 2
        assert v.read(ALICE, latest) == b"rev 2"
        first = v.get(ALICE, "notes.txt", 0)
        assert first is not None and v.read(ALICE, first) == b"rev 0"
        assert first.item.mime_type == "text/plain"
        assert first.item.created_at <= latest.item.created_at

    def test_identical_bytes_give_two_versions_and_two_file_items(self, binder: DocBinder) -> None:
        a = binder.versions.save(ALICE, "same.bin", b"x" * 10)
        b = binder.versions.save(ALICE, "same.bin", b"x" * 10)
        assert (a.number, b.number) == (0, 1)
        assert a.item.id != b.item.id
        assert a.item.sha256 == b.item.sha256

    def test_user_metadata_is_kept_as_a_json_object(self, binder: DocBinder) -> None:
        meta = {"author": "alice", "n": 3, "nested": {"ok": True}, "list": [1, "2"]}
        stored = binder.versions.save(ALICE, "m.txt", b"1", user_metadata=meta)
        meta["author"] = "changed"
        got = binder.versions.get(ALICE, "m.txt", 0)
        assert got is not None
        assert got.version.user_metadata == {
            "author": "alice",
            "n": 3,
            "nested": {"ok": True},
            "list": [1, "2"],
        }
        assert stored.version.user_metadata["author"] == "alice"

    def test_metadata_that_is_no_json_object_is_refused(self, binder: DocBinder) -> None:
        with pytest.raises(InvalidInput):
            binder.versions.save(ALICE, "m.txt", b"1", user_metadata={"x": object()})
        with pytest.raises(InvalidInput):
            binder.versions.save(ALICE, "m.txt", b"1", user_metadata={"x": "y" * 70_000})
        assert binder.versions.list(ALICE, "m.txt") == []

    def test_a_refused_file_name_keeps_no_blob(self, binder: DocBinder) -> None:
        binder.versions.save(ALICE, "kept.txt", b"kept")
        before = sorted(binder.blobs.keys())
        with pytest.raises(InvalidInput):
            binder.versions.save(ALICE, "n.txt", b"1", file_name="bad\x00name")
        assert sorted(binder.blobs.keys()) == before
        assert binder.versions.list(ALICE, "n.txt") == []

    def test_absent_versions_read_as_none(self, binder: DocBinder) -> None:
        assert binder.versions.latest(ALICE, "nothing.txt") is None
        binder.versions.save(ALICE, "one.txt", b"1")
        assert binder.versions.get(ALICE, "one.txt", 1) is None
        assert binder.versions.get(ALICE, "one.txt", -1) is None
        assert binder.versions.list(ALICE, "nothing.txt") == []

    def test_namespaces_and_scopes_keep_series_apart(self, binder: DocBinder) -> None:
        v = binder.versions
        v.save(ALICE, "r.txt", b"default")
        v.save(ALICE, "r.txt", b"ns", namespace="session-1")
        v.save(OTHER_APP, "r.txt", b"other app")
        assert [s.number for s in v.list(ALICE, "r.txt")] == [0]
        assert [s.number for s in v.list(ALICE, "r.txt", "session-1")] == [0]
        assert [s.number for s in v.list(OTHER_APP, "r.txt")] == [0]
        latest = v.latest(OTHER_APP, "r.txt")
        assert latest is not None and v.read(OTHER_APP, latest) == b"other app"
        assert v.names(ALICE) == ["r.txt"]
        assert v.names(ALICE, "session-1") == ["r.txt"]
        assert v.names(ALICE, "nobody") == []

    def test_names_list_every_series_of_a_namespace_once(self, binder: DocBinder) -> None:
        for name in ("b.txt", "a.txt", "b.txt", "dir/c.txt"):
            binder.versions.save(ALICE, name, b"1", namespace="ns")
        assert binder.versions.names(ALICE, "ns") == ["a.txt", "b.txt", "dir/c.txt"]

    def test_unreadable_versions_count_as_absent(self, binder: DocBinder) -> None:
        binder.versions.save(ALICE, "mine.txt", b"secret")
        # Another feature instance may never read app1's files.
        assert binder.versions.latest(Principal("alice", "m1", "app1-x"), "mine.txt") is None
        # Another mandate sees nothing either (its series key differs, and access would refuse).
        assert binder.versions.names(Principal("alice", "m2", "app1")) == []

    def test_delete_removes_every_version_and_numbering_restarts(self, binder: DocBinder) -> None:
        v = binder.versions
        saved = [v.save(ALICE, "d.txt", f"{i}".encode()) for i in range(3)]
        assert v.delete(ALICE, "d.txt") == 3
        assert v.list(ALICE, "d.txt") == []
        assert v.names(ALICE) == []
        for s in saved:
            assert not binder.blobs.exists(s.item.blob_key)
        assert v.save(ALICE, "d.txt", b"again").number == 0
        assert v.delete(ALICE, "never.txt") == 0

    def test_delete_needs_the_delete_right(self, binder: DocBinder) -> None:
        binder.versions.save(ALICE, "keep.txt", b"1")
        with pytest.raises(AccessDenied):
            binder.versions.delete(VIEWER, "keep.txt")
        assert len(binder.versions.list(ALICE, "keep.txt")) == 1

    def test_deleting_a_version_file_item_removes_its_version(self, binder: DocBinder) -> None:
        v = binder.versions
        v.save(ALICE, "x.txt", b"0")
        one = v.save(ALICE, "x.txt", b"1")
        binder.delete_file(ALICE, one.item.id)
        assert [s.number for s in v.list(ALICE, "x.txt")] == [0]
        latest = v.latest(ALICE, "x.txt")
        assert latest is not None and latest.number == 0

    def test_versioned_saves_leave_the_duplicate_check_alone(self, binder: DocBinder) -> None:
        version = binder.versions.save(ALICE, "dup.txt", b"same")
        stored = binder.store_file(ALICE, "dup.txt", b"same")
        assert not stored.duplicate and stored.item.id != version.item.id
        again = binder.store_file(ALICE, "dup.txt", b"same")
        assert again.duplicate and again.item.id == stored.item.id

    def test_concurrent_saves_get_distinct_gapless_numbers(self, binder: DocBinder) -> None:
        workers = 8
        barrier = threading.Barrier(workers)

        def save(i: int) -> int:
            barrier.wait()
            return binder.versions.save(ALICE, "race.txt", f"writer {i}".encode()).number

        with ThreadPoolExecutor(workers) as pool:
            numbers = list(pool.map(save, range(workers)))
        assert sorted(numbers) == list(range(workers))
        listed = binder.versions.list(ALICE, "race.txt")
        assert [s.number for s in listed] == list(range(workers))
        contents = {binder.versions.read(ALICE, s) for s in listed}
        assert contents == {f"writer {i}".encode() for i in range(workers)}
