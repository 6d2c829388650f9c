"""Local-disk blob store: layout, atomic writes, fault translation, temp-file cleanup (SPEC C13)."""

from __future__ import annotations

import errno
import os
import shutil
import stat as stat_mod
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import docbinder.adapters.localdisk.blobs as localdisk
from docbinder.adapters.localdisk import LocalDiskBlobStore
from docbinder.adapters.localdisk.durable import TEMP_NAME
from docbinder.domain.errors import BlobMissing, InvalidInput, StorageError
from docbinder.ports.blobs import BlobOrigin, compact_blob_origin, read_origin
from docbinder.testing.blob_suite import HOSTILE_KEYS, Boom, Generated, failing, pattern

MiB = 1 << 20


def tree(path: Path) -> dict[str, bytes | None]:
    """Every entry below ``path``: file contents, ``None`` for directories."""
    found: dict[str, bytes | None] = {}
    for entry in sorted(path.rglob("*")):
        rel = entry.relative_to(path).as_posix()
        found[rel] = None if entry.is_dir() else entry.read_bytes()
    return found


def temp_files(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.name.startswith(localdisk.TEMP_PREFIX)]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def store(root: Path) -> LocalDiskBlobStore:
    return LocalDiskBlobStore(root)


# -- layout and keys ----------------------------------------------------------


def test_key_maps_to_a_file_under_root(store: LocalDiskBlobStore, root: Path) -> None:
    store.put("ab/abcdef", [b"payload"])
    assert (root / "ab" / "abcdef").read_bytes() == b"payload"
    assert tree(root) == {"ab": None, "ab/abcdef": b"payload"}


def test_url_is_the_absolute_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = LocalDiskBlobStore("relative/root")
    assert store.url == (tmp_path / "relative" / "root").resolve().as_uri()
    assert store.url.startswith("file:///")
    assert store.root.is_absolute()


def test_from_url(tmp_path: Path) -> None:
    target = tmp_path / "with space"
    store = LocalDiskBlobStore.from_url(target.as_uri())
    assert store.root == target.resolve()
    assert LocalDiskBlobStore.from_url(f"file://localhost{tmp_path}").root == tmp_path.resolve()


@pytest.mark.parametrize(
    "url", ["s3://bucket", "file://otherhost/x", "file:///x?y=1", "file:///x#f", "file://", "/x"]
)
def test_from_url_rejects_other_urls(url: str) -> None:
    with pytest.raises(InvalidInput):
        LocalDiskBlobStore.from_url(url)


@pytest.mark.parametrize("key", [*HOSTILE_KEYS, "a\n"], ids=repr)
def test_hostile_keys_write_nothing_anywhere(tmp_path: Path, key: object) -> None:
    root = tmp_path / "deep" / "store"
    store = LocalDiskBlobStore(root)
    store.put("ok", [b"fine"])
    before = tree(tmp_path)
    with pytest.raises(InvalidInput):
        store.put(key, [b"evil"])  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        store.delete(key)  # type: ignore[arg-type]
    assert tree(tmp_path) == before
    assert not Path("/abs.txt").exists()


