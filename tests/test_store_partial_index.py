"""Partial indexes of active packs (docs/format.md "Partial indexes"): what a reader reads when
it opens a store is bounded at any pack size, and a crash between a record and the index that
would name it (real kill -9) loses nothing acknowledged and leaves fsck clean."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading

import pytest

from ctxstore.store.fsck import verify
from ctxstore.store.pack import HEADER_SIZE, PIDX_SUFFIX
from ctxstore.store.packindex import PackIndex, build_index, merge_index
from ctxstore.store.packstore import PackStore
from ctxstore.store.packwriter import INDEX_AT_CLOSE, INDEX_EVERY

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _files(path, suffix):
    return sorted(os.path.join(path, "packs", n) for n in os.listdir(os.path.join(path, "packs"))
                  if n.startswith("pack-") and n.endswith(suffix))


class CountReads:
    """Counts the bytes every os.pread / os.read returns, and every mmap made (none expected
    for an active pack: a mapped index would cost resident memory growing with the pack)."""

    def __init__(self, monkeypatch):
        self.bytes = 0
        real_pread, real_read = os.pread, os.read

        def pread(fd, n, off):
            out = real_pread(fd, n, off)
            self.bytes += len(out)
            return out

        def read(fd, n):
            out = real_read(fd, n)
            self.bytes += len(out)
            return out

        monkeypatch.setattr(os, "pread", pread)
        monkeypatch.setattr(os, "read", read)


@pytest.fixture(scope="module")
def big_store(tmp_path_factory):
    """One active pack of 100k records (well under the 32 MiB seal size), written by one
    writer that closed normally."""
    path = tmp_path_factory.mktemp("big")
    with PackStore(path, dict_samples=0) as s:
        ids = [s.put("blob", b"record %08d " % i + b"x" * (i % 50)) for i in range(100_000)]
    assert _files(path, ".idx") == [] and len(_files(path, ".pack")) == 1
    return path, ids


def test_opening_a_100k_record_active_pack_reads_a_bounded_number_of_bytes(big_store,
                                                                          monkeypatch):
    path, ids = big_store
    (pack,) = _files(path, ".pack")
    assert os.path.getsize(pack) > 3 * 1024 * 1024
    reads = CountReads(monkeypatch)
    with PackStore(path) as s:
        # the newest object (in the unindexed tail), an old one (in the partial index), a miss
        assert s.get(ids[-1]) == b"record 00099999 " + b"x" * (99_999 % 50)
        assert s.get(ids[10]) == b"record 00000010 " + b"x" * 10
        assert "00" * 32 not in s
        tail = os.path.getsize(pack) - s.packs()[0].indexed_end
    assert 0 <= tail < INDEX_AT_CLOSE
    # the tail, one pass over the partial index to check its trailer checksum (a damaged
    # .pidx is never trusted: issue 28), its header and fan-out, a few ids and offsets, two
    # records — never the indexed part of the pack
    pidx = os.path.getsize(pack[:-len(".pack")] + PIDX_SUFFIX)
    assert reads.bytes < INDEX_AT_CLOSE + 16 * 1024 + pidx, reads.bytes
    assert reads.bytes < os.path.getsize(pack) // 2, reads.bytes


def test_without_its_partial_index_the_same_reader_scans_the_whole_pack(big_store, tmp_path,
                                                                        monkeypatch):
    """The control for the test above: the count can fail, and a missing .pidx changes speed,
    not answers."""
    src, ids = big_store
    (pack,) = _files(src, ".pack")
    os.makedirs(tmp_path / "packs")
    with open(pack, "rb") as f, open(tmp_path / "packs" / os.path.basename(pack), "wb") as g:
        g.write(f.read())
    reads = CountReads(monkeypatch)
    with PackStore(tmp_path) as s:
        assert s.get(ids[-1]).startswith(b"record 00099999")
    assert reads.bytes > os.path.getsize(pack)


def test_writer_extends_the_partial_index_as_it_goes(tmp_path):
    with PackStore(tmp_path, dict_samples=0, index_every=4096, index_at_close=1024) as s:
        ids = [s.put("blob", b"%06d" % i * 20) for i in range(2000)]
        s.flush()
        (pack,) = _files(tmp_path, ".pack")
        (pidx,) = _files(tmp_path, PIDX_SUFFIX)
        mark = PackIndex(pidx).pack_length_checked()
        assert os.path.getsize(pack) - mark < 4096 + 100 * 200  # a sync's worth past the mark
    mark = PackIndex(pidx).pack_length_checked()
    assert os.path.getsize(pack) - mark < 1024
    with PackStore(tmp_path) as s:
        assert [s.get(i) for i in ids[::97]] == [b"%06d" % i * 20 for i in range(0, 2000, 97)]
        assert set(s) == set(ids)
        assert list(verify(s)) == []
        assert sorted(s.ids_with_prefix(ids[5][:3])) == sorted(i for i in ids if i.startswith(ids[5][:3]))


def test_putting_while_the_syncer_extends_the_index(tmp_path, monkeypatch):
    """The group-commit thread extends the index while this thread appends: the scanned map is
    read and trimmed under the append lock. (Without the lock a full-suite run once raised
    "dictionary changed size during iteration" in the syncer; the race needs a thread switch
    inside a C-level copy of the map, so this test guards the behaviour, not that exact race.)"""
    errors = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    with PackStore(tmp_path, dict_samples=0, index_every=2048, sync_objects=3,
                   sync_interval=0.0005) as s:
        ids = [s.put("blob", b"item %06d " % i * 4) for i in range(20_000)]
        assert all(s.get(i) for i in ids[::50])
    assert errors == []
    with PackStore(tmp_path) as s:
        assert set(s) == set(ids)
        assert list(verify(s)) == []


def test_sealing_replaces_the_partial_index(tmp_path):
    with PackStore(tmp_path, dict_samples=0, index_every=2048, seal_size=64 * 1024) as s:
        ids = [s.put("blob", b"%06d" % i * 20) for i in range(3000)]
    assert _files(tmp_path, ".idx")
    sealed = {p[:-len(".idx")] for p in _files(tmp_path, ".idx")}
    assert not sealed & {p[:-len(PIDX_SUFFIX)] for p in _files(tmp_path, PIDX_SUFFIX)}
    with PackStore(tmp_path) as s:
        assert set(s) == set(ids)
        assert list(verify(s)) == []


def test_merge_index_equals_building_from_scratch(tmp_path):
    rnd = random.Random(7)
    for n in (0, 1, 300, 5000):
        base = [(rnd.randbytes(32), rnd.randrange(8, 10**6)) for _ in range(n)]
        new = [(rnd.randbytes(32), rnd.randrange(10**6, 2 * 10**6)) for _ in range(200)]
        path = tmp_path / f"b{n}.idx"
        path.write_bytes(build_index(base, 10**6))
        index = PackIndex(path)
        assert merge_index(index, new + base[:3], 2 * 10**6) == build_index(base + new, 2 * 10**6)
        index.close()


def test_a_bad_partial_index_is_ignored_by_readers_and_reported_by_fsck(tmp_path):
    with PackStore(tmp_path, dict_samples=0, index_at_close=1024) as s:
        ids = [s.put("blob", b"%06d" % i * 20) for i in range(500)]
    (pidx,) = _files(tmp_path, PIDX_SUFFIX)
    good = open(pidx, "rb").read()
    data = bytearray(good)
    data[-1] ^= 0xFF  # the checksum: fsck's to find, lookups do not read it
    open(pidx, "wb").write(bytes(data))
    with PackStore(tmp_path) as s:
        assert all(s.get(i) == b"%06d" % n * 20 for n, i in enumerate(ids))
        assert [p.message for p in verify(s)] == [
            f"partial index of pack {s.packs()[0].name}: checksum mismatch"]
    data = bytearray(good)
    data[2000] ^= 0xFF  # an id the pack does not have (as for a sealed index: fsck finds it)
    open(pidx, "wb").write(bytes(data))
    with PackStore(tmp_path) as s:
        problems = [p.message for p in verify(s)]
        assert len(problems) == 3, problems  # checksum, a name with no record, a record unnamed
        assert "names" in problems[1] and "missing from its partial index" in problems[2]
    open(pidx, "wb").write(b"CIDX garbage")  # unreadable: readers scan the pack instead
    with PackStore(tmp_path) as s:
        assert set(s) == set(ids)
        assert [p.kind for p in verify(s)] == ["index"]
    with PackStore(tmp_path, index_at_close=1024) as s:  # the next writer rewrites it
        s.put("blob", b"after")
    with PackStore(tmp_path) as s:
        assert list(verify(s)) == []
        assert s.packs()[0].indexed_end > HEADER_SIZE


# -- kill -9 between a record and the index that would name it ---------------------------------

# Writes batches and prints their ids once flush() returned (acknowledged). With KILL_AT=k it
# SIGKILLs itself at the k-th partial-index write: "before" = the records are durable but the
# index is not written; "torn" = mid-way through writing NAME.lock; "after" = right after the
# rename. Otherwise it runs until killed from outside.
WRITER = """
import os, signal, sys
from ctxstore.store import packwriter
from ctxstore.store.packstore import PackStore
path, seed, kill_at, where = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
real = packwriter.write_file_atomically
calls = [0]
def write(p, data, fsync=True):
    if p.endswith(".pidx"):
        calls[0] += 1
        if calls[0] == kill_at:
            if where == "torn":
                with open(p + ".lock", "wb") as f:
                    f.write(data[:len(data) // 2])
            if where in ("before", "torn"):
                os.kill(os.getpid(), signal.SIGKILL)
            real(p, data, fsync)
            os.kill(os.getpid(), signal.SIGKILL)
    return real(p, data, fsync)
packwriter.write_file_atomically = write
store = PackStore(path, dict_samples=0, index_every=2048, index_at_close=512, sync_objects=20)
n = 0
while True:
    ids = [store.put("value", {"seed": seed, "n": n + i, "text": "tool output " * (i % 9)})
           for i in range(7)]
    n += 7
    store.flush()
    sys.stdout.write("\\n".join(ids) + "\\n")
    sys.stdout.flush()
"""


def _run_writer(path, seed, kill_at=0, where="", after_acks=None) -> set[str]:
    """Run the writer until it kills itself at `kill_at`, or (with `after_acks`) SIGKILL it once
    it has acknowledged that many objects: counted, not timed, so a loaded machine still
    kills it mid-stream rather than before its first write."""
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(seed), str(kill_at),
                              where], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    head: list[str] = []
    if after_acks is not None:
        while len(head) < after_acks:
            line = child.stdout.readline()
            if not line:
                break
            head.append(line)
        os.kill(child.pid, signal.SIGKILL)
    out, _ = child.communicate(timeout=120)
    assert child.returncode == -signal.SIGKILL
    return {line for line in ("".join(head) + out).split("\n")[:-1] if len(line) == 64}


def _check(path, acked: set[str], label: str) -> None:
    with PackStore(path) as s:
        problems = list(verify(s))
        assert problems == [], f"{label}: {problems[:3]}"
        missing = [i for i in acked if i not in s]
        assert not missing, f"{label}: {len(missing)} acknowledged objects lost"
        assert all(s.get(i)["text"] is not None for i in acked)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["before", "torn", "after"])
def test_kill_9_at_the_partial_index_write(tmp_path, where):
    acked: set[str] = set()
    for round_, kill_at in enumerate((3, 1, 5)):
        acked |= _run_writer(tmp_path, round_, kill_at, where)
        _check(tmp_path, acked, f"{where}, round {round_}")
    assert len(acked) > 50
    with PackStore(tmp_path, index_at_close=512) as s:  # a later writer takes over and indexes
        s.put("value", "after the crashes")
    with PackStore(tmp_path) as s:
        (pack,) = s.packs()
        assert os.path.getsize(pack.path) - pack.indexed_end < 512 + 200
        assert list(verify(s)) == []


@pytest.mark.slow
def test_kill_9_at_random_times_with_frequent_partial_indexes(tmp_path):
    rnd = random.Random(99)
    acked: set[str] = set()
    for i in range(12):
        acked |= _run_writer(tmp_path, 100 + i, after_acks=rnd.randint(10, 60))
        _check(tmp_path, acked, f"iteration {i}")
    assert len(acked) > 100


def test_defaults_bound_what_readers_scan():
    assert INDEX_AT_CLOSE <= 64 * 1024 and INDEX_EVERY <= 1024 * 1024
