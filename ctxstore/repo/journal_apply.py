"""What the write-ahead journal's records mean to a repository: commit, recovery, checkpoint.

A small transaction (its new objects under CAPTURE_LIMIT bytes, no reflog rewrite, durability
"batch") commits as one record in `.ctx/wal` (store/journal.py): the pack records are handed to
the OS unsynced, the record is appended with one write and one fdatasync (the commit point),
then the ref moves are applied exactly as a transaction applies its journal (reflog lines, ref
files, op-head), unsynced. Everything here runs under the transaction lock.

- Recovery, same boot: the OS kept every write, so only the last record can be unapplied (its
  writer died before moving op-head); it is rolled forward, its objects put again if gc took
  them meanwhile.
- Recovery after a reboot (the journal's boot id is not this boot's): unsynced pack records and
  ref renames may be lost, so every record is replayed in order — missing objects put back and
  flushed, each move applied where the ref still holds its old value — then checkpointed.
- A torn or damaged tail is cut off before the next append; damage (a whole record that does
  not verify) is first copied to `wal-damaged-<ms>` for fsck to report.
- Checkpoint: every active pack fdatasync'd, every ref file, reflog and directory the journal's
  moves touched fsync'd, then a new empty journal (new salt) renamed into place.

docs/format.md, "The write-ahead journal", is the specification.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..refs import HEAD
from ..store.journal import (
    CHECKPOINT_BYTES,
    JournalFile,
    Scan,
    boot_id,
    decode_payload,
    encode_payload,
)
from .transaction_journal import Journal, apply_journal

if TYPE_CHECKING:
    from ..store.packstore import PackStore
    from .repolike import RepoLike

#: A transaction whose new objects' bodies pass this many bytes takes the pack path.
CAPTURE_LIMIT = 1 << 20
DAMAGED_PREFIX = "wal-damaged-"


def journal_file(ctx_dir: Path) -> JournalFile:
    return JournalFile(ctx_dir / "wal")


def needs_recovery(repo: RepoLike) -> bool:
    """A reader's look at open, without the lock: is anything left to roll forward or cut?"""
    scan = repo.journal.scan()
    if scan is None:
        return False
    if scan.problem is not None or (scan.records and scan.boot != boot_id()):
        return True
    return bool(scan.records) and _op_of(scan, -1) != repo.refs.read_op_head()


def recover(repo: RepoLike) -> Scan:
    """Bring refs and objects up to the journal's valid prefix and cut what follows it; the
    caller holds the transaction lock. Returns the scan the next append goes after."""
    wal = repo.journal
    scan = wal.scan()
    if scan is None:
        return wal.create(sync=True)
    damaged = scan.problem == "damaged"
    if scan.problem is not None:
        if damaged:
            _keep_damage(wal.path, scan)
        wal.discard_tail(scan, sync=True)
    if scan.records and scan.boot != boot_id():
        _replay(repo, scan, range(len(scan.records)))
        return checkpoint(repo, scan, everything=True)
    if scan.records and _op_of(scan, -1) != repo.refs.read_op_head():
        _replay(repo, scan, [len(scan.records) - 1])
    if damaged:  # records after the damage are applied but no longer journalled: sync them
        return checkpoint(repo, scan, everything=True)
    return scan


def commit(repo: RepoLike, scan: Scan, journal: Journal,
           objects: list[tuple[str, str, bytes]]) -> None:
    """Steps J1-J4 of docs/format.md: pack records to the OS, the record (commit point), the
    moves applied unsynced, a checkpoint when the journal has grown."""
    store: PackStore = repo.objects
    if store.unsynced_outside:
        store.flush()  # objects put outside this transaction's capture may be named too
    else:
        store.write_out()
    repo.journal.append(scan, encode_payload(journal.encode(), objects), sync=True)
    apply_journal(repo.refs, journal, fsync=False, recovering=False)
    if scan.end >= CHECKPOINT_BYTES:
        checkpoint(repo, scan)


def checkpoint(repo: RepoLike, scan: Scan, *, everything: bool = False) -> Scan:
    """Make what the journal's records wrote durable by other means, then start a new journal
    (the caller holds the transaction lock). `everything`: records may be missing from `scan`
    (damage cut them off), so the whole file system is synced."""
    repo.objects.sync_active_packs()
    root = Path(repo.path)
    if everything:
        os.sync()
    else:
        paths: set[Path] = {root / HEAD, root / "op-head", root / "logs" / HEAD}
        for i in range(len(scan.records)):
            for move in _journal_of(scan, i).moves:
                paths.update((root / move.ref, root / "logs" / move.ref))
        _fsync_all(paths, root)
    return repo.journal.create(sync=True)


def damaged_copies(ctx_dir: Path) -> list[Path]:
    """The damaged journal tails recovery set aside (fsck reports each)."""
    return sorted(ctx_dir.glob(DAMAGED_PREFIX + "*"))


# ---------------------------------------------------------------------------------------------

def _journal_of(scan: Scan, i: int) -> Journal:
    where = f"{scan.records[i].offset}"
    moves, _objects = decode_payload(scan.records[i].payload, f"wal record at byte {where}")
    return Journal.decode(moves, f"wal record {scan.records[i].seq}")


def _op_of(scan: Scan, i: int) -> str:
    return _journal_of(scan, i).op


def _replay(repo: RepoLike, scan: Scan, which) -> None:
    """Put back the records' objects the store lacks (durably), then roll their moves forward
    in order: a ref at a move's old value gets it, any other is left alone."""
    store: PackStore = repo.objects
    journals = []
    for i in which:
        record = scan.records[i]
        moves, objects = decode_payload(record.payload, f"wal record {record.seq}")
        for obj_id, type_name, body in objects:
            if obj_id not in store:
                store.put_absent(obj_id, type_name, body)
        journals.append(Journal.decode(moves, f"wal record {record.seq}"))
    store.flush()
    for journal in journals:
        apply_journal(repo.refs, journal, fsync=False, recovering=True)


def _keep_damage(path: Path, scan: Scan) -> None:
    """Copy the bytes after the valid prefix aside before they are cut (durably)."""
    with open(path, "rb") as f:
        f.seek(scan.end)
        data = f.read()
    target = path.with_name(f"{DAMAGED_PREFIX}{int(time.time() * 1000)}")
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_all(paths: set[Path], root: Path) -> None:
    dirs: set[Path] = {root}
    for p in sorted(paths):
        try:
            fd = os.open(p, os.O_RDONLY)
        except (FileNotFoundError, NotADirectoryError):
            pass  # a deleted ref: its directory entry is synced below
        else:
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        for parent in p.parents:
            if parent == root or root not in parent.parents:
                break
            dirs.add(parent)
    for d in sorted(dirs):
        try:
            fd = os.open(d, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