def test_symlink_out_of_the_root_is_refused(
    store: LocalDiskBlobStore, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"secret")
    root.mkdir()
    (root / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(StorageError, match="outside"):
        store.put("link/new", [b"evil"])
    with pytest.raises(StorageError, match="outside"):
        store.open("link/secret")
    with pytest.raises(StorageError, match="outside"):
        store.delete("link/secret")
    assert sorted(p.name for p in outside.iterdir()) == ["secret"]
    assert (outside / "secret").read_bytes() == b"secret"
    assert list(store.keys()) == []  # symlinks are not followed when listing


def test_symlinked_root_is_fine(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    store = LocalDiskBlobStore(tmp_path / "alias")
    store.put("a/b", [b"x"])
    assert (real / "a" / "b").read_bytes() == b"x"
    assert list(store.keys()) == ["a/b"]


def test_symlinks_out_of_the_root_at_any_depth_are_refused_for_every_write(
    store: LocalDiskBlobStore, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "ab123").write_bytes(b"theirs")
    (root / "a" / "b").mkdir(parents=True)
    (root / "ab").symlink_to(outside, target_is_directory=True)  # docbinder's shard depth
    (root / "a" / "b" / "link").symlink_to(outside, target_is_directory=True)
    for key in ("ab/ab123", "ab/new", "a/b/link/new", "a/b/link/x/y"):
        with pytest.raises(StorageError, match="outside"):
            store.put(key, [b"evil"])
    with pytest.raises(StorageError, match="outside"):
        store.mark_committed("ab/ab123")
    assert sorted(p.name for p in outside.iterdir()) == ["ab123"]
    assert (outside / "ab123").read_bytes() == b"theirs"
    if hasattr(os, "listxattr"):
        assert os.listxattr(outside / "ab123") == []
    assert temp_files(root) == []


def test_symlinks_that_stay_inside_the_root_are_followed(
    store: LocalDiskBlobStore, root: Path
) -> None:
    (root / "real" / "deep").mkdir(parents=True)
    (root / "ab").symlink_to(root / "real", target_is_directory=True)
    (root / "real" / "deep" / "up").symlink_to(root / "real", target_is_directory=True)
    store.put("ab/abc", [b"one"])
    store.put("ab/deep/up/new/x", [b"two"])
    assert (root / "real" / "abc").read_bytes() == b"one"
    assert (root / "real" / "new" / "x").read_bytes() == b"two"
    assert b"".join(store.open("ab/abc")) == b"one"
    store.mark_committed("ab/abc")
    assert store.is_committed("ab/abc") or not hasattr(os, "setxattr")


def test_a_symlink_at_the_key_itself_is_replaced_not_written_through(
    store: LocalDiskBlobStore, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "target"
    outside.write_bytes(b"theirs")
    (root / "ab").mkdir(parents=True)
    (root / "ab" / "abc").symlink_to(outside)
    store.put("ab/abc", [b"ours"])
    assert outside.read_bytes() == b"theirs"
    assert not (root / "ab" / "abc").is_symlink()
    assert (root / "ab" / "abc").read_bytes() == b"ours"


def test_a_blob_on_the_directory_path_is_a_storage_error_and_leaves_nothing(
    store: LocalDiskBlobStore, root: Path
) -> None:
    store.put("ab/file", [b"x"])
    for key in ("ab/file/child", "ab/file/deeper/child"):
        with pytest.raises(StorageError, match="both a blob and the directory"):
            store.put(key, [b"y"])
    assert tree(root) == {"ab": None, "ab/file": b"x"}


def test_put_closes_every_descriptor_it_opens(store: LocalDiskBlobStore, root: Path) -> None:
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to count descriptors")
    store.put("ab/file", [b"x"])
    before = len(os.listdir("/proc/self/fd"))
    store.put("ab/second", [b"x"])
    store.put("cd/e/f/g", [b"x"])
    assert len(os.listdir("/proc/self/fd")) == before
    with pytest.raises(StorageError):
        store.put("ab/file/child", [b"y"])
    with pytest.raises(Boom):
        store.put("ab/failed", failing(b"partial", Boom()))
    store.mark_committed("ab/second")  # recorded or not (no xattrs here), it keeps nothing open
    assert len(os.listdir("/proc/self/fd")) == before


def test_keys_skip_temp_hidden_and_foreign_files(store: LocalDiskBlobStore, root: Path) -> None:
    store.put("ab/blob", [b"x"])
    (root / "ab" / ".tmp-0123456789abcdef0123456789abcdef.part").write_bytes(b"partial")
    (root / ".DS_Store").write_bytes(b"")
    (root / "name with space").write_bytes(b"")
    (root / "ab" / "link").symlink_to(root / "ab" / "blob")
    assert list(store.keys()) == ["ab/blob"]


def test_missing_root_has_no_keys_and_is_created_by_put(
    store: LocalDiskBlobStore, root: Path
) -> None:
    assert list(store.keys()) == []
    assert not store.exists("x")
    store.delete("x")
    assert not root.exists()
    store.put("a/b/c", [b"x"])
    assert (root / "a" / "b" / "c").is_file()


def test_directory_is_not_a_blob(store: LocalDiskBlobStore) -> None:
    store.put("dir/child", [b"x"])
    assert not store.exists("dir")
    with pytest.raises(BlobMissing):
        store.open("dir")
    with pytest.raises(BlobMissing):
        store.stat("dir")
    store.delete("dir")
    assert store.exists("dir/child")
    with pytest.raises(StorageError, match="directory"):
        store.put("dir", [b"y"])
    assert temp_files(store.root) == []


def test_delete_prunes_empty_directories_but_not_root(
    store: LocalDiskBlobStore, root: Path
) -> None:
    store.put("a/b/c", [b"1"])
    store.put("a/d", [b"2"])
    store.delete("a/b/c")
    assert not (root / "a" / "b").exists()
    assert (root / "a").is_dir()
    store.delete("a/d")
    assert root.is_dir()
    assert list(root.iterdir()) == []


# -- atomic writes ---------------------------------------------------------------


def test_temp_file_lives_next_to_the_target_and_is_gone_after(
    store: LocalDiskBlobStore, root: Path
) -> None:
    seen: list[tuple[list[Path], bool]] = []

    def chunks() -> Iterator[bytes]:
        yield b"first"
        seen.append((temp_files(root), (root / "ab" / "target").exists()))
        yield b"second"

    store.put("ab/target", chunks())
    [(temps, target_visible)] = seen
    assert len(temps) == 1
    assert temps[0].parent == root / "ab"
    assert TEMP_NAME.match(temps[0].name)
    assert not target_visible
    assert temp_files(root) == []
    assert (root / "ab" / "target").read_bytes() == b"firstsecond"


def test_old_blob_stays_readable_while_a_replacement_is_written(
    store: LocalDiskBlobStore,
) -> None:
    store.put("k", [b"old"])
    during: list[bytes] = []

    def chunks() -> Iterator[bytes]:
        yield b"new-part-1"
        during.append(b"".join(store.open("k")))
        yield b"new-part-2"

    store.put("k", chunks())
    assert during == [b"old"]
    assert b"".join(store.open("k")) == b"new-part-1new-part-2"


@pytest.mark.parametrize("error", [Boom("half way"), KeyboardInterrupt()], ids=repr)
def test_failing_input_half_way_leaves_no_temp_file_and_no_blob(
    store: LocalDiskBlobStore, root: Path, error: BaseException
) -> None:
    with pytest.raises(type(error)) as caught:
        store.put("ab/half", failing(pattern(3 * MiB), error))
    assert caught.value is error
    assert temp_files(root) == []
    assert not (root / "ab" / "half").exists()
    assert list(store.keys()) == []


def test_fsyncs_file_and_directory(
    store: LocalDiskBlobStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.put("ab/first", [b"creates the directory"])
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to name file descriptors")
    monkeypatch.setattr(os, "fsync", recording_fsync)
    store.put("ab/second", [b"data"])
    assert len(synced) == 2
    assert Path(synced[0]).name.startswith(localdisk.TEMP_PREFIX)
    assert synced[1] == str(root / "ab")


def test_new_directories_are_fsynced_in_their_parents(
    store: LocalDiskBlobStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root.mkdir()
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to name file descriptors")
    monkeypatch.setattr(os, "fsync", recording_fsync)
    store.put("a/b/c", [b"x"])
    assert str(root) in synced
    assert str(root / "a") in synced
    assert str(root / "a" / "b") in synced


def test_put_streams_with_bounded_memory(store: LocalDiskBlobStore) -> None:
    source = Generated(64 * MiB, chunk=MiB)
    tracemalloc.start()
    try:
        store.put("big", source)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert source.produced == 64 * MiB
    assert peak < 8 * MiB, f"put held {peak} bytes at once for a 64 MiB stream"


def test_open_streams_with_bounded_memory(store: LocalDiskBlobStore) -> None:
    store.put("big", Generated(32 * MiB, chunk=MiB))
    tracemalloc.start()
    try:
        total = sum(len(chunk) for chunk in store.open("big", MiB))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == 32 * MiB
    assert peak < 8 * MiB


def test_small_chunks_are_gathered_into_fewer_writes(
    store: LocalDiskBlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real_write = os.write

    def counting_write(fd: int, data: bytes) -> int:
        calls.append(len(data))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", counting_write)
    data = pattern(200_000)
    store.put("tiny", (data[i : i + 10] for i in range(0, len(data), 10)))
    assert len(calls) <= 4
    assert b"".join(store.open("tiny")) == data


def test_short_writes_are_completed(
    store: LocalDiskBlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = os.write

    def short_write(fd: int, data: bytes) -> int:
        return real_write(fd, bytes(data)[:1000])

    monkeypatch.setattr(os, "write", short_write)
    data = pattern(300_000)
    assert store.put("short", [data]) == len(data)
    monkeypatch.undo()
    assert b"".join(store.open("short")) == data


def test_killed_writer_leaves_only_a_temp_file_that_gc_finds(root: Path) -> None:
    script = (
        "import os, sys\n"
        "from docbinder.adapters.localdisk import LocalDiskBlobStore\n"
        "def chunks():\n"
        "    yield b'x' * 1000\n"
        "    os._exit(9)\n"
        f"LocalDiskBlobStore({str(root)!r}).put('ab/killed', chunks())\n"
    )
    result = subprocess.run([sys.executable, "-c", script], check=False, timeout=60)
    assert result.returncode == 9
    store = LocalDiskBlobStore(root)
    assert list(store.keys()) == []
    assert not store.exists("ab/killed")
    leftovers = temp_files(root)
    assert len(leftovers) == 1
    assert store.stale_temp_files(older_than_seconds=3600) == []
    assert store.stale_temp_files(older_than_seconds=0) == leftovers
    assert store.remove_stale_temp_files(older_than_seconds=0) == leftovers
    assert temp_files(root) == []


# -- stale temp files -------------------------------------------------------------


def test_stale_temp_files_by_age(store: LocalDiskBlobStore, root: Path) -> None:
    store.put("ab/blob", [b"x"])
    old = root / "ab" / ".tmp-00000000000000000000000000000000.part"
    fresh = root / ".tmp-11111111111111111111111111111111.part"
    lookalike = root / "ab" / ".tmp-notours.part"
    for path in (old, fresh, lookalike):
        path.write_bytes(b"partial")
    two_hours_ago = time.time() - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))
    os.utime(lookalike, (two_hours_ago, two_hours_ago))
    assert store.stale_temp_files(older_than_seconds=3600) == [old]
    assert store.remove_stale_temp_files(older_than_seconds=3600) == [old]
    assert not old.exists()
    assert fresh.exists()
    assert lookalike.exists()
    assert store.remove_stale_temp_files(older_than_seconds=3600) == []
    assert list(store.keys()) == ["ab/blob"]


def test_stale_temp_files_of_missing_root(store: LocalDiskBlobStore) -> None:
    assert store.stale_temp_files(0) == []


# -- fault translation ------------------------------------------------------------


def _fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


def test_enospc_on_write_is_a_storage_error_and_leaves_nothing(
    store: LocalDiskBlobStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to tell the store's writes from others")
    real_write = os.write
    written = 0

    def full_disk(fd: int, data: bytes) -> int:
        nonlocal written
        if localdisk.TEMP_PREFIX in _fd_path(fd):
            if written >= MiB:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            written += len(data)
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full_disk)
    with pytest.raises(StorageError) as caught:
        store.put("ab/full", Generated(4 * MiB, chunk=256 * 1024))
    assert caught.value.errno == errno.ENOSPC
    assert isinstance(caught.value.__cause__, OSError)
    assert "ENOSPC" in str(caught.value)
    assert temp_files(root) == []
    assert not store.exists("ab/full")


def test_enospc_on_fsync_is_a_storage_error_and_leaves_nothing(
    store: LocalDiskBlobStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(StorageError) as caught:
        store.put("full", [b"data"])
    assert caught.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert temp_files(root) == []
    assert not store.exists("full")


def test_failing_rename_is_a_storage_error_and_leaves_nothing(
    store: LocalDiskBlobStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.put("k", [b"old"])

    def failing_replace(src: object, dst: object, **dir_fds: int) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(StorageError) as caught:
        store.put("k", [b"new"])
    assert caught.value.errno == errno.EIO
    monkeypatch.undo()
    assert temp_files(root) == []
    assert b"".join(store.open("k")) == b"old"


def test_unwritable_directory_is_a_storage_error_simulated(
    store: LocalDiskBlobStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root.mkdir()
    real_open = os.open

    def read_only(path: object, flags: int, *args: int, **kwargs: object) -> int:
        if flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(StorageError) as caught:
        store.put("blob", [b"data"])
    assert caught.value.errno == errno.EACCES
    assert not isinstance(caught.value, PermissionError)
    assert str(root) in str(caught.value)
    assert list(root.iterdir()) == []


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_unwritable_directory_is_a_storage_error_for_real(
    store: LocalDiskBlobStore, root: Path
) -> None:
    root.mkdir()
    root.chmod(stat_mod.S_IRUSR | stat_mod.S_IXUSR)
    try:
        probe = root / "probe"
        try:
            probe.write_bytes(b"")
        except PermissionError:
            pass
        else:
            probe.unlink()
            pytest.skip("permissions are not enforced for this user (root)")
        with pytest.raises(StorageError) as caught:
            store.put("blob", [b"data"])
        assert caught.value.errno == errno.EACCES
    finally:
        root.chmod(stat_mod.S_IRWXU)
    assert list(root.iterdir()) == []


def test_read_fault_is_a_storage_error(
    store: LocalDiskBlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.put("r", [b"data"])
    chunks = store.open("r")

    def failing_read(fd: int, size: int) -> bytes:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "read", failing_read)
    with pytest.raises(StorageError) as caught:
        next(chunks)
    assert caught.value.errno == errno.EIO
    assert list(chunks) == []  # closed after the fault


def test_open_fault_other_than_missing_is_a_storage_error(
    store: LocalDiskBlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.put("r", [b"data"])
    real_open = os.open

    def denied(path: object, flags: int, *args: int, **kwargs: object) -> int:
        if str(path).endswith("/r"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(StorageError) as caught:
        store.open("r")
    assert caught.value.errno == errno.EACCES


def test_stat_fault_other_than_missing_is_a_storage_error(
    store: LocalDiskBlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def denied(path: object, *args: object, **kwargs: object) -> os.stat_result:
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(os, "stat", denied)
    with pytest.raises(StorageError):
        store.stat("x")
    with pytest.raises(StorageError):
        store.exists("x")


def test_delete_fault_is_a_storage_error(
    store: LocalDiskBlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.put("x", [b"data"])

    def busy(path: object, *args: object, **kwargs: object) -> None:
        raise OSError(errno.EBUSY, "Device or resource busy")

    monkeypatch.setattr(os, "unlink", busy)
    with pytest.raises(StorageError) as caught:
        store.delete("x")
    assert caught.value.errno == errno.EBUSY


def test_listing_fault_is_a_storage_error(
    store: LocalDiskBlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.put("x", [b"data"])

    def denied(path: object) -> object:
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(os, "scandir", denied)
    with pytest.raises(StorageError):
        list(store.keys())


def test_missing_file_after_open_check_is_blob_missing(store: LocalDiskBlobStore) -> None:
    with pytest.raises(BlobMissing) as caught:
        store.open("ab/none")
    assert isinstance(caught.value.__cause__, FileNotFoundError)


def test_invalid_chunk_size(store: LocalDiskBlobStore) -> None:
    store.put("c", [b"x"])
    with pytest.raises(InvalidInput):
        store.open("c", 0)


def test_open_iterator_closes_its_file(store: LocalDiskBlobStore) -> None:
    store.put("c", [b"abc"])
    chunks = store.open("c", 1)
    assert next(chunks) == b"a"
    chunks.close()
    assert list(chunks) == []
    with store.open("c") as whole:
        assert b"".join(whole) == b"abc"


def test_check_writable(store: LocalDiskBlobStore, monkeypatch: pytest.MonkeyPatch) -> None:
    store.check_writable()
    assert list(store.keys()) == []

    def denied(path: object, flags: int, *args: int, **kwargs: object) -> int:
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(StorageError):
        store.check_writable()


# -- location (ADR 0030) ----------------------------------------------------------------


def test_the_location_survives_mv_and_not_a_copy_or_a_hard_link_snapshot(tmp_path: Path) -> None:
    """``mv`` keeps the marker directory; ``cp -a`` and ``cp -al`` (a hard-link snapshot,
    as rsnapshot or ``rsync --link-dest`` make: every file shared, directories new) do not."""
    first = tmp_path / "blobs"
    store = LocalDiskBlobStore(first)
    assert store.location() is None and not first.exists()  # nothing made without create
    store.put("ab/abc", [b"x"])
    identity = store.identity(create=True)
    made = store.location(create=True)
    assert made is not None and (first / localdisk.LOCATION_DIR).is_dir()

    moved = tmp_path / "moved"
    os.rename(first, moved)
    assert LocalDiskBlobStore(moved).location() == made
    # what container entry points do at every start: ownership and modes, not a move
    subprocess.run(["chmod", "-R", "u+rwX", str(moved)], check=True)
    subprocess.run(["chown", "-R", f"{os.getuid()}:{os.getgid()}", str(moved)], check=True)
    os.utime(moved / localdisk.LOCATION_DIR)
    assert LocalDiskBlobStore(moved).location() == made
    for flags, name in (("-a", "copied"), ("-al", "linked")):
        subprocess.run(["cp", flags, str(moved), str(tmp_path / name)], check=True)
        copy = LocalDiskBlobStore(tmp_path / name)
        assert copy.identity() == identity
        assert copy.location() not in (None, made)
    # the hard-link snapshot shares the identity file itself, not the marker directory
    assert (tmp_path / "linked" / localdisk.IDENTITY_FILE).stat().st_ino == (
        moved / localdisk.IDENTITY_FILE
    ).stat().st_ino


def test_identity_and_registrations_are_files_made_by_the_durable_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The identity and a registration are whole files under hidden names, never keys;
    a registration already there is not written again."""
    root = tmp_path / "store"
    store = LocalDiskBlobStore(root)
    identity = store.identity(create=True)
    assert (root / localdisk.IDENTITY_FILE).read_text(encoding="ascii") == f"{identity}\n"
    assert LocalDiskBlobStore(root).identity(create=True) == identity
    store.register_database("db-1")
    registration = root / localdisk.DATABASES_DIR / "db-1"
    assert registration.read_bytes() == b""
    made = registration.stat().st_ino
    store.register_database("db-1")
    LocalDiskBlobStore(root).register_database("db-1")
    assert registration.stat().st_ino == made  # there already: not written again
    assert list(store.keys()) == [] and temp_files(root) == []


def test_a_directory_in_place_of_the_identity_file_is_no_identity_and_gets_none(
    tmp_path: Path,
) -> None:
    root = tmp_path / "store"
    (root / localdisk.IDENTITY_FILE).mkdir(parents=True)
    store = LocalDiskBlobStore(root)
    assert store.identity() is None
    with pytest.raises(StorageError, match="cannot be read back"):
        store.identity(create=True)
    assert (root / localdisk.IDENTITY_FILE).is_dir() and temp_files(root) == []


def test_a_location_marker_that_is_not_a_directory_is_a_storage_error(tmp_path: Path) -> None:
    store = LocalDiskBlobStore(tmp_path)
    (tmp_path / localdisk.LOCATION_DIR).write_bytes(b"planted")
    with pytest.raises(StorageError, match="not a directory"):
        store.location()


# -- commit records on files the writing process may not write (ADR 0031) ------------------

NOBODY = 65534


def _as_user(uid: int, action: Callable[[], object]) -> object:
    """``action()`` in a child process running as ``uid`` (root's privileges dropped);
    its result, or the ``repr`` of what it raised, comes back as text."""
    readable, writable = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.close(readable)
            os.setgid(uid)
            os.setuid(uid)
            try:
                answer = repr(action())
            except BaseException as exc:
                answer = f"raised {exc!r}"
            os.write(writable, answer.encode())
            code = 0
        finally:
            os._exit(code)
    os.close(writable)
    with os.fdopen(readable, "rb") as pipe:
        answer = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, answer
    return answer


@pytest.fixture
def shared_root() -> Iterator[Path]:
    """A store root another user can reach (pytest's own temp folders are private to root)."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="docbinder-owner-"))
    base.chmod(0o755)
    try:
        yield base / "store"
    finally:
        shutil.rmtree(base)


def _read_only_blob(root: Path, owner: int) -> tuple[LocalDiskBlobStore, Path]:
    store = LocalDiskBlobStore(root)
    store.put("ab/ab1", [b"kept"])
    path = root / "ab" / "ab1"
    for directory in (root, root / "ab"):
        directory.chmod(0o755)
    os.chown(path, owner, owner)
    path.chmod(0o444)
    return store, path


def _plain_setxattr(path: Path) -> str:
    try:
        os.setxattr(path, localdisk.COMMITTED_XATTR, b"v1")
    except OSError as exc:
        return errno.errorcode[exc.errno or 0]
    return "set"


def test_the_owner_of_a_read_only_blob_records_its_commit(shared_root: Path) -> None:
    """A user attribute needs write permission (xattr(7)); a blob file its owner made
    read-only still gets the record, and keeps its mode and modification time."""
    owner = NOBODY if os.geteuid() == 0 else os.geteuid()
    store, path = _read_only_blob(shared_root, owner)
    before = os.stat(path)

    def record() -> bool:
        return LocalDiskBlobStore(shared_root).mark_committed("ab/ab1")

    if os.geteuid() == 0:  # root skips the permission check: act as the owner would
        assert _as_user(owner, lambda: _plain_setxattr(path)) == "'EACCES'"
        assert _as_user(owner, record) == "True"
    else:
        assert _plain_setxattr(path) == "EACCES"
        assert record() is True
    after = os.stat(path)
    assert store.is_committed("ab/ab1")
    assert stat_mod.S_IMODE(after.st_mode) == 0o444 and after.st_mtime_ns == before.st_mtime_ns
    assert b"".join(store.open("ab/ab1")) == b"kept"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs a file of another user")
def test_a_read_only_blob_of_another_user_is_left_unrecorded_and_said_once(
    shared_root: Path,
) -> None:
    _store, _path = _read_only_blob(shared_root, 0)  # root's file, read-only for others

    def record_twice() -> tuple[bool, bool, int, bool]:
        import logging

        seen: list[str] = []

        class _Keep(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                if record.levelno >= logging.WARNING:
                    seen.append(record.getMessage())

        logger = logging.getLogger("docbinder.adapters.blobstore_base")
        logger.disabled = False  # another test's logging configuration may have disabled it
        logger.setLevel(logging.WARNING)
        logger.addHandler(_Keep())
        store = LocalDiskBlobStore(shared_root)
        answers = (store.mark_committed("ab/ab1"), store.mark_committed("ab/ab1"))
        return (*answers, len(seen), "unconfirmed" in seen[0])

    assert _as_user(NOBODY, record_twice) == "(False, False, 1, True)"
    assert not LocalDiskBlobStore(shared_root).is_committed("ab/ab1")


# -- compact provenance marks (ADR 0036) --------------------------------------------------

DATABASE = "2c9e4b71-5d3a-4f6e-8b1c-7a0d9e8f6b5c"
needs_xattrs = pytest.mark.skipif(
    not hasattr(os, "setxattr"), reason="this platform has no os.setxattr"
)


def _keeps_user_xattrs(directory: Path) -> bool:
    probe = directory / "xattr-probe"
    probe.write_bytes(b"")
    try:
        os.setxattr(probe, "user.docbinder.probe", b"1")
    except OSError:
        return False
    finally:
        probe.unlink()
    return True


@needs_xattrs
def test_local_disk_writes_the_compact_mark_and_it_verifies(tmp_path: Path) -> None:
    store = LocalDiskBlobStore(tmp_path / "store")
    if not _keeps_user_xattrs(tmp_path):
        pytest.skip(f"{tmp_path} keeps no user extended attributes")
    identity = store.identity(create=True)
    store.register_database(DATABASE)
    store.put("ab/abc", [b"x" * 1024])
    raw = os.getxattr(tmp_path / "store" / "ab" / "abc", localdisk.ORIGIN_XATTR)
    assert raw == compact_blob_origin(identity, DATABASE, "ab/abc").encode("ascii")
    assert len(raw) == 15
    mark = LocalDiskBlobStore(tmp_path / "store").stat("ab/abc").origin
    assert read_origin(mark, "ab/abc", identity, [None, DATABASE]) == BlobOrigin(identity, DATABASE)
    assert read_origin(mark, "ab/abc", identity, [None, "another"]) is None
    # one instance written for two databases marks its blobs with no database ("-")
    store.register_database("another")
    store.put("cd/cde", [b"y"])
    anonymous = store.stat("cd/cde").origin
    assert read_origin(anonymous, "cd/cde", identity, [DATABASE, "another", None]) == (
        BlobOrigin(identity, None)
    )


def _blocks_after_sync(path: Path) -> int:
    os.sync()
    return os.stat(path).st_blocks


@needs_xattrs
def test_a_marked_and_committed_blob_takes_no_more_blocks_than_a_plain_file(
    tmp_path: Path,
) -> None:
    """ext4 with 256-byte inodes keeps about 92 bytes of extended attributes in the
    inode; the 109-byte full mark made every blob take a 4 KiB attribute block of its
    own (16 sectors for a 1 KiB blob instead of 8). The compact mark fits (ADR 0036)."""
    root = tmp_path / "store"
    store = LocalDiskBlobStore(root)
    store.identity(create=True)
    store.register_database(DATABASE)
    store.put("ab/abc", [b"x" * 1024])
    shard = root / "ab"
    if not _keeps_user_xattrs(shard):
        pytest.skip(f"{shard} keeps no user extended attributes")
    assert store.mark_committed("ab/abc")
    plain = shard / "plain"
    plain.write_bytes(b"x" * 1024)
    control = shard / "control"
    control.write_bytes(b"x" * 1024)
    os.setxattr(control, localdisk.ORIGIN_XATTR, b"v2 " + b"A" * 12)
    os.setxattr(control, localdisk.COMMITTED_XATTR, b"v1")
    plain_blocks = _blocks_after_sync(plain)
    if _blocks_after_sync(control) > plain_blocks:
        pytest.skip(
            f"the file system at {shard} keeps even 17 bytes of attribute values outside "
            "the inode (small inodes)"
        )
    assert _blocks_after_sync(shard / "abc") <= plain_blocks
    assert len(os.getxattr(shard / "abc", localdisk.ORIGIN_XATTR)) == 15


# -- the commit record lands on the file the key names ---------------------------------------

needs_proc = pytest.mark.skipif(
    not hasattr(os, "setxattr") or not Path("/proc/self/fd").is_dir(),
    reason="needs extended attributes and /proc to count descriptors",
)


def _descriptors_into(root: Path) -> int:
    """How many of this process's descriptors name a file below ``root``."""
    found = 0
    for name in os.listdir("/proc/self/fd"):
        found += _fd_path(int(name)).startswith(f"{root}{os.sep}")
    return found


def _xattr_store(tmp_path: Path) -> tuple[LocalDiskBlobStore, Path]:
    if not _keeps_user_xattrs(tmp_path):
        pytest.skip(f"{tmp_path} keeps no user extended attributes")
    root = tmp_path / "store"
    return LocalDiskBlobStore(root), root


def _committed(path: Path | int) -> bool:
    return localdisk.COMMITTED_XATTR in os.listxattr(path)


@needs_proc
def test_put_keeps_nothing_open_and_mark_committed_opens_the_blob_by_name(
    tmp_path: Path,
) -> None:
    store, root = _xattr_store(tmp_path)
    store.put("ab/key", [b"x"])
    assert _descriptors_into(root) == 0
    assert store.mark_committed("ab/key") is True
    assert os.getxattr(root / "ab" / "key", localdisk.COMMITTED_XATTR) == b"v1"
    assert _descriptors_into(root) == 0


@needs_proc
def test_mark_committed_after_delete_is_blob_missing_and_after_a_new_put_marks_the_new_file(
    tmp_path: Path,
) -> None:
    store, root = _xattr_store(tmp_path)
    path = root / "ab" / "key"
    store.put("ab/key", [b"one"])
    store.delete("ab/key")
    with pytest.raises(BlobMissing):
        store.mark_committed("ab/key")
    store.put("ab/key", [b"one"])
    old = os.open(path, os.O_RDONLY)  # the first file, replaced below
    try:
        store.put("ab/key", [b"two"])
        new_inode = os.stat(path).st_ino
        assert new_inode != os.fstat(old).st_ino
        assert store.mark_committed("ab/key") is True
        assert os.stat(path).st_ino == new_inode and _committed(path)
        assert not _committed(old)
    finally:
        os.close(old)
    assert b"".join(store.open("ab/key")) == b"two"


@needs_proc
def test_a_blob_removed_behind_the_store_is_missing_when_its_commit_is_recorded(
    tmp_path: Path,
) -> None:
    store, root = _xattr_store(tmp_path)
    store.put("ab/gone", [b"x"])
    os.unlink(root / "ab" / "gone")  # another process, or gc run with too short a grace
    with pytest.raises(BlobMissing):
        store.mark_committed("ab/gone")
    assert _descriptors_into(root) == 0


@needs_proc
def test_a_store_directory_replaced_behind_the_store_gets_the_record_on_the_file_at_the_key(
    tmp_path: Path,
) -> None:
    store, root = _xattr_store(tmp_path)
    store.put("ab/key", [b"bytes"])
    # The store is moved while a writer runs: a copy takes the root's place.
    shutil.copytree(root, tmp_path / "copy")
    os.rename(root, tmp_path / "retired")
    os.rename(tmp_path / "copy", root)
    assert store.mark_committed("ab/key") is True
    assert _committed(root / "ab" / "key")  # the file the key names now
    assert not _committed(tmp_path / "retired" / "ab" / "key")
    assert _descriptors_into(tmp_path / "retired") == 0


@needs_proc
def test_a_failed_put_leaves_nothing_to_mark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, root = _xattr_store(tmp_path)
    with pytest.raises(Boom):
        store.put("ab/failed", failing(b"partial", Boom()))
    with pytest.raises(BlobMissing):
        store.mark_committed("ab/failed")
    # the directory's fsync fails after the rename: the blob is taken back
    store.put("ab/first", [b"old"])
    real_fsync = os.fsync

    def failing_directory_fsync(fd: int) -> None:
        if _fd_path(fd) == str(root / "ab"):
            raise OSError(errno.EIO, "I/O error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing_directory_fsync)
    with pytest.raises(StorageError):
        store.put("ab/undone", [b"x"])
    monkeypatch.undo()
    with pytest.raises(BlobMissing):
        store.mark_committed("ab/undone")
    # the rename fails: the old blob stays, and is the one marked

    def failing_replace(src: object, dst: object, **dir_fds: int) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(StorageError):
        store.put("ab/first", [b"new"])
    monkeypatch.undo()
    assert store.mark_committed("ab/first") is True
    assert _committed(root / "ab" / "first")
    assert b"".join(store.open("ab/first")) == b"old"
    assert temp_files(root) == []
    assert _descriptors_into(root) == 0
