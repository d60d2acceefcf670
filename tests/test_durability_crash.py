"""Each durability mode against the crash it is about, with a real `kill -9` of the writer.

A writer process puts objects, reporting each id once `put` has returned, calls `flush()` after
30 of them, and is killed with SIGKILL while still writing. Then:

- process crash (every mode): the OS keeps what was written, so every reported object is
  readable from a fresh process — `put` hands its bytes to the OS before returning;
- power cut, simulated: every pack file is cut back to the length it had at its last
  fsync/fdatasync (recorded by the writer as it synced), which is all a power cut must leave.
  "always" keeps every reported object; "batch" keeps at least everything before `flush()`;
  "never" promises nothing (and here loses the unsynced records). In every mode the store still
  opens, fsck finds nothing wrong (a torn tail is not damage), and what survives is a prefix of
  what was written — never a hole.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from ctxstore.store.fsck import verify
from ctxstore.store.packstore import PackStore
from tests.test_store_pack import event

FLUSH_AFTER = 30
KILL_AFTER = 80


def _writer(path: str, durability: str, report: str, synced: str) -> None:
    log_fd = os.open(synced, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def recording(real):
        def sync(fd):
            real(fd)
            target = os.readlink(f"/proc/self/fd/{fd}")
            os.write(log_fd, f"{os.path.basename(target)}\t{os.fstat(fd).st_size}\n".encode())
        return sync

    os.fsync, os.fdatasync = recording(os.fsync), recording(os.fdatasync)
    rep = os.open(report, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    store = PackStore(path, durability=durability, dict_samples=0)
    for i in range(1_000_000):
        oid = store.put("value", event(i))
        os.write(rep, f"{oid}\n".encode())
        if i + 1 == FLUSH_AFTER:
            store.flush()
            os.write(rep, b"flushed\n")
        if i > KILL_AFTER:
            time.sleep(0.001)  # the kill is on its way
    os._exit(3)  # never reached: the parent kills us


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _power_cut(src: Path, dst: Path, synced: Path) -> None:
    """Copy the store, cutting each pack file back to its last durable length."""
    shutil.copytree(src, dst)
    durable: dict[str, int] = {}
    for line in _lines(synced):
        name, size = line.split("\t")
        durable[name] = max(durable.get(name, 0), int(size))
    for pack in (dst / "packs").iterdir():
        if pack.name.endswith(".pack"):
            os.truncate(pack, min(durable.get(pack.name, 0), pack.stat().st_size))


@pytest.mark.parametrize("durability", ["always", "batch", "never"])
def test_durability_modes_survive_kill_9_and_power_cut(tmp_path, durability):
    store_dir, report, synced = tmp_path / "objects", tmp_path / "report", tmp_path / "synced"
    ctx = multiprocessing.get_context("fork")
    proc = ctx.Process(target=_writer, args=(str(store_dir), durability, str(report), str(synced)))
    proc.start()
    deadline = time.monotonic() + 60
    while len(_lines(report)) < KILL_AFTER + 1 and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(30)
    assert proc.exitcode == -signal.SIGKILL
    lines = _lines(report)
    assert "flushed" in lines and len(lines) > KILL_AFTER
    flushed = lines[:lines.index("flushed")]
    written = [x for x in lines if x != "flushed"]
    assert len(flushed) == FLUSH_AFTER

    # the process crashed; the OS did not: everything put is there
    with PackStore(store_dir) as s:
        assert all(s.get(oid) == event(i) for i, oid in enumerate(written))
        assert list(verify(s)) == []

    _power_cut(store_dir, tmp_path / "cut", synced)
    with PackStore(tmp_path / "cut") as s:
        assert list(verify(s)) == []
        survived = [oid for oid in written if oid in s]
        assert survived == written[:len(survived)], "a hole: a later record outlived an earlier one"
        assert all(s.get(oid) == event(i) for i, oid in enumerate(survived))
    if durability == "always":
        assert survived == written
    elif durability == "batch":
        assert len(survived) >= FLUSH_AFTER  # flush() made these durable
    else:
        assert len(survived) < len(written)  # nothing synced them: the cut is real
