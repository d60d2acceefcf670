"""The write-ahead journal (docs/format.md, "The write-ahead journal"): bytes, valid prefix,
commit cost, recovery, checkpoint, fsck. Crashes with real kill -9: tests/test_journal_crash.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ctxstore import Repository, codec
from ctxstore.maintenance import fsck
from ctxstore.repo import journal_apply
from ctxstore.repo.transaction_journal import Journal, Move
from ctxstore.store import journal as J

GOLDEN = Path(__file__).parent / "golden" / "journal.txt"


def _golden() -> dict[str, bytes]:
    rows = [line.split(" ", 1) for line in GOLDEN.read_text().splitlines()
            if line and not line.startswith("#")]
    return {k: bytes.fromhex(v) for k, v in rows}


def test_the_golden_vectors_are_what_the_code_writes_and_reads():
    g = _golden()
    salt, boot = bytes.fromhex("0001020304050607"), bytes.fromhex("00112233445566778899aabbccddeeff")
    head = J.header_bytes(salt, boot)
    assert head == g["header"]
    assert J.chain_seed(head) == g["seed"]
    oid, body = codec.encode_object("value", {"text": "hi"})
    j = Journal("42461960edc59b20cafe8882b66760b2285413dba28e943cee24c5b462a1b86e",
                1767225600000, "ctx", (Move("refs/sessions/s/main", None, oid,
                                            "append: 1 event(s)"),))
    payload = J.encode_payload(j.encode(), [(oid, "value", body)])
    assert payload == g["payload1"]
    rec1, c1 = J.encode_record(salt, 1, g["seed"], payload)
    assert (rec1, c1) == (g["record1"], g["checksum1"])
    rec2, c2 = J.encode_record(salt, 2, c1, J.encode_payload(j.encode(), []))
    assert (rec2, c2) == (g["record2"], g["checksum2"])
    scan = J.parse(head + rec1 + rec2)
    assert [r.seq for r in scan.records] == [1, 2] and scan.problem is None
    moves, objects = J.decode_payload(scan.records[0].payload, "golden")
    assert Journal.decode(moves) == j and objects == [(oid, "value", body)]


def _file_of(n: int) -> tuple[bytes, list[int]]:
    """A journal of n records and the offset where each ends."""
    salt = b"saltsalt"
    head = J.header_bytes(salt, bytes(16))
    data, last, ends = head, J.chain_seed(head), []
    for i in range(1, n + 1):
        rec, last = J.encode_record(salt, i, last, J.encode_payload(b"{}\n", [("x" * 64, "blob", bytes([i]) * (i * 7))]))
        data += rec
        ends.append(len(data))
    return data, ends


def test_every_torn_length_of_the_last_record_keeps_the_records_before_it():
    data, ends = _file_of(3)
    for cut in range(ends[1], ends[2]):
        scan = J.parse(data[:cut])
        assert [r.seq for r in scan.records] == [1, 2], cut
        assert scan.end == ends[1]
        assert scan.problem == (None if cut == ends[1] else "torn"), cut
    assert len(J.parse(data).records) == 3


def test_a_flipped_byte_keeps_everything_before_it_and_refuses_the_rest():
    data, ends = _file_of(5)
    for pos in range(ends[1], ends[2]):  # every byte of record 3
        bad = bytearray(data)
        bad[pos] ^= 0x40
        scan = J.parse(bytes(bad))
        assert [r.seq for r in scan.records] == [1, 2], pos
        assert scan.problem == "damaged", pos
    # a record of another journal (another salt) never verifies
    other, _ = _file_of(5)
    assert J.parse(data[:ends[1]] + other[ends[1]:].replace(b"saltsalt", b"SALTSALT")).problem \
        == "damaged"


def test_a_file_that_is_not_a_journal_is_corrupt_naming_it():
    from ctxstore.errors import CorruptStore

    with pytest.raises(CorruptStore, match="wal"):
        J.parse(b"not a journal at all, but long enough to hold a header", "wal")


# -- through a repository ------------------------------------------------------------------------

def _repo(tmp_path) -> Repository:
    repo = Repository.init(tmp_path, journal=True)
    repo.new_session("journalled")
    return repo


def _append(repo: Repository, text: str) -> str:
    with repo.transaction(message="append") as tx:
        return tx.append("UserPromptSubmitted", "user", {"text": text})


class Counter:
    def __init__(self, monkeypatch) -> None:
        self.calls: list[tuple[str, str]] = []
        for name in ("fsync", "fdatasync", "replace", "rename"):
            real = getattr(os, name)

            def wrapped(*args, _name=name, _real=real):
                target = os.readlink(f"/proc/self/fd/{args[0]}") if isinstance(args[0], int) \
                    else str(args[0])
                self.calls.append((_name, target))
                return _real(*args)
            monkeypatch.setattr(os, name, wrapped)

    def count(self, name: str, *, excluding: str = "\0") -> int:
        return sum(1 for n, t in self.calls if n == name and excluding not in t)


def test_a_small_append_costs_one_fdatasync_of_the_journal_and_no_fsync(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    _append(repo, "warm up")
    counter = Counter(monkeypatch)
    tips = [_append(repo, f"hello {i}") for i in range(20)]
    # the pack's own group-commit thread may fdatasync it meanwhile: not on the commit's path
    assert counter.count("fdatasync", excluding=".pack") == 20
    assert all(t.endswith("/wal") for n, t in counter.calls if n == "fdatasync"
               and not t.endswith(".pack"))
    assert counter.count("fsync") == 0
    assert counter.count("replace") == counter.count("rename") == 0  # refs resolve journal-first
    ref = repo.head_branch()
    assert repo.refs.read(ref) == tips[-1]
    assert not (tmp_path / ".ctx" / ref).exists()  # the files wait for the checkpoint
    assert [e.new for e in repo.refs.reflog(ref)][-20:] == tips  # reflog lines: appended now
    repo.close()
    with Repository.open(tmp_path / ".ctx") as again:  # as another process sees it
        assert again.refs.read(ref) == tips[-1]
        assert dict(again.refs.iter_refs())[ref] == tips[-1]
        assert fsck.check(again, full=True).ok
        with again.refs.transaction_lock():
            journal_apply.checkpoint(again, journal_apply.recover(again))
        assert (tmp_path / ".ctx" / ref).read_text() == tips[-1] + "\n"
        assert again.refs.read(ref) == tips[-1] and not again.journal.scan().records


def test_the_record_holds_the_objects_and_moves_of_its_transaction(tmp_path):
    repo = _repo(tmp_path)
    tip = _append(repo, "in the record")
    scan = repo.journal.scan()
    moves, objects = J.decode_payload(scan.records[-1].payload, "wal")
    journal = Journal.decode(moves)
    assert [m.new for m in journal.moves] == [tip]
    assert journal.op == repo.refs.read_op_head()
    ids = {i for i, _t, _b in objects}
    assert {tip, journal.op} <= ids
    assert all(codec.encode_object(t, codec.decode_body(t, b))[0] == i for i, t, b in objects
               if t not in codec.RAW_TYPES)
    repo.close()


def test_the_last_records_missing_reflog_lines_are_written_by_the_next_writer(tmp_path):
    """A writer killed between its record (the commit point) and its reflog lines."""
    repo = _repo(tmp_path)
    ref = repo.head_branch()
    tip = _append(repo, "acknowledged")
    repo.refs.replace_reflog(ref, repo.refs.reflog(ref)[:-1])
    repo.refs.replace_reflog("HEAD", repo.refs.reflog("HEAD")[:-1])
    repo.close()
    with Repository.open(tmp_path / ".ctx") as again:
        assert again.refs.read(ref) == tip  # visible: the record is the commit point
        after = _append(again, "next")
        assert [e.new for e in again.refs.reflog(ref)][-2:] == [tip, after]
        assert [e.new for e in again.refs.reflog("HEAD")][-2:] == [tip, after]


def test_a_new_boot_replays_every_record_and_checkpoints(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    tips = [_append(repo, f"e{i}") for i in range(5)]
    ref = repo.head_branch()
    repo.close()
    # a power cut: the reflog lost its unsynced lines
    first = J.parse((tmp_path / ".ctx" / "wal").read_bytes()).records
    assert len(first) >= 5
    log = tmp_path / ".ctx" / "logs" / ref
    log.write_bytes(b"".join(line + b"\n" for line in log.read_bytes().splitlines()[:2]))
    monkeypatch.setattr(J, "boot_id", lambda: b"\x01" * 16)
    monkeypatch.setattr(journal_apply, "boot_id", lambda: b"\x01" * 16)
    with Repository.open(tmp_path / ".ctx") as again:
        assert again.refs.read(ref) == tips[-1]
        scan = again.journal.scan()
        assert scan.records == [] and scan.boot == b"\x01" * 16  # checkpointed
        assert (tmp_path / ".ctx" / ref).read_text() == tips[-1] + "\n"
        assert [e.new for e in again.refs.reflog(ref)][-5:] == tips
        assert fsck.check(again).ok


def test_a_journal_past_the_threshold_is_checkpointed_into_a_new_salt(tmp_path, monkeypatch):
    monkeypatch.setattr(journal_apply, "CHECKPOINT_BYTES", 4096)
    repo = _repo(tmp_path)
    salts = set()
    for i in range(40):
        _append(repo, f"event {i} " + "x" * 200)
        salts.add(repo.journal.scan().salt)
    assert len(salts) > 1
    assert J.parse((tmp_path / ".ctx" / "wal").read_bytes()).end < 4096 + 2048
    ref = repo.head_branch()
    assert len(list(repo.graph.first_parents(repo.refs.read(ref)))) == 41
    repo.close()


def test_damage_in_the_middle_is_reported_by_fsck_then_set_aside(tmp_path):
    repo = _repo(tmp_path)
    tips = [_append(repo, f"e{i}") for i in range(4)]
    wal = tmp_path / ".ctx" / "wal"
    scan = repo.journal.scan()
    repo.close()
    data = bytearray(wal.read_bytes())
    data[scan.records[2].offset + 30] ^= 0xFF
    wal.write_bytes(bytes(data))
    repo = Repository(tmp_path / ".ctx", *_raw_parts(tmp_path))  # opened without recovery
    report = fsck.check(repo)
    assert [p.kind for p in report.problems] == ["journal"]
    assert "checksum mismatch" in report.problems[0].message
    repo.close()
    with Repository.open(tmp_path / ".ctx") as again:  # recovery sets the tail aside
        # records 1-2 (the session, tips[0]) are kept; 3 (damaged) and the rest are refused
        assert again.refs.read(again.head_branch()) == tips[0]
        problems = fsck.check(again).problems
        assert [p.kind for p in problems] == ["journal"]
        assert "wal-damaged-" in problems[0].message
        after = _append(again, "after")  # the next append goes after the valid prefix
        assert [r.seq for r in again.journal.scan().records] == [1, 2, 3]
        assert again.refs.read(again.head_branch()) == after
        assert [ev.payload.get("text") for _e, ev in again.graph.first_parents(after)][:2] == \
            ["after", "e0"]


def _raw_parts(tmp_path):
    from ctxstore.refs import FileRefs
    from ctxstore.store.packstore import PackStore

    return PackStore(tmp_path / ".ctx" / "objects"), FileRefs(tmp_path / ".ctx")


def test_a_torn_tail_is_cut_before_the_next_append_and_is_no_problem(tmp_path):
    repo = _repo(tmp_path)
    _append(repo, "a")
    repo.close()
    wal = tmp_path / ".ctx" / "wal"
    end = J.parse(wal.read_bytes()).end
    with open(wal, "r+b") as f:
        f.seek(end)
        f.write(b"\x99\x00\x00")  # the start of a record cut short, in the preallocated zeros
    assert J.parse(wal.read_bytes()).problem == "torn"
    with Repository.open(tmp_path / ".ctx") as again:
        assert fsck.check(again).ok
        tip = _append(again, "b")
        scan = J.parse(wal.read_bytes())
        assert scan.problem is None and scan.end == wal.stat().st_size
        assert again.refs.read(again.head_branch()) == tip


def test_a_large_transaction_takes_the_pack_path_after_a_checkpoint(tmp_path):
    repo = _repo(tmp_path)
    _append(repo, "small")
    assert repo.journal.scan().records
    with repo.transaction(message="import") as tx:
        for i in range(300):
            tx.append("ToolCallFinished", "tool", {"output": os.urandom(2048).hex(), "i": i})
    assert repo.journal.scan().records == []  # checkpointed first; the import is not journalled
    assert not (tmp_path / ".ctx" / "journal").exists()
    tip = _append(repo, "small again")
    assert len(repo.journal.scan().records) == 1
    assert repo.refs.read(repo.head_branch()) == tip
    repo.close()


def test_gc_sees_journalled_objects_and_refs(tmp_path):
    from ctxstore.maintenance.gc import gc

    repo = _repo(tmp_path)
    tips = [_append(repo, f"e{i}") for i in range(10)]
    res = gc(repo, prune="now", wait=5)
    assert res.objects_removed == 0 or all(t in repo.objects for t in tips)
    assert all(repo.objects.get(t).payload["text"] == f"e{i}" for i, t in enumerate(tips))
    assert fsck.check(repo, full=True).ok
    repo.close()


def test_a_store_written_with_the_journal_opened_without_it_reads_and_folds_it(tmp_path):
    import json

    repo = _repo(tmp_path)
    tips = [_append(repo, f"e{i}") for i in range(3)]
    ref = repo.head_branch()
    repo.close()
    cfg = tmp_path / ".ctx" / "config.json"
    cfg.write_text(json.dumps({**json.loads(cfg.read_text()), "journal": False}))
    with Repository.open(tmp_path / ".ctx") as again:
        assert not again.journal_commits
        assert again.refs.read(ref) == tips[-1]  # the records are read, not lost
        after = _append(again, "pack path")
        assert again.journal.scan().records == []  # checkpointed before the pack-path commit
        assert (tmp_path / ".ctx" / ref).read_text() == after + "\n"
        assert fsck.check(again, full=True).ok
