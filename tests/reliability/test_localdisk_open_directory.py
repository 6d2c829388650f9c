"""Local-disk ``put`` through an open directory (ADR 0034) under races and failing system calls."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from docbinder.adapters.localdisk.blobs import COMMITTED_XATTR, LocalDiskBlobStore
from docbinder.domain.errors import StorageError

pytestmark = pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="POSIX only")


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir())


def test_a_symlink_that_vanishes_while_it_is_resolved_fails_the_put_as_a_storage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # realpath lstat-s a link, then readlink-s it: a link removed in between (another
    # process swapping the shard directory) makes readlink raise FileNotFoundError.
    root = tmp_path / "root"
    (root / "real").mkdir(parents=True)
    (root / "ab").symlink_to("real")
    store = LocalDiskBlobStore(root)
    real_readlink = os.readlink

    def vanished(path: str | os.PathLike[str], *args: object, **kwargs: object) -> str:
        if os.fspath(path).endswith(f"{os.sep}ab"):
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", os.fspath(path))
        return real_readlink(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "readlink", vanished)
    with pytest.raises(StorageError):
        store.put("ab/cdef", [b"data"])
    with pytest.raises(StorageError):
        store.is_committed("ab/cdef")
    monkeypatch.undo()
    assert _files(root) == []


@pytest.mark.parametrize("key", ["ab/cdef", "a/b/cdef"])
@pytest.mark.parametrize("fault", ["EIO", "interrupt"])
def test_a_directory_close_that_fails_closes_each_descriptor_once_and_leaks_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str, fault: str
) -> None:
    # close(2) frees the descriptor even when it reports an error, and an interrupt
    # arrives after it returned: closing the same number again could close a file
    # another thread just opened, and here turned the interrupt into EBADF.
    root = tmp_path / "root"
    root.mkdir()
    (root / "in").mkdir()
    (root / "ab").symlink_to("in")  # the walk closes the root, then the link's parent
    store = LocalDiskBlobStore(root)
    real_close = os.close

    def make_fault() -> BaseException:
        return KeyboardInterrupt() if fault == "interrupt" else OSError(errno.EIO, "EIO")

    for fail_at in range(1, 12):
        calls = [0]
        twice: list[int] = []

        def closing(
            fd: int, fail_at: int = fail_at, calls: list[int] = calls, twice: list[int] = twice
        ) -> None:
            calls[0] += 1
            try:
                real_close(fd)
            except OSError as exc:
                if exc.errno == errno.EBADF:
                    twice.append(fd)
                raise
            if calls[0] == fail_at:
                raise make_fault()

        before = _open_descriptors()
        monkeypatch.setattr(os, "close", closing)
        outcome: BaseException | None = None
        try:
            store.put(key, [b"data"])
        except (StorageError, KeyboardInterrupt) as exc:
            outcome = exc
        finally:
            monkeypatch.setattr(os, "close", real_close)
        assert twice == [], (fail_at, outcome)
        assert _open_descriptors() == before, (fail_at, outcome)
        assert not [f for f in _files(root) if ".tmp-" in f]
        if calls[0] < fail_at:
            break


def test_a_put_whose_open_directory_is_pruned_by_a_delete_walks_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A delete prunes directories left empty; one a put has open (here root/a, just
    # made) may go before the put makes its subdirectory in it (mkdirat: ENOENT).
    root = tmp_path / "root"
    root.mkdir()
    store = LocalDiskBlobStore(root)
    real_mkdir = os.mkdir
    pruned: list[str] = []

    def mkdir(path: str, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        if path == "b" and not pruned:
            pruned.append(path)
            os.rmdir(root / "a")  # the concurrent delete's pruning
        real_mkdir(path, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "mkdir", mkdir)
    assert store.put("a/b/cdef", [b"data"]) == 4
    monkeypatch.undo()
    assert pruned == ["b"]
    assert (root / "a" / "b" / "cdef").read_bytes() == b"data"
    assert _files(root) == ["a/b/cdef"]


def test_a_shard_directory_swapped_for_a_symlink_after_its_check_gets_no_record_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The shard is swapped for a link to elsewhere right after mark_committed opened it:
    # the blob is opened relative to that descriptor, so the record lands on the blob
    # the store wrote (now under "moved"), never on the file outside.
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "cdef").write_bytes(b"not the store's")
    store = LocalDiskBlobStore(root)
    store.put("ab/cdef", [b"data"])  # mark_committed opens the blob by name
    real_open = os.open
    swapped: list[str] = []

    def open_then_swap(
        path: str | os.PathLike[str], flags: int, *args: object, **kw: object
    ) -> int:
        fd = real_open(path, flags, *args, **kw)  # type: ignore[arg-type]
        if os.fspath(path) == os.fspath(root / "ab") and not swapped:
            os.rename(root / "ab", root / "moved")
            os.symlink(outside, root / "ab")
            swapped.append("ab")
        return fd

    monkeypatch.setattr(os, "open", open_then_swap)
    recorded = store.mark_committed("ab/cdef")
    monkeypatch.undo()
    assert swapped == ["ab"]
    assert COMMITTED_XATTR not in os.listxattr(outside / "cdef")
    assert recorded and COMMITTED_XATTR in os.listxattr(root / "moved" / "cdef")


def test_a_shard_that_is_a_symlink_out_of_the_root_gets_no_record(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "cdef").write_bytes(b"not the store's")
    store = LocalDiskBlobStore(root)
    store.put("cd/0000", [b"data"])  # makes the root
    os.symlink(outside, root / "ab")
    with pytest.raises(StorageError):
        store.mark_committed("ab/cdef")
    assert COMMITTED_XATTR not in os.listxattr(outside / "cdef")
