"""The gc lock's own rules (ctxstore/store/gclock.py): what each refusal says, that a waiter
really waits for a holder that lets go, and how the lock file is made. The races it exists for
are in test_gc.py."""

from __future__ import annotations

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
