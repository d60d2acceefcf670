"""fsck with worker processes reports exactly what a serial fsck reports.

`verify(workers=N)` forks its workers when this process has a single thread, and takes them from
a fork server when it has more (pytest-xdist and pytest-timeout add threads). These tests run
the check in a freshly forked child — one thread, so the fork path — and count the runs it
actually submitted: a "parallel" check that quietly ran serially would prove nothing about the
workers. `test_fsck_batch.py` runs it in the test process (a fork server under xdist) and
`test_start_method_*` below pin which method is chosen when.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import pytest

from ctxstore import codec
from ctxstore.store import fsck
from ctxstore.store.packstore import PackStore
from tests.test_store_pack import _record_offset, event, put_events


class _CountingPool(ProcessPoolExecutor):
    submitted = 0

    def submit(self, fn, /, *args, **kwargs):
        type(self).submitted += 1
        return super().submit(fn, *args, **kwargs)


def _verify_in_child(path, workers, out, chunk):
    fsck.CHUNK = chunk  # several runs per pack, so several workers get work
    fsck.ProcessPoolExecutor = _CountingPool
    with PackStore(path) as s:
        problems = [(p.kind, p.id, p.pack, p.offset) for p in fsck.verify(s, workers=workers)]
    out.put((problems, _CountingPool.submitted))


def _verify(path, workers, chunk=8):
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    proc = ctx.Process(target=_verify_in_child, args=(str(path), workers, out, chunk))
    proc.start()
    result = out.get(timeout=60)
    proc.join(60)
    assert proc.exitcode == 0
    return result


def _flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x40]))


@pytest.mark.parametrize("seal", [False, True], ids=["active", "sealed"])
def test_parallel_fsck_reports_a_flipped_byte(tmp_path, seal):
    with PackStore(tmp_path, seal_size=2048 if seal else 1 << 20, dict_samples=0) as s:
        ids = put_events(s, 60)
    with PackStore(tmp_path) as s:
        victim = ids[37]
        pack, off = _record_offset(s, victim)
        assert pack.sealed == seal and s.get(ids[36]) == event(36)
    clean, runs = _verify(tmp_path, workers=2)
    assert clean == [] and runs >= 2  # the workers did the checking
    _flip(pack.path, off + codec.RECORD_HEAD_SIZE + 3)
    parallel, runs = _verify(tmp_path, workers=2)
    serial, serial_runs = _verify(tmp_path, workers=1)
    assert runs >= 2 and serial_runs == 0
    assert parallel == serial == [("checksum", victim, pack.name, off)]


def test_parallel_fsck_reports_every_damaged_record_in_order(tmp_path):
    with PackStore(tmp_path, dict_samples=0) as s:
        ids = put_events(s, 50)
    with PackStore(tmp_path) as s:
        victims = [(ids[i], *_record_offset(s, ids[i])) for i in (3, 20, 41)]
    for _, pack, off in victims:
        _flip(pack.path, off + codec.RECORD_HEAD_SIZE + 5)
    parallel, runs = _verify(tmp_path, workers=2)
    assert runs >= 2
    assert [(kind, oid, offset) for kind, oid, _, offset in parallel] == \
           [("checksum", oid, off) for oid, _, off in victims]


@pytest.mark.parametrize("threads, methods, expected", [
    (1, ["fork", "spawn", "forkserver"], "fork"),
    (2, ["fork", "spawn", "forkserver"], "forkserver"),
    (1, ["spawn", "forkserver"], "forkserver"),
    (3, ["fork", "spawn"], None),
    (1, ["spawn"], None),
])
def test_start_method_is_fork_only_from_one_thread(monkeypatch, threads, methods, expected):
    """fork from a process with other threads can leave a lock held in the child forever."""
    monkeypatch.setattr(fsck.threading, "active_count", lambda: threads)
    monkeypatch.setattr(fsck, "_start_methods", lambda: methods)
    assert fsck._start_method() == expected


def test_start_method_none_checks_everything_here(tmp_path, monkeypatch):
    """Without a safe way to start workers, `workers=2` verifies in this process: no pool."""
    with PackStore(tmp_path) as s:
        put_events(s, 30)
    made = []
    monkeypatch.setattr(fsck, "_start_method", lambda: None)
    monkeypatch.setattr(fsck, "ProcessPoolExecutor", lambda *a, **k: made.append(a))
    with PackStore(tmp_path) as s:
        assert list(fsck.verify(s, workers=2)) == []
    assert made == []


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_workers_start_the_way_start_method_chose(tmp_path, monkeypatch, method):
    """The pool is made with the chosen start method (a pool of the platform's default would
    fork from a process with other threads), and finds a flipped byte either way."""
    with PackStore(tmp_path, dict_samples=0) as s:
        ids = put_events(s, 40)
    with PackStore(tmp_path) as s:
        pack, off = _record_offset(s, ids[17])
    _flip(pack.path, off + codec.RECORD_HEAD_SIZE + 3)
    made = []

    class Recording(ProcessPoolExecutor):
        def __init__(self, *args, **kwargs):
            made.append(kwargs["mp_context"].get_start_method())
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(fsck, "_start_method", lambda: method)
    monkeypatch.setattr(fsck, "ProcessPoolExecutor", Recording)
    monkeypatch.setattr(fsck, "CHUNK", 8)
    with PackStore(tmp_path) as s:
        problems = [(p.kind, p.id, p.offset) for p in fsck.verify(s, workers=2)]
    assert made == [method]
    assert problems == [("checksum", ids[17], off)]
