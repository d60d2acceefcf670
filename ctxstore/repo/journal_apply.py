"""What the write-ahead journal's records mean to a repository: commit, recovery, checkpoint.

A small transaction (its new objects under CAPTURE_LIMIT bytes, no reflog rewrite, durability
"batch") commits as one record in `.ctx/wal` (store/journal.py): the pack records are handed to
the OS unsynced, the record is appended with one write and one fdatasync — the commit point,
after which its moves are what every reader sees, since refs resolve journal-first
(refs/journalrefs.py) — then its reflog lines are appended, unsynced. Ref files, HEAD and
op-head are written at the next checkpoint. Everything here runs under the transaction lock.

- Recovery, same boot: the OS kept every write; only the last record's reflog lines can be
  missing (its writer died before appending them), and are appended.
- Recovery after a reboot (the journal's boot id is not this boot's): unsynced pack records
  and reflog lines may be lost, so every record's objects the store lacks are put back and
  flushed, every missing reflog line appended, and the journal checkpointed.
- A torn or damaged tail is cut off before the next append; damage (a whole record that does
  not verify) is first copied to `wal-damaged-<ms>` for fsck to report.
- Checkpoint: every active pack fdatasync'd, every ref, HEAD and op-head the journal holds
  written to its file (fsync, rename, directory fsync), the reflogs it wrote to fsync'd, then a
  new empty journal (new salt) renamed into place.

docs/format.md, "The write-ahead journal", is the specification.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..refs.journalrefs import JournalRefs, record_journal
from ..store.journal import (
    CHECKPOINT_BYTES,
    JournalFile,
    Scan,
    boot_id,
    decode_payload,
    encode_payload,
)
from .transaction_journal import Journal, reflog_lines, same_line

if TYPE_CHECKING:
    from ..store.packstore import PackStore
    from .repolike import RepoLike

#: A transaction whose new objects' bodies pass this many bytes takes the pack path.
CAPTURE_LIMIT = 1 << 20
DAMAGED_PREFIX = "wal-damaged-"


def journal_file(ctx_dir: Path) -> JournalFile:
    return JournalFile(ctx_dir / "wal")


def needs_recovery(repo: RepoLike) -> bool:
    """A reader's look at open, without the lock: a journal of another boot (whose objects a
    power cut may have taken from the packs) or a bad tail."""
    scan = repo.journal.scan()
    return scan is not None and (scan.problem is not None or
                                 (bool(scan.records) and scan.boot != boot_id()))


def recover(repo: RepoLike) -> Scan:
    """Bring objects and reflogs up to the journal's valid prefix and cut what follows it; the
    caller holds the transaction lock. Returns the scan the next append goes after."""
    wal = repo.journal
    scan = wal.scan()
    if scan is None:
        return wal.create(sync=True)
    if scan.problem is not None:
        if scan.problem == "damaged":
            _keep_damage(wal.path, scan)
        wal.discard_tail(scan, sync=True)
    if scan.records and scan.boot != boot_id():
        _replay(repo, scan)
        return checkpoint(repo, scan)
    if scan.records and wal.logged != (scan.salt, len(scan.records)):
        for name, entry in reflog_lines(repo.refs, record_journal(scan, len(scan.records))):
            if not same_line(repo.refs.last_reflog_entry(name), entry):
                repo.refs.append_reflog(name, entry, False)
        wal.logged = (scan.salt, len(scan.records))
    return scan


def commit(repo: RepoLike, scan: Scan, journal: Journal,
           objects: list[tuple[str, str, bytes]]) -> None:
    """Steps J1-J4 of docs/format.md: pack records to the OS, the record (the commit point),
    its reflog lines unsynced, a checkpoint when the journal has grown."""
    store: PackStore = repo.objects
    if store.unsynced_outside:
        store.flush()  # objects put outside this transaction's capture may be named too
    else:
        store.write_out()
    repo.journal.append(scan, encode_payload(journal.encode(), objects), sync=True)
    for name, entry in reflog_lines(repo.refs, journal):
        repo.refs.append_reflog(name, entry, False)
    repo.journal.logged = (scan.salt, len(scan.records))
    if scan.end >= CHECKPOINT_BYTES:
        checkpoint(repo, scan)


def checkpoint(repo: RepoLike, scan: Scan) -> Scan:
    """Write what the journal's records hold to the packs, ref files and reflogs durably, then
    start a new journal (the caller holds the transaction lock)."""
    refs: JournalRefs = repo.refs
    repo.objects.sync_active_packs()
    _fsync_all(refs.write_overlay(), Path(repo.path))
    return repo.journal.create(sync=True)


def damaged_copies(ctx_dir: Path) -> list[Path]:
    """The damaged journal tails recovery set aside (fsck reports each)."""
    return sorted(ctx_dir.glob(DAMAGED_PREFIX + "*"))


# ---------------------------------------------------------------------------------------------

def _replay(repo: RepoLike, scan: Scan) -> None:
    """Put back every record's objects the store lacks (durably), then append every reflog
    line the records wrote that is not in its reflog."""
    store: PackStore = repo.objects
    for record in scan.records:
        _moves, objects = decode_payload(record.payload, f"wal record {record.seq}")
        for obj_id, type_name, body in objects:
            if obj_id not in store:
                store.put_absent(obj_id, type_name, body)
    store.flush()
    refs = repo.refs
    have: dict[str, set] = {}
    for record in scan.records:
        for name, entry in reflog_lines(refs, record_journal(scan, record.seq)):
            if name not in have:
                have[name] = {(e.old, e.new, e.ts_ms) for e in refs.reflog(name)}
            if (entry.old, entry.new, entry.ts_ms) not in have[name]:
                refs.append_reflog(name, entry, False)
                have[name].add((entry.old, entry.new, entry.ts_ms))


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
    """fsync each file that exists and every directory from it up to `root`."""
    dirs: set[Path] = {root}
    for p in sorted(paths):
        _fsync_path(p)
        dirs.update(d for d in p.parents if root in d.parents)
    for d in sorted(dirs):
        _fsync_path(d)


def _fsync_path(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return  # a reflog never written, a directory removed: nothing to make durable
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
