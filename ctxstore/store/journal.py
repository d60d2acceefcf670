"""The write-ahead journal: one record per small transaction, one write and one fdatasync.

A durable append used to cost a pack fdatasync, a journal file written, fsync'd, renamed and
its directory fsync'd, then a ref and op-head renamed: 1 fdatasync, 2 fsyncs and 3 renames.
With the journal (`"journal": true` in config.json) the transaction's new objects and its
ref moves go into one record appended to `.ctx/wal`, made durable with one fdatasync; the pack
records and ref files are still written, unsynced, right after it, so readers see them as
before. A checkpoint makes those files durable (fsync) and starts a new, empty journal.

This module knows only the bytes (docs/format.md, "The write-ahead journal"): the header,
the records, their salt and checksum chain, and which prefix of a file is valid. What a
record means (objects to put, ref moves to replay) is the repository's business
(repo/journal_apply.py).
"""

from __future__ import annotations

import hashlib
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import msgpack

from ..errors import CorruptStore
from ..lockfile import fsync_dir

MAGIC = b"CTXWAL1\n"
HEADER = struct.Struct("<8s8s16s")  # magic, salt, boot id
RECORD = struct.Struct("<I8sQ")  # payload length, salt, sequence number
CHECKSUM_BYTES = 16
#: A record longer than this is damage (a transaction this large takes the pack path).
MAX_RECORD = 64 << 20
#: A checkpoint folds the journal once it is this long (a reader scans it at open).
CHECKPOINT_BYTES = 512 << 10
#: Zeros a new journal is created with, so that appends inside them leave its size alone.
PREALLOCATE = 1 << 20
BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"


def boot_id() -> bytes:
    """This boot of the machine (16 bytes; zeros where the OS does not say). A journal written
    in another boot may have lost unsynced pack records and ref renames to a power cut: its
    records are then all replayed, not only the last one."""
    try:
        with open(BOOT_ID_PATH, encoding="ascii") as f:
            return bytes.fromhex(f.read().strip().replace("-", ""))[:16].ljust(16, b"\0")
    except (OSError, ValueError):
        return bytes(16)


def header_bytes(salt: bytes, boot: bytes) -> bytes:
    return HEADER.pack(MAGIC, salt, boot)


def chain_seed(header: bytes) -> bytes:
    """The checksum the first record chains to: a hash of the file header."""
    return hashlib.blake2b(header, digest_size=CHECKSUM_BYTES).digest()


def checksum(previous: bytes, record_head: bytes, payload: bytes) -> bytes:
    h = hashlib.blake2b(previous, digest_size=CHECKSUM_BYTES)
    h.update(record_head)
    h.update(payload)
    return h.digest()


def encode_record(salt: bytes, seq: int, previous: bytes, payload: bytes) -> tuple[bytes, bytes]:
    """(record bytes, its checksum): length, salt, sequence, payload, chained checksum."""
    head = RECORD.pack(len(payload), salt, seq)
    digest = checksum(previous, head, payload)
    return head + payload + digest, digest


def encode_payload(moves_journal: bytes, objects: list[tuple[str, str, bytes]]) -> bytes:
    """A record's payload: msgpack [transaction journal (JSON bytes), [[id, type, body], ...]]."""
    return msgpack.packb([moves_journal, [list(o) for o in objects]], use_bin_type=True)


def decode_payload(payload: bytes, where: str) -> tuple[bytes, list[tuple[str, str, bytes]]]:
    try:
        moves, objects = msgpack.unpackb(payload, raw=False)
        if not isinstance(moves, bytes):
            raise ValueError("the moves are not bytes")
        return moves, [(str(i), str(t), bytes(b)) for i, t, b in objects]
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise CorruptStore(f"{where}: a journal record whose checksum holds does not decode "
                           f"({exc})", path=where) from None


@dataclass(frozen=True)
class Record:
    seq: int
    offset: int
    payload: bytes


@dataclass
class Scan:
    """What a journal file holds: its valid records, where they end, and what follows them.

    `problem` is None when the file ends exactly after the last valid record; "torn" when the
    bytes after it are the start of a record cut short (a crash while writing it, or an
    interrupted write); "damaged" when a whole record is there but its salt, sequence or checksum
    is wrong (a flipped byte, or a record from an earlier journal)."""

    salt: bytes
    boot: bytes
    records: list[Record]
    end: int
    size: int
    last: bytes  # the checksum the next record chains to
    problem: str | None = None
    detail: str = ""

    @property
    def next_seq(self) -> int:
        return self.records[-1].seq + 1 if self.records else 1


def parse(data: bytes, where: str = "wal") -> Scan:
    """The valid prefix of a journal file's bytes (see Scan). A header that is not a journal's
    header is CorruptStore naming the file: nothing in it can be trusted."""
    if len(data) < HEADER.size:
        raise CorruptStore(f"{where}: {len(data)} bytes, shorter than a journal header", path=where)
    magic, salt, boot = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise CorruptStore(f"{where}: not a ctxstore write-ahead journal (magic {magic!r})",
                           path=where)
    scan = Scan(salt, boot, [], HEADER.size, len(data), chain_seed(data[:HEADER.size]))
    resume(scan, data[HEADER.size:], len(data))
    return scan


