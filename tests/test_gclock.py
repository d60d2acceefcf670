"""The gc lock's own rules (ctxstore/store/gclock.py): what each refusal says, that a waiter
really waits for a holder that lets go, and how the lock file is made. The races it exists for
are in test_gc.py."""

from __future__ import annotations

import errno
import os
import threading
import time

import pytest

from ctxstore.errors import LockHeld
from ctxstore.store import gclock
from ctxstore.store.gclock import LOCK_NAME, GcLock


def test_refusals_say_which_lock_and_why(tmp_path):
    path = tmp_path / LOCK_NAME
    with GcLock(str(tmp_path)) as reader:
        reader.share(wait=0)
        reader.share(wait=0)  # held already: a no-op
        with pytest.raises(LockHeld) as err:
            GcLock(str(tmp_path)).exclusive(wait=0.05)
        assert str(err.value) == f"{path} stayed locked for 0.05s (other processes have the store open)"
        with pytest.raises(LockHeld, match=f"^{path} is already held by this store$"):
            reader.exclusive(wait=0)
    with GcLock(str(tmp_path)) as gc:
        gc.exclusive(wait=0)
        with pytest.raises(LockHeld) as err:
            GcLock(str(tmp_path)).share(wait=0.02)
        assert str(err.value) == f"{path} stayed locked for 0.02s (gc is deleting packs)"
    assert not gc.held


def test_a_waiter_gets_the_lock_when_the_holder_lets_go(tmp_path):
    holder = GcLock(str(tmp_path))
    holder.share(wait=0)
    threading.Timer(0.15, holder.release).start()
    gc = GcLock(str(tmp_path))
    start = time.monotonic()
    gc.exclusive(wait=5)  # polls until the shared lock goes
    assert gc.held and 0.1 < time.monotonic() - start < 5
    gc.release()


def test_lock_file_is_created_readable_by_all(tmp_path):
    old = os.umask(0o022)
    try:
        gclock.create_lock_file(str(tmp_path))
    finally:
        os.umask(old)
    assert (tmp_path / LOCK_NAME).stat().st_mode & 0o777 == 0o644
    assert os.listdir(tmp_path) == [LOCK_NAME]


def _read_only_store(monkeypatch, *, lock_exists: bool):
    """os.open as on a read-only medium: anything but a plain read-only open of an existing
    file fails (root is never refused by permissions, so the medium is simulated)."""
    real = os.open

    def read_only_open(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, "Read-only file system", path)
        if not lock_exists and str(path).endswith(LOCK_NAME):
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only_open)


def test_a_read_only_store_is_read_under_a_shared_lock_and_never_collected(tmp_path, monkeypatch):
    gclock.create_lock_file(str(tmp_path))
    _read_only_store(monkeypatch, lock_exists=True)
    reader = GcLock(str(tmp_path))
    reader.share(wait=0)  # opened read-only: a shared flock needs no write access
    assert reader.held and reader._fd >= 0
    monkeypatch.undo()
    with pytest.raises(LockHeld, match="other processes have the store open"):
        GcLock(str(tmp_path)).exclusive(wait=0)  # the read-only reader still counts
    reader.release()
    assert not reader.held


def test_without_a_lock_file_a_read_only_store_reads_on_and_gc_refuses(tmp_path, monkeypatch):
    _read_only_store(monkeypatch, lock_exists=False)
    gclock.create_lock_file(str(tmp_path))  # cannot create it: nothing happens
    reader = GcLock(str(tmp_path))
    reader.share(wait=0)  # no lock to take: reading goes on
    assert reader.held
    reader.release()
    os.fstat(1)  # the "no descriptor" mark was never closed as if it were one
    with pytest.raises(LockHeld) as err:
        GcLock(str(tmp_path)).exclusive(wait=0)
    assert str(err.value) == f"cannot open {tmp_path / LOCK_NAME}: gc needs to write the store"


def test_other_errors_opening_the_lock_are_not_taken_for_a_read_only_store(tmp_path, monkeypatch):
    def failing_open(path, flags, *args, **kwargs):
        raise OSError(errno.EIO, "Input/output error", path)

    monkeypatch.setattr(os, "open", failing_open)
    with pytest.raises(OSError) as err:
        GcLock(str(tmp_path)).share(wait=0)
    assert err.value.errno == errno.EIO


def test_creating_the_lock_file_makes_it_in_the_store_and_leaves_no_descriptor_open(
        tmp_path, monkeypatch):
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")  # not the store's folder
    def open_on_lock():
        lock = os.stat(tmp_path / LOCK_NAME)
        out = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                st = os.fstat(int(fd))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == (lock.st_dev, lock.st_ino):
                out.append(fd)
        return out

    gclock.create_lock_file(str(tmp_path))
    assert (tmp_path / LOCK_NAME).exists() and open_on_lock() == []
    assert os.listdir(tmp_path / "cwd") == []