def resume(scan: Scan, data: bytes, size: int) -> None:
    """Extend `scan` with the records in `data`, the file's bytes from `scan.end` on (`size`:
    the file's size). The journal is preallocated with zeros (an fdatasync that changes no file
    size costs less), so zeros where a record header would start end the records cleanly."""
    salt, base = scan.salt, scan.end
    last, seq, off = scan.last, scan.next_seq, 0
    scan.size, scan.problem, scan.detail = size, None, ""
    while off < len(data):
        if not data[off:off + RECORD.size].strip(b"\0"):
            if not data[off:].strip(b"\0"):
                break  # preallocated space: no more records
        why = None
        if off + RECORD.size > len(data):
            why, end = f"a record header cut short at byte {base + off}", len(data)
        else:
            length, rsalt, rseq = RECORD.unpack_from(data, off)
            end = off + RECORD.size + length + CHECKSUM_BYTES
            if rsalt != salt or rseq != seq or length > MAX_RECORD:
                why = (f"the record at byte {base + off} has "
                       + ("another journal's salt" if rsalt != salt else
                          f"sequence {rseq}, expected {seq}" if rseq != seq else
                          f"length {length}"))
                end = off + RECORD.size
            elif end > len(data):
                why = f"record {seq} at byte {base + off} runs past the end of the file"
            else:
                payload = data[off + RECORD.size:end - CHECKSUM_BYTES]
                digest = checksum(last, data[off:off + RECORD.size], payload)
                if digest != data[end - CHECKSUM_BYTES:end]:
                    why = f"record {seq} at byte {base + off}: checksum mismatch"
        if why is not None:
            # damage when something follows that a cut-short write cannot explain: the next
            # record's header, or any byte that is not zero after this record's end
            follows = data.find(salt + struct.pack("<Q", seq + 1), off + RECORD.size) >= 0 or \
                bool(data[end:].strip(b"\0"))
            scan.problem = "damaged" if follows else "torn"
            scan.detail = why
            return
        scan.records.append(Record(seq, base + off, payload))
        last, off, seq = digest, end, seq + 1
        scan.end, scan.last = base + off, last


class JournalFile:
    """`.ctx/wal`, appended to under the repository's transaction lock (the caller holds it).

    The scan of the file is kept between transactions of one process: while the file is the
    same inode at the size this process left it, the next append needs no read."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._cached: tuple[int, int, Scan] | None = None  # (inode, size, scan)
        #: (salt, record count) up to which this process wrote or checked the records' reflog
        #: lines (repo/journal_apply.py): the next transaction need not look again
        self.logged: tuple[bytes, int] | None = None

    def exists(self) -> bool:
        return self.path.exists()

    def scan(self) -> Scan | None:
        """The file's scan (None if there is no journal). Kept between looks: while the file
        is the same inode with the same salt (a new file may reuse a freed inode, never the
        salt), only the bytes after the last valid record are read."""
        cached = self._cached
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            self._cached = None
            return None
        try:
            st = os.fstat(fd)
            if cached is not None and cached[0] == st.st_ino and \
                    os.pread(fd, 16, 0)[8:] == cached[2].salt and cached[2].end <= st.st_size:
                scan = cached[2]
                tail = os.pread(fd, RECORD.size, scan.end)
                if scan.problem is None and not tail.strip(b"\0"):
                    scan.size = st.st_size
                    return scan  # nothing appended since
                resume(scan, _read_all(fd, st.st_size - scan.end, scan.end), st.st_size)
            else:
                scan = parse(_read_all(fd, st.st_size, 0), str(self.path))
        finally:
            os.close(fd)
        self._cached = (st.st_ino, st.st_size, scan)
        return scan

    def create(self, *, sync: bool) -> Scan:
        """A new, empty journal with a new salt, replacing any old one: temporary file, fsync,
        rename, directory fsync. Records of the old journal can never verify in the new one
        (their salt differs)."""
        salt, boot = os.urandom(8), boot_id()
        head = header_bytes(salt, boot)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, head + bytes(PREALLOCATE))  # zeros, not fallocate: see `resume`
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        if sync:
            fsync_dir(self.path.parent)
        size = len(head) + PREALLOCATE
        scan = Scan(salt, boot, [], len(head), size, chain_seed(head))
        self._cached = (os.stat(self.path).st_ino, size, scan)
        return scan

    def discard_tail(self, scan: Scan, *, sync: bool) -> None:
        """Cut the file back to its valid prefix (before the next append): what follows is a
        torn record or damage, and a record appended after it could never be read."""
        fd = os.open(self.path, os.O_WRONLY)
        try:
            os.ftruncate(fd, scan.end)
            if sync:
                os.fsync(fd)
            ino = os.fstat(fd).st_ino
        finally:
            os.close(fd)
        scan.size, scan.problem, scan.detail = scan.end, None, ""
        self._cached = (ino, scan.end, scan)

    def append(self, scan: Scan, payload: bytes, *, sync: bool) -> Record:
        """Write one record after `scan`'s valid prefix (into the preallocated zeros, or past
        the end), then fdatasync: the commit point of a journalled transaction."""
        if scan.problem is not None:
            raise CorruptStore(f"{self.path}: append after an unchecked tail", path=str(self.path))
        seq = scan.next_seq
        data, digest = encode_record(scan.salt, seq, scan.last, payload)
        fd = os.open(self.path, os.O_WRONLY)
        try:
            done = 0
            while done < len(data):
                done += os.pwrite(fd, data[done:], scan.end + done)
            if sync:
                os.fdatasync(fd)
            st = os.fstat(fd)
        finally:
            os.close(fd)
        record = Record(seq, scan.end, payload)
        scan.records.append(record)
        scan.end += len(data)
        scan.size = st.st_size
        scan.last = digest
        self._cached = (st.st_ino, st.st_size, scan)
        return record


def _read_all(fd: int, size: int, offset: int) -> bytes:
    chunks, got = [], 0
    while True:
        chunk = os.pread(fd, max(size - got, 1 << 16), offset + got)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        got += len(chunk)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


__all__ = ["CHECKPOINT_BYTES", "JournalFile", "Record", "Scan", "boot_id", "decode_payload",
           "encode_payload", "encode_record", "parse"]
